# apc-llvm — `make test` and `make run` work on a fresh Debian 12 machine: missing packages are
# installed first (apt; root or sudo), then cargo builds against LLVM 19 and Debian's Z3.
SHELL := /bin/bash
export LLVM_SYS_191_PREFIX ?= /usr/lib/llvm-19
export PATH := $(HOME)/.cargo/bin:$(PATH)
APT_PACKAGES := clang-19 lld-19 liblld-19-dev llvm-19-dev libpolly-19-dev libzstd-dev zlib1g-dev libz3-dev libclang-rt-19-dev csmith libcsmith-dev
# What only the tests need: headless Chromium (the HTML report), GNU parallel (the shard
# recipe of docs/guide.md), venv for the schema checks' Python packages (tests/ecosystem_tests.rs).
TEST_APT_PACKAGES := chromium parallel python3-venv
BIN := target/release/apc-llvm

.PHONY: all deps test-deps build test run bench soundness asan clean

all: build

deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

test-deps:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(TEST_APT_PACKAGES)"

build: deps
	cargo build --release

# Unit tests beside each module and integration tests in tests/ (they compile C with clang-19).
# Two test threads: each test runs apc-llvm, which races two solver threads of its own.
# Then the API docs without a warning (broken links), and a fixed-seed slice of the soundness
# campaign (under 2 minutes): fails on a wrong verdict.
test: deps test-deps
	cargo test --release -- --test-threads=2
	RUSTDOCFLAGS=-Dwarnings cargo doc --no-deps
	scripts/soundness --seed 1 --seconds 80 --jobs 2 --reduce 0

# Analyse the bundled running example of the APC paper.
run: build
	$(BIN) c-benchmarks/running_example.c --function foo --call reach_error

bench: build
	scripts/bench

# Soundness campaign: random programs (own generator and csmith) against native ground truth.
# Three jobs on two cores (each job waits on clang and native runs part of the time): on this
# kind of machine 1800 s gave 2349 generated and 639 Csmith programs, 0 wrong verdicts.
soundness: build
	scripts/soundness --seconds 1800 --timeout 3 --gen-share 0.65 --jobs 3 --gen-targets 1 --csmith-targets 1 --csmith-missed 1 --engines apc,dse

# AddressSanitizer build for the FFI memory-safety checks (prints its path):
# scripts/memcheck --mode asan, scripts/memcheck --suite, APC_LLVM_TEST_BIN (CONTRIBUTING.md).
asan: deps
	scripts/asan-build

clean:
	cargo clean
