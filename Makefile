# Entry points for people and CI. `make run` and `make test` install what is missing (Debian, as root),
# configure, build, and then run the default model or every test.
BUILD ?= build
JOBS ?= $(shell nproc)
DEBS = cmake make gcc pkg-config libprotobuf-c-dev protobuf-c-compiler llvm-19-dev libcjson-dev \
       libxgboost-dev zlib1g-dev python3 python3-numpy python3-onnx gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
       qemu-user
MODEL ?= models/cnn_small.onnx

.PHONY: all deps build run test clean

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

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
