#!/bin/sh
# mlc against ONNX Runtime on the benchmark models (see compare.py for the options). Run from anywhere after
# `make build`; installs the ORT peer from npm on first use (../shared/bench/install-ort.sh).
exec /usr/bin/python3 "$(dirname "$0")/compare.py" "$@"
