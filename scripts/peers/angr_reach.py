#!/usr/bin/env python3
"""Asks angr whether a whole C program (main, inputs from __VERIFIER_nondet_*) calls
reach_error, within a time limit, for scripts/bench --peers.

  angr_reach.py PROGRAM.c --timeout SECS [--clang CLANG]

The program is compiled natively (-O0 -g) with stub definitions of the __VERIFIER_* functions
and reach_error; angr hooks each nondet function with a fresh symbolic value of its width and
explores from the entry point (libraries as angr's SimProcedures) until a state reaches
reach_error. Prints one JSON object: verdict (reachable: a state reached it; unreachable: every
path ended without; unknown: time or an error), seconds, states (active + deadended at the end),
and an input (the nondet values of the reaching state, in call order) when reachable.
"""
import argparse, json, logging, os, subprocess, sys, tempfile, time

NONDET = {  # name -> bits
    "__VERIFIER_nondet_int": 32, "__VERIFIER_nondet_uint": 32, "__VERIFIER_nondet_char": 8,
    "__VERIFIER_nondet_uchar": 8, "__VERIFIER_nondet_short": 16, "__VERIFIER_nondet_ushort": 16,
    "__VERIFIER_nondet_long": 64, "__VERIFIER_nondet_ulong": 64, "__VERIFIER_nondet_bool": 8,
}
STUBS = "".join(f"__attribute__((noinline)) long long {n}(void) {{ return 0; }}\n" for n in NONDET) + \
    "__attribute__((noinline)) void reach_error(void) { }\n" \
    "__attribute__((noinline)) void __VERIFIER_assume(int c) { if (!c) for (;;) ; }\n"

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("program")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--clang", default="clang-19")
    a = ap.parse_args()
    t0 = time.time()
    out = {"verdict": "unknown", "seconds": 0.0}
    try:
        import angr, claripy
        logging.getLogger("angr").setLevel(logging.ERROR)
        logging.getLogger("cle").setLevel(logging.ERROR)
        logging.getLogger("angr.state_plugins.unicorn_engine").setLevel(logging.CRITICAL)
        with tempfile.TemporaryDirectory(prefix="angr-peer-") as tmp:
            stubs = os.path.join(tmp, "stubs.c")
            open(stubs, "w").write(STUBS)
            exe = os.path.join(tmp, "prog")
            cc = subprocess.run([a.clang, "-O0", "-g", "-w", "-fno-builtin", "-o", exe, a.program, stubs], capture_output=True, text=True)
            if cc.returncode != 0:
                raise RuntimeError("does not compile: " + cc.stderr.strip()[:200])
            proj = angr.Project(exe, auto_load_libs=False)
            made = []

            class Nondet(angr.SimProcedure):
                def run(self, bits=32):
                    v = claripy.BVS(f"nondet{len(made)}", bits)
                    made.append(v)
                    return v.zero_extend(64 - bits) if bits < 64 else v

            for name, bits in NONDET.items():
                sym = proj.loader.find_symbol(name)
                if sym is not None:
                    proj.hook(sym.rebased_addr, Nondet(bits=bits), replace=True)
            target = proj.loader.find_symbol("reach_error")
            if target is None:
                raise RuntimeError("no reach_error in the program")
            state = proj.factory.entry_state(add_options={angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY, angr.options.ZERO_FILL_UNCONSTRAINED_REGISTERS})
            simgr = proj.factory.simulation_manager(state)
            deadline = t0 + a.timeout
            while simgr.active and not simgr.stashes.get("found") and time.time() < deadline:
                simgr.explore(find=target.rebased_addr, n=1)
            found = simgr.stashes.get("found") or []
            if found:
                s = found[0]
                vals = []
                for v in made:
                    try:
                        vals.append(s.solver.eval(v))
                    except Exception:
                        break
                out.update(verdict="reachable", input=vals)
            elif not simgr.active and not simgr.errored and time.time() < deadline:
                out["verdict"] = "unreachable"
            out["states"] = len(simgr.active) + len(simgr.deadended)
            if simgr.errored:
                out["errors"] = str(simgr.errored[0].error)[:200]
    except Exception as e:  # angr missing, a crash inside angr, ...
        out["error"] = f"{type(e).__name__}: {e}"[:300]
    out["seconds"] = round(time.time() - t0, 3)
    print(json.dumps(out))

if __name__ == "__main__":
    main()
