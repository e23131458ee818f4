// lld's ELF linker called inside apc-llvm's own process (see build.rs and
// src/replay/toolchain.rs, `inprocess`).
//
// Why: every reachable verdict waits for a native link (the replay executable), and the
// portfolio links a second one (the fuzzing executable) beside it. Starting even the statically
// linked ld.lld costs 7-12 ms of CPU per link (page faults and LLVM's static constructors),
// about a third of a replay executable's link, taken from the two cores the engines share.
// This process already holds LLVM; lld's ELF driver is a library on top of it.
//
// lld runs one link at a time per process (its context is global): the caller serialises the
// calls. A fatal error inside lld ends in `exitLld`, which, outside a crash recovery context,
// ends the whole process: recovery is enabled around each link, so a fatal error (or a crash)
// returns here instead, with `can_run_again` false; the caller then runs the linker as a
// process from then on.
#include "lld/Common/Driver.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

LLD_HAS_DRIVER(elf)

extern "C" {

// Links with the arguments `argv[0..argc)` (argv[0] is the program name, as for ld.lld). Returns
// lld's exit code (0 when the output was written); `*diagnostics` gets lld's messages, stderr
// then stdout, as a NUL-terminated string the caller frees with `apc_lld_free`;
// `*can_run_again` is 0 when lld's state may be broken (no further in-process link).
int apc_lld_link(int argc, const char **argv, char **diagnostics, int *can_run_again) {
  std::vector<const char *> args(argv, argv + argc);
  std::string out, err;
  int code;
  int again;
  {
    llvm::raw_string_ostream o(out), e(err);
    llvm::CrashRecoveryContext::Enable();
    lld::Result r = lld::lldMain(args, o, e, {{lld::Gnu, &lld::elf::link}});
    llvm::CrashRecoveryContext::Disable();
    code = r.retCode;
    again = r.canRunAgain ? 1 : 0;
  }
  std::string all = err + out;
  char *text = static_cast<char *>(std::malloc(all.size() + 1));
  if (text) {
    std::memcpy(text, all.data(), all.size());
    text[all.size()] = 0;
  }
  *diagnostics = text;
  *can_run_again = again;
  return code;
}

void apc_lld_free(char *p) { std::free(p); }
}
