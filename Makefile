# Thin wrapper over the CMake presets. `make` builds build/pktpath; `make run` runs the
# demo; `make test` installs what is missing, builds and runs every test.
JOBS ?= $(shell nproc)
DEPS_STAMP := build/.deps-ok

.PHONY: all build run test test-asan test-tsan bench fuzz clean deps

all: build

deps:
	@scripts/install-deps

build/build.ninja: | deps
	@cmake --preset release >/dev/null

build: deps build/build.ninja
	@cmake --build build -j $(JOBS) --target pktpath

run: build
	@build/pktpath

test: deps build/build.ninja
	@cmake --build build -j $(JOBS)
	@ctest --preset release -j $(JOBS)

test-asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@ctest --preset asan -j $(JOBS)

# tsan runs the concurrency tests only, so it builds only the test programs holding one.
TSAN_TESTS := Stress|AfpacketKernel|XdpKernel
TSAN_TEST_LINE := ^(TEST|TEST_F|TEST_P|INSTANTIATE_TEST_SUITE_P)[(].*($(TSAN_TESTS))
TSAN_TARGETS = $(addprefix test_,$(shell grep -lE '$(TSAN_TEST_LINE)' tests/*/*.cc | cut -d/ -f2 | sort -u))

test-tsan: deps
	@cmake --preset tsan >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target $(TSAN_TARGETS)
	@ctest --preset tsan -j $(JOBS) -R '$(TSAN_TESTS)'

bench: deps build/build.ninja
	@cmake --build build -j $(JOBS)
	@for b in build/bench/bench_*; do [ -x "$$b" ] && "$$b"; done; true
	@build/pktpath bench micro

fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build build-fuzz -j $(JOBS)

clean:
	rm -rf build build-*
