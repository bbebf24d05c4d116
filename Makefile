# tessera: thin wrapper around CMake. `make demo` and `make check` work on a fresh machine:
# both install missing Debian packages first (scripts/deps.sh, apt-get only for what is missing).
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure tessera demo check test asan clean

all: tessera

deps:
	@bash scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

tessera: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: tessera
	@bash scripts/demo.sh $(BUILD)/tessera

# Every test through ctest: unit suites, CLI tests, oracle comparisons.
test: tessera
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

check: test

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
