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

# ASan+UBSan build (-DMLC_SANITIZE=ON): every ctest, as `make check` runs them, against the sanitized mlc, runner
# and runtime. The tests' environment (tests/CMakeLists.txt) makes any ASan, LeakSanitizer or UBSan report fail
# its test.
sanitize: deps
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLC_SANITIZE=ON
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ctest --output-on-failure -j $(JOBS)

# libFuzzer on the ONNX reader+importer for FUZZ_SECONDS, seeded from the test models (clang-19).
fuzz: deps
	CC=clang-19 cmake -S . -B $(BUILD)-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLC_FUZZ=ON
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target fuzz_onnx
	sh tests/fuzz/run_fuzz.sh $(BUILD)-fuzz/fuzz_onnx $(BUILD)-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)
