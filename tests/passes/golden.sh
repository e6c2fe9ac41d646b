#!/bin/sh
# Golden tests of the graph passes: for each small model of make_pass_models.py, `mlc compile --dump-ir` and
# compare the dump named in the golden file's header with tests/passes/golden/NAME.txt. The first line of each
# golden file is "# RULE: ... | DUMP: file-in-the-dump-dir"; the rest is the expected text.
# usage: golden.sh MLC WORK_DIR [--update]
set -u
mlc=$1 work=$2/passes update=${3:-}
# a fixed CPU, so the printed graphs (conv weight blocks, vector widths) do not depend on the machine
target=${MLC_GOLDEN_TARGET:-"llvm -mcpu=haswell"}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 "$here/make_pass_models.py" "$work" || exit 1
fails=0
for golden in "$here"/golden/*.txt; do
  name=$(basename "$golden" .txt)
  dumpfile=$(head -1 "$golden" | sed -n 's/.*| DUMP: *//p')
  "$mlc" compile "$work/$name.onnx" --target "$target" --output "$work/$name.tar" --dump-ir "$work/$name.d" >/dev/null 2>"$work/$name.err" ||
    { echo "FAIL $name: compile failed: $(cat "$work/$name.err")"; fails=$((fails + 1)); continue; }
  got=$(ls "$work/$name.d"/$dumpfile 2>/dev/null | tail -1)
  [ -n "$got" ] || { echo "FAIL $name: no dump $dumpfile"; fails=$((fails + 1)); continue; }
  if [ "$update" = "--update" ]; then
    { head -1 "$golden"; cat "$got"; } > "$golden.new" && mv "$golden.new" "$golden"
    echo "updated $name"
  elif tail -n +2 "$golden" | diff -u - "$got" > "$work/$name.diff"; then
    echo "ok   $name: $(head -1 "$golden" | sed 's/^# RULE: //; s/ | DUMP:.*//')"
  else
    echo "FAIL $name"; cat "$work/$name.diff"; fails=$((fails + 1))
  fi
done
echo "$fails failed"
[ $fails = 0 ]
