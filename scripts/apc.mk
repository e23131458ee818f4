# scripts/apc.mk — apc-llvm in a C project's Makefile.
#
#   APC_SOURCES := parse.c util.c      # the C files to analyse together (default: *.c here)
#   include path/to/apc-llvm/scripts/apc.mk
#
# Targets (the project's own build is not touched; bitcode goes to $(APC_DIR)):
#   make apc         analyse every target of $(APC_TARGETS), one line each
#   make apc-check   the same, failing when a verdict differs from the one recorded there;
#                    $(APC_DIR)/results/junit.xml has one JUnit testcase per target
#   make apc-sarif   analyse, and write every target's result to $(APC_DIR)/sarif/results.sarif
#                    (SARIF 2.1.0, for code-scanning uploads)
#   make apc-tests   keep a regression test per reachable target in $(APC_TESTS)/ (commit it),
#                    rebuilt from the current source and run each time: fails when a kept
#                    witness no longer reaches its target
#   make apc-clean   remove $(APC_DIR)
#
# $(APC_TARGETS) lists one target per line, `FUNCTION TARGET [EXPECTED]`, TARGET being
# `block:LABEL`, `line:FILE:N` or `call:FUNC`, EXPECTED the recorded verdict:
#
#   parse_num  line:util.c:14     reachable
#   checked    call:abort         unreachable
#
# Knobs (override on the command line or before the include): APC_LLVM (the binary), APC_CC,
# APC_LINK, APC_CFLAGS (default: the project's CPPFLAGS and CFLAGS; apc-llvm's own flags come
# last, so -O0 and -g win), APC_TIMEOUT (seconds per target), APC_ARGS (more apc-llvm options),
# APC_SHARD (K/N: this machine's share of $(APC_TARGETS); see docs/guide.md).

APC_HOME := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
APC_LLVM ?= $(shell command -v apc-llvm || echo $(APC_HOME)/target/release/apc-llvm)
APC_CC ?= $(shell command -v clang-19 || echo clang)
APC_LINK ?= $(shell command -v llvm-link-19 || echo llvm-link)
APC_SOURCES ?= $(wildcard *.c)
APC_TARGETS ?= apc-targets
APC_DIR ?= .apc
APC_TESTS ?= apc-tests
APC_TIMEOUT ?= 30
APC_ARGS ?=
APC_CFLAGS ?= $(CPPFLAGS) $(CFLAGS)
# What apc-llvm needs: debug lines (--line), IR labels (--block), code it can analyse.
APC_BCFLAGS := -g -O0 -Xclang -disable-O0-optnone -fno-discard-value-names -emit-llvm -c
APC_BC := $(APC_DIR)/program.bc
APC_SHARD ?=
APC_RUN := APC_LLVM=$(APC_LLVM) APC_TIMEOUT=$(APC_TIMEOUT) APC_ARGS="$(APC_ARGS)" APC_SHARD=$(APC_SHARD) $(APC_HOME)/scripts/apc-run

$(APC_DIR)/%.bc: %.c
	@mkdir -p $(dir $@)
	$(APC_CC) $(APC_CFLAGS) $(APC_BCFLAGS) $< -o $@

$(APC_BC): $(APC_SOURCES:%.c=$(APC_DIR)/%.bc)
	$(APC_LINK) -o $@ $^

.PHONY: apc apc-check apc-sarif apc-tests apc-clean
apc: $(APC_BC)
	@$(APC_RUN) analyse $(APC_BC) $(APC_TARGETS) $(APC_DIR)/results

apc-check: $(APC_BC)
	@$(APC_RUN) check $(APC_BC) $(APC_TARGETS) $(APC_DIR)/results

apc-sarif: $(APC_BC)
	@$(APC_RUN) sarif $(APC_BC) $(APC_TARGETS) $(APC_DIR)/sarif

apc-tests: $(APC_BC)
	@$(APC_RUN) tests $(APC_BC) $(APC_TARGETS) $(APC_TESTS)

apc-clean:
	rm -rf $(APC_DIR)
