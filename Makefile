# kplane -- top-level entry points. The build itself is CMake (CMakeLists.txt).
#
#   make          build build/kplane (release build with debug info)
#   make run      install missing packages, build, start kplane server
#   make test     install test packages, build under ASan+UBSan, run every test
#   make bench    build, run the benchmarks (one BENCH line per case; with etcd
#                 installed, api.create.c16 also on a local etcd)
#   make fuzz     build the libFuzzer targets of fuzz/ with clang (ASan+UBSan)
#                 and run each for FUZZ_SECONDS (default 60)
#   make tsan     build the concurrency tests (store, watch cache, informer,
#                 work queue, the ReplicaSet summaries, the labs' proxy) with
#                 ThreadSanitizer and run them (`make test` runs it too)

BUILD      ?= build
TEST_BUILD ?= build-test
FUZZ_BUILD ?= build-fuzz
TSAN_BUILD ?= build-tsan
FUZZ_SECONDS ?= 60
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
DATA_DIR   ?= $(CURDIR)/.kplane

.PHONY: all deps test-deps run test tsan fuzz bench clean

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
# does not, and `make run` must never be the first to meet them. The fuzz
# targets run here on their committed corpus (ctest fuzz_*), as plain
# ASan+UBSan executables; `make fuzz` explores beyond it. Then the TSan build.
test: test-deps all
	cmake -S . -B $(TEST_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKP_SANITIZE=ON >/dev/null
	cmake --build $(TEST_BUILD) -j $(JOBS)
	cd $(TEST_BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) tsan

# ThreadSanitizer cannot share a build with ASan: its own build dir, and only
# the tests of the code that shares state between threads (and the kplane
# binary test_informer starts).
TSAN_TESTS = test_store test_cas test_watchcache test_queue test_informer test_httpd test_leader test_grpc \
             test_replicaset test_proxy
tsan: test-deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKP_TSAN=ON >/dev/null
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target kplane $(TSAN_TESTS)
	cd $(TSAN_BUILD) && ctest --output-on-failure -j $(JOBS) \
	  -R '^($(shell echo $(TSAN_TESTS) | tr ' ' '|'))$$'

fuzz: test-deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DKP_FUZZ=ON -DKP_TESTS=OFF >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz-run $(FUZZ_BUILD)

bench: all
	$(BUILD)/bench/bench_store
	bench/with-etcd.sh $(BUILD)/bench/bench_api $(BUILD)/kplane
	$(BUILD)/bench/bench_converge

clean:
	rm -rf $(BUILD) $(TEST_BUILD) $(FUZZ_BUILD) $(TSAN_BUILD)
