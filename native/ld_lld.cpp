// A statically linked ld.lld for the native builds (see build.rs and
// src/replay/toolchain.rs). Debian's /usr/bin/ld.lld links libLLVM-19.so dynamically and spends
// much of each start relocating it; this one does not. A linker's start is a large part of
// linking a replay executable, which happens twice per analysis (the replay and the fuzzing
// build); LLVM's static constructors and page faults remain part of every start.
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
