#!/bin/sh
# RNN / GRU / LSTM variants against a numpy reference of the ONNX spec (make_rnn_models.py): directions,
# layouts, sequence_lens, initial states, peepholes, clip, input_forget, linear_before_reset, activations with
# alpha / beta, odd sizes, batch > 1, float16 / float64, W, R and B as graph inputs. Each model is compiled twice:
# at the default opt level (HoistRnnProjection: the input product as one GEMM, the loop reads it) and at
# --opt-level 0 (the loop computes the input product itself), so both forms of the recurrent kernel are checked.
# usage: test_rnn.sh MLC BUILD_DIR
set -eu
mlc=$1 dir=$2/rnn
here=$(cd "$(dirname "$0")" && pwd)
. "$here/sample.sh"
rm -rf "$dir" && mkdir -p "$dir"
/usr/bin/python3 "$here/make_rnn_models.py" "$dir"
failed=""
while read -r m tol; do
  for o in 3 0; do
    echo "== $m (opt level $o)"
    if "$mlc" compile "$dir/$m.onnx" --target llvm --opt-level $o --output "$dir/${m}_$o.tar" &&
       "$mlc" run "$dir/${m}_$o.tar" --inputs "$dir/${m}_inputs.npz" --outputs "$dir/${m}_${o}_out.npz" &&
       /usr/bin/python3 "$here/compare_npz.py" "$dir/${m}_${o}_out.npz" "$dir/${m}_ref.npz" --tol "$tol"; then
      :
    else
      failed="$failed $m/O$o"
    fi
  done
done <<EOF
$(sample <"$dir/models.txt")
EOF
[ -z "$failed" ] || { echo "rnn: failed:$failed"; exit 1; }
echo "rnn: all passed"
