# Sourced by the tests that visit a list of models. `sample` passes on the lines of its input that a run visits:
# all of them, or with MLC_TEST_SAMPLE=N every N-th (the first always). tests/CMakeLists.txt sets it for the
# sanitizer build's run, where every compile costs two to three times as much; the release run visits every model.
sample() { awk -v n="${MLC_TEST_SAMPLE:-1}" '(NR - 1) % n == 0'; }
