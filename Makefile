# tessera: thin wrapper around CMake. `make demo` and `make check` work on a fresh machine:
# both install missing Debian packages first (scripts/deps.sh, apt-get only for what is missing).
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

.PHONY: all deps configure tessera demo check test asan fuzz install clean

all: tessera

deps:
	@bash scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

tessera: configure
	@cmake --build $(BUILD) -j $(JOBS)

# bin/tessera, lib/libtessera.so.MAJOR (+ .so) and libtessera.a, include/tessera.h,
# lib/pkgconfig/tessera.pc, the man page and the bash completion under $(PREFIX) (DESTDIR is
# honoured: a staged install for packaging). docs/library.md says how programs use them.
install: tessera
	@cmake --install $(BUILD) --prefix $(PREFIX)

demo: tessera
	@bash scripts/demo.sh $(BUILD)/tessera

# Every test through ctest: unit suites, CLI tests, oracle comparisons.
test: tessera
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# `make check` = the suite in the normal build, then again under sanitizers.
check: test asan

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer (with float-cast-overflow,
# which GCC leaves out of -fsanitize=undefined) + LeakSanitizer, in its own build dir,
# configured with -DTSR_CUDA=OFF and -DTSR_MPI=OFF (which also proves the CPU build needs
# neither CUDA nor MPI, and runs dist/mpi_none.c's refusal: cli_mpi_none).
# tests/CMakeLists.txt gives every test ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 (Criterion
# ignores LSan's exit code 23 in its workers, not an abort) and fails any test whose output
# holds a sanitizer report. Skipped here: label `oracle` (cli_oracle, cli_oracle_selftest), the
# slowest tests and mostly Python (numpy renders, its own self-test), while the engine renders
# the same tests/oracle/designs under ASan in test_engine (tile/thread invariance) and
# fuzz_regress_design; label `rss` (cli_memory), whose peak-RSS bound ASan's shadow memory
# breaks; label `mpi` (cli_mpi, which skips anyway without MPI): Open MPI never frees what
# MPI_Init allocates, and LeakSanitizer would report it in every rank; label `heavy` (long
# renders, waits and Python readers whose code other suites run here: tests/CMakeLists.txt
# lists them), which kept CI over its 15 minutes. Everything else runs,
# the alloc-failure and limits suites included; suites that render every example render every
# 3rd here (TSR_TEST_SAMPLE=3), and their small-tile passes take 2 threads only. A clean
# clone's `make check` took 15-16.5 min on the 2-core machine on 2026-11-27, 15 min 9 s last
# (normal suite 313 s of ctest, this half 324 s, the two builds ~270 s; docs/reliability.md §13).
asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g" -DCMAKE_C_FLAGS="-fsanitize=float-cast-overflow" \
	    -DTSR_SANITIZE=ON -DTSR_CUDA=OFF -DTSR_MPI=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -LE 'oracle|rss|mpi|heavy'

# libFuzzer targets (tests/fuzz/fuzz_*.c: design = loader + dump + engine on small designs,
# png = the image reader, frame = the framed stream's decoders, controller = the controller's
# reader), built with clang + ASan/UBSan in $(FUZZ_BUILD) and run FUZZ_SECONDS each
# (FUZZ_TARGETS="design controller" for some) from their corpus ($(FUZZ_BUILD)/corpus/NAME,
# seeded from tests/fuzz/regress/NAME, the design folders and the oracle's PNGs). Installs
# clang and libFuzzer first (scripts/deps.sh, TSR_DEPS_FUZZ). Exits
# non-zero on a finding, which is saved in $(FUZZ_BUILD)/findings/: fix it, then keep it under
# tests/fuzz/regress/NAME/, where ctest (fuzz_regress_NAME, every build, no clang needed)
# replays it. Long runs:
#   nice -n 19 make fuzz FUZZ_SECONDS=1800
fuzz:
	@TSR_DEPS_FUZZ=1 bash scripts/deps.sh
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTSR_CUDA=OFF \
	    -DTSR_FUZZ=ON -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined \
	    -fno-sanitize-recover=all -fno-omit-frame-pointer -DTSR_BLUR_NO_CLONES" >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_targets
	@bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
