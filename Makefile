# kplane -- top-level entry points. The build itself is CMake (CMakeLists.txt).
#
#   make          build build/kplane (release build with debug info)
#   make run      install missing packages, build, start kplane server
#   make test     install test packages, build under ASan+UBSan, run every test
#   make bench    build, run the benchmarks (one BENCH line per case; with etcd
#                 installed, api.create.c16 also on a local etcd)

BUILD      ?= build
TEST_BUILD ?= build-test
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
DATA_DIR   ?= $(CURDIR)/.kplane

.PHONY: all deps test-deps run test bench clean

all: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKP_TESTS=OFF >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

deps:
	@scripts/install-deps

test-deps:
	@scripts/install-deps --test

run: all
	$(BUILD)/kplane server --data-dir $(DATA_DIR)

# The release build too: -O2 finds warnings (-Werror) that the debug build
# does not, and `make run` must never be the first to meet them.
test: test-deps all
	cmake -S . -B $(TEST_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKP_SANITIZE=ON >/dev/null
	cmake --build $(TEST_BUILD) -j $(JOBS)
	cd $(TEST_BUILD) && ctest --output-on-failure -j $(JOBS)

bench: all
	$(BUILD)/bench/bench_store
	bench/with-etcd.sh $(BUILD)/bench/bench_api $(BUILD)/kplane
	$(BUILD)/bench/bench_converge

clean:
	rm -rf $(BUILD) $(TEST_BUILD)
