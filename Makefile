# pulse: the two commands a fresh machine needs are `make demo` and `make test`.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: setup configure build test demo clean

setup:
	bash scripts/setup.sh

configure:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Setup, build, and the whole test suite.
test: setup build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# Setup, build, and the main job; then a short evaluation suite that prints
# the comparison table (report and plots in $(BUILD_DIR)/suite-demo).
demo: setup build
	bash scripts/demo.sh $(BUILD_DIR)
	$(BUILD_DIR)/bin/pulse bench suite --quick --regimes tcp --studies none --out $(BUILD_DIR)/suite-demo

clean:
	rm -rf $(BUILD_DIR)
