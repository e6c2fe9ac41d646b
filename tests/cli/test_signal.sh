#!/bin/sh
# The signal ops end to end (DFT, STFT, windows, MelWeightMatrix): each model of make_signal_models.py is
# compiled, run and compared with its numpy reference (max error relative to the largest reference value
# under the model's tolerance). They cover what the backend node tests do not: dft_length padding and
# truncation, odd IRFFT lengths, both DFT opsets' axis forms, float16 / float64, long transforms (which keep
# the reduction: their DFT matrix is too large for the GEMM form), STFT framing with windows shorter and
# longer than the frame, other window and mel parameters and dtypes.
# usage: test_signal.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/signal
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_signal_models.py" "$dir"
while read -r m tol; do
  echo "== $m"
  "$mlc" compile "$dir/$m.onnx" --target llvm --output "$dir/$m.tar"
  "$mlc" run "$dir/$m.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_out.npz"
  /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_out.npz" "$dir/${m}_ref.npz" --tol "$tol"
done < "$dir/models.txt"
echo "signal: all passed"
