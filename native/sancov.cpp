// LLVM's coverage instrumentation for libFuzzer (`sancov-module`), with its options given to
// the pass itself (see src/replay/codegen.rs, `compile_fuzz_object`).
//
// Why not through LLVM's command-line options, as `clang -fsanitize=fuzzer-no-link` and the
// pass's textual name would have it: those are process-wide, and lld's driver, which runs in
// this process (native/lld_inprocess.cpp), resets every one of them to its default at each
// link (`cl::ResetAllOptionOccurrences`). A fuzzing object compiled after a replay link came
// out without coverage, and libFuzzer searched blind (a recursive parser's target, found in
// 0.3 M executions, was missed in 51 M).
#include "llvm-c/Types.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/Instrumentation.h"
#include "llvm/Transforms/Instrumentation/SanitizerCoverage.h"

extern "C" {

// Instruments `module` as `clang -O0 -fsanitize=fuzzer-no-link` does: edges and indirect calls,
// comparison tracing, inline 8-bit counters, the PC table, stack depth.
void apc_sancov_module(LLVMModuleRef module) {
  llvm::Module &m = *llvm::unwrap(module);
  llvm::SanitizerCoverageOptions options;
  options.CoverageType = llvm::SanitizerCoverageOptions::SCK_Edge;
  options.IndirectCalls = true;
  options.TraceCmp = true;
  options.Inline8bitCounters = true;
  options.PCTable = true;
  options.StackDepth = true;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::SanitizerCoveragePass(options));
  mpm.run(m, mam);
}
}
