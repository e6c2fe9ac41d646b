#!/usr/bin/env python3
"""Writes absurd ONNX models for test_absurd.sh, encoding the protobuf by hand (no onnx package needed, and
fast enough for a million nodes): dims whose product overflows, negative and zero dims, raw_data shorter than
the shape, 10^6 nodes, If nested thousands deep, external data escaping the model's folder.
usage: make_absurd_models.py OUT_DIR [--nodes N] [--depth D]"""
import os
import struct
import sys


def varint(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint((field << 3) | wire)


def f_int(field, v):
    return key(field, 0) + varint(v)


def f_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return key(field, 2) + varint(len(b)) + b


FLOAT = 1


def value_info(name, dims, elem=FLOAT):
    shape = b"".join(f_bytes(1, f_int(1, d)) for d in dims)
    tensor_type = f_int(1, elem) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))


def tensor(name, dims, raw=None, elem=FLOAT, external=None):
    t = b"".join(f_int(1, d) for d in dims) + f_int(2, elem) + f_bytes(8, name)
    if raw is not None:
        t += f_bytes(9, raw)
    if external is not None:
        for k, v in external.items():
            t += f_bytes(13, f_bytes(1, k) + f_bytes(2, v))
        t += f_int(14, 1)
    return t


def node(op, inputs, outputs, name="", attrs=b""):
    n = b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs)
    if name:
        n += f_bytes(3, name)
    return n + f_bytes(4, op) + attrs


def graph(nodes, inputs=(), outputs=(), inits=(), name="g"):
    g = bytearray()
    for n in nodes:
        g += f_bytes(1, n)
    g += f_bytes(2, name)
    for t in inits:
        g += f_bytes(5, t)
    for i in inputs:
        g += f_bytes(11, i)
    for o in outputs:
        g += f_bytes(12, o)
    return bytes(g)


def model(g, opset=13):
    return f_int(1, 8) + f_bytes(7, g) + f_bytes(8, f_bytes(1, "") + f_int(2, opset))


def write(out, name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def main():
    out = sys.argv[1]
    nodes = 1000000
    depth = 5000
    args = sys.argv[2:]
    if "--nodes" in args:
        nodes = int(args[args.index("--nodes") + 1])
    if "--depth" in args:
        depth = int(args[args.index("--depth") + 1])
    os.makedirs(out, exist_ok=True)
    x = value_info("x", [1, 4])
    y = value_info("y", [1, 4])
    add = node("Add", ["x", "w"], ["y"], "adder")
    # an initializer whose element count overflows int64 (2^40 cubed), with a few bytes of data
    write(out, "overflow_init.onnx", model(graph([add], [x], [y], [tensor("w", [1 << 40, 1 << 40, 1 << 40], b"\0" * 16)])))
    # an input whose dims multiply past int64
    big = value_info("x", [1 << 62, 1 << 62, 4])
    write(out, "overflow_input.onnx", model(graph([node("Relu", ["x"], ["y"])], [big], [value_info("y", [1 << 62, 1 << 62, 4])])))
    # negative dims, on an initializer and on an input
    write(out, "negative_init.onnx", model(graph([add], [x], [y], [tensor("w", [-1, 4], b"\0" * 16)])))
    write(out, "negative_input.onnx", model(graph([node("Relu", ["x"], ["y"])], [value_info("x", [-5, 4])], [y])))
    # zero dims: a valid empty tensor; the importer must not divide by it or read data for it
    write(out, "zero_dims.onnx", model(graph([node("Relu", ["x"], ["y"])], [value_info("x", [0, 4])], [value_info("y", [0, 4])])))
    # raw_data shorter than the shape
    write(out, "short_raw.onnx", model(graph([add], [x], [y], [tensor("w", [1, 4], b"\0" * 7)])))
    # external data escaping the model's folder: relative and absolute
    write(out, "escape_rel.onnx", model(graph([add], [x], [y], [tensor("w", [1, 4], external={"location": "../../../../etc/passwd"})])))
    write(out, "escape_abs.onnx", model(graph([add], [x], [y], [tensor("w", [1, 4], external={"location": "/etc/passwd"})])))
    # a chain of `nodes` Relu nodes
    chain = [node("Relu", ["x" if i == 0 else "t%d" % (i - 1)], ["y" if i == nodes - 1 else "t%d" % i]) for i in range(nodes)]
    write(out, "many_nodes.onnx", model(graph(chain, [x], [y])))
    # If nested `depth` deep through then_branch (else_branch is a leaf), each level returning the next one's output
    cond = value_info("c", [], elem=9)
    inner = leaf = graph([node("Identity", ["x"], ["z0"])], [], [value_info("z0", [1, 4])], name="leaf")
    for level in range(1, depth + 1):
        attr_then = f_bytes(1, "then_branch") + f_int(20, 5) + f_bytes(6, inner)
        attr_else = f_bytes(1, "else_branch") + f_int(20, 5) + f_bytes(6, leaf)
        out_name = "z%d" % level
        inner = graph([node("If", ["c"], [out_name], "if%d" % level, f_bytes(5, attr_then) + f_bytes(5, attr_else))],
                      [], [value_info(out_name, [1, 4])], name="g%d" % level)
    top = graph([node("If", ["c"], ["y"], "top", f_bytes(5, f_bytes(1, "then_branch") + f_int(20, 5) + f_bytes(6, inner)) +
                      f_bytes(5, f_bytes(1, "else_branch") + f_int(20, 5) + f_bytes(6, leaf)))], [cond, x], [y])
    write(out, "nested_if.onnx", model(top))


if __name__ == "__main__":
    main()
