// A statically linked ld.lld for the native builds (see build.rs and
// src/replay/toolchain.rs). Debian's /usr/bin/ld.lld links libLLVM-19.so dynamically and spends
// 10-30 ms of each start relocating it; this one starts in 5-12 ms of CPU (session 38's
// measurement: page faults and LLVM's static constructors), a third of linking a replay
// executable, and comes twice per analysis (the replay and the fuzzing build).
// The same lld 19 library: the link itself is the same.
#include "lld/Common/Driver.h"
#include "llvm/Support/raw_ostream.h"

LLD_HAS_DRIVER(elf)

int main(int argc, const char **argv) {
  // lld picks its flavour from argv[0]; this file is always the ELF linker.
  std::vector<const char *> args(argv, argv + argc);
  args[0] = "ld.lld";
  lld::Result r = lld::lldMain(args, llvm::outs(), llvm::errs(), {{lld::Gnu, &lld::elf::link}});
  return r.retCode;
}
