# Entry points for people and CI. `make run` and `make test` install what is missing (Debian, as root),
# configure, build, and then run the default model or every test.
BUILD ?= build
JOBS ?= $(shell nproc)
DEBS = cmake make gcc pkg-config libprotobuf-c-dev protobuf-c-compiler llvm-19-dev libcjson-dev \
       libxgboost-dev zlib1g-dev python3 python3-numpy python3-onnx clang-19 libclang-rt-19-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
       qemu-user
MODEL ?= models/cnn_small.onnx

FUZZ_SECONDS ?= 60

.PHONY: all deps build run test check sanitize fuzz clean

all: build

deps:
	@./scripts/install-deps.sh $(DEBS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/mlc load $(MODEL)
	$(BUILD)/mlc compile $(MODEL) --target llvm --output $(BUILD)/default_model.tar
	$(BUILD)/mlc run $(BUILD)/default_model.tar --print-time --repeat 10 --print-top 5

# `make test` is the CI entry (.ci/run): every ctest, then the sanitizer build and a bounded fuzzing run.
# `make check` runs the ctests alone.
test: check sanitize fuzz

check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# ASan+UBSan build: the unit tests, the CLI's bad/absurd-input tests and every 10th core conformance test.
sanitize: deps
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLC_SANITIZE=ON
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j $(JOBS) \
	  -R '^unit\.|^cli\.bad_input$$|^cli\.json$$|^fuzz\.'
	awk 'NR % 10 == 1' ../shared/onnx-tests/tiers/core.txt | grep -Fx -f tests/onnx/expected_pass.txt \
	  > $(BUILD)-asan/sanitize_tier.txt
	ASAN_OPTIONS=detect_leaks=0 $(BUILD)-asan/mlc-conformance --expected $(BUILD)-asan/sanitize_tier.txt -j $(JOBS)

# libFuzzer on the ONNX reader+importer for FUZZ_SECONDS, seeded from the test models (clang-19).
fuzz: deps
	CC=clang-19 cmake -S . -B $(BUILD)-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLC_FUZZ=ON
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target fuzz_onnx
	sh tests/fuzz/run_fuzz.sh $(BUILD)-fuzz/fuzz_onnx $(BUILD)-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)
