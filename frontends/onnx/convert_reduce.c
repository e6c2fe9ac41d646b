/* ONNX converters of the reduce family (see families.def): each maps an ONNX node onto graph ops of src/topi. */
#include "frontends/onnx/onnx.h"

const OnnxConverter onnx_ops_reduce[] = {
    {0},
};
