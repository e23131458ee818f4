#!/usr/bin/env python3
"""Asks KLEE whether a whole C program (main, inputs from __VERIFIER_nondet_*) calls reach_error,
within a time limit, for scripts/bench --peers.

  klee_reach.py PROGRAM.c --timeout SECS [--klee KLEE] [--clang CLANG] [--llvm-link LINK]

The program is compiled to bitcode with the flags KLEE asks for (clang -emit-llvm -c -g -O0
-Xclang -disable-O0-optnone) together with a prelude: each __VERIFIER_nondet_* returns a fresh
`klee_make_symbolic` value of its type, __VERIFIER_assume is klee_assume, and reach_error is a
failing klee_assert. The clang is the LLVM KLEE was built against (`klee --version` names it;
KLEE's master builds against Debian's llvm-19, see CONTRIBUTING.md, "Peers"), found from the KLEE
binary's prefix when not given. KLEE runs with --max-time and stops at the first assertion
failure (--exit-on-error-type=Assert), writing only tests that cover new code.

Prints one JSON object: verdict (reachable: KLEE reported the assertion in reach_error;
unreachable: KLEE finished every path, none ended early or in an error; unknown: otherwise, or
time out), seconds (KLEE's run, compiling excluded, as for apc-llvm's totals), paths (completed
and partially completed) and, when reachable, input: the nondet values of the failing test in
call order (from ktest-tool).
"""
import argparse, glob, json, os, re, shutil, signal, subprocess, tempfile, time

NONDET = [  # (C type, name)
    ("int", "__VERIFIER_nondet_int"), ("unsigned int", "__VERIFIER_nondet_uint"),
    ("char", "__VERIFIER_nondet_char"), ("unsigned char", "__VERIFIER_nondet_uchar"),
    ("short", "__VERIFIER_nondet_short"), ("unsigned short", "__VERIFIER_nondet_ushort"),
    ("long", "__VERIFIER_nondet_long"), ("unsigned long", "__VERIFIER_nondet_ulong"),
    ("_Bool", "__VERIFIER_nondet_bool"),
]
PRELUDE = (
    "void klee_make_symbolic(void *addr, unsigned long nbytes, const char *name);\n"
    "void klee_assume(unsigned long condition);\n"
    "void __assert_fail(const char *, const char *, unsigned, const char *);\n"
    + "".join(f"{t} {n}(void) {{ {t} x; klee_make_symbolic(&x, sizeof x, \"{n}\"); return x; }}\n" for t, n in NONDET)
    + "void __VERIFIER_assume(int c) { klee_assume(c != 0); }\n"
    "void reach_error(void) { __assert_fail(\"reach_error\", \"prelude.c\", 1, \"reach_error\"); }\n"
)

def tool_near(klee, name):
    """`name` from the LLVM KLEE was built with: KLEE's `--version` names the LLVM version, whose
    tools Debian installs as NAME-VERSION."""
    try:
        v = subprocess.run([klee, "--version"], capture_output=True, text=True, timeout=30).stdout
        m = re.search(r"LLVM version (\d+)", v)
        if m and shutil.which(f"{name}-{m.group(1)}"):
            return shutil.which(f"{name}-{m.group(1)}")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return shutil.which(name) or name

def nondet_values(ktest_tool, ktest):
    """The symbolic objects of a test, in creation order, as integers (little-endian)."""
    p = subprocess.run([ktest_tool, ktest], capture_output=True, text=True)
    values, name = [], None
    for line in p.stdout.splitlines():
        m = re.match(r"object\s+\d+: name: '?b?'?(.*?)'?$", line.strip())
        if m:
            name = m.group(1)
        m = re.match(r"object\s+\d+: int : (-?\d+)", line.strip())
        if m and name and name.startswith("__VERIFIER_nondet"):
            values.append(int(m.group(1)))
    return values

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("program")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--klee", default=shutil.which("klee") or "klee")
    ap.add_argument("--clang")
    ap.add_argument("--llvm-link")
    a = ap.parse_args()
    out = {"verdict": "unknown", "seconds": 0.0}
    clang = a.clang or tool_near(a.klee, "clang")
    link = a.llvm_link or tool_near(a.klee, "llvm-link")
    try:
        with tempfile.TemporaryDirectory(prefix="klee-peer-") as tmp:
            prelude = os.path.join(tmp, "prelude.c")
            open(prelude, "w").write(PRELUDE)
            flags = ["-emit-llvm", "-c", "-g", "-O0", "-Xclang", "-disable-O0-optnone", "-w", "-fno-builtin"]
            for src, bc in ((a.program, "prog.bc"), (prelude, "prelude.bc")):
                cc = subprocess.run([clang, *flags, src, "-o", os.path.join(tmp, bc)], capture_output=True, text=True)
                if cc.returncode != 0:
                    raise RuntimeError("does not compile: " + cc.stderr.strip()[:200])
            linked = os.path.join(tmp, "all.bc")
            ln = subprocess.run([link, os.path.join(tmp, "prog.bc"), os.path.join(tmp, "prelude.bc"), "-o", linked], capture_output=True, text=True)
            if ln.returncode != 0:
                raise RuntimeError("llvm-link failed: " + ln.stderr.strip()[:200])
            outdir = os.path.join(tmp, "klee-out")
            t0 = time.time()
            # KLEE's --max-time is checked between instructions: a long solver query overruns
            # it (wp_windriver: still running 60 s past it). The process group is killed 10 s
            # after the limit, and that is a time out.
            proc = subprocess.Popen(
                [a.klee, f"--max-time={max(1, round(a.timeout))}s", "--exit-on-error-type=Assert", "--only-output-states-covering-new",
                 "--dump-states-on-halt=false", "--external-calls=concrete", f"--output-dir={outdir}", linked],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
            try:
                log, _ = proc.communicate(timeout=a.timeout + 10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                log, _ = proc.communicate()
                log += "\nKLEE: HaltTimer (killed 10 s past --max-time)"
            out["seconds"] = round(time.time() - t0, 3)
            done = {k: int(v) for k, v in re.findall(r"KLEE: done: (\w[\w ]*?) = (\d+)", log)}
            out["paths"] = {"completed": done.get("completed paths", 0), "partially completed": done.get("partially completed paths", 0)}
            asserts = [e for e in glob.glob(os.path.join(outdir, "*.assert.err")) if "reach_error" in open(e).read()]
            errors = glob.glob(os.path.join(outdir, "*.err"))
            halted = "HaltTimer" in log or "halting execution" in log
            if asserts:
                out["verdict"] = "reachable"
                ktest = asserts[0].replace(".assert.err", ".ktest")
                tool = os.path.join(os.path.dirname(a.klee), "ktest-tool")
                if os.path.exists(ktest) and os.path.exists(tool):
                    out["input"] = nondet_values(tool, ktest)
            elif proc.returncode == 0 and not halted and not errors and out["paths"]["partially completed"] == 0 and "completed paths" in done:
                out["verdict"] = "unreachable"
            elif halted:
                out["error"] = "time out"
            elif errors:
                out["error"] = "paths ended in errors: " + ", ".join(sorted({os.path.basename(e).split(".", 1)[1] for e in errors}))
            else:
                out["error"] = (log.strip().splitlines() or ["no output"])[-1][:200]
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        out["error"] = str(e)
    print(json.dumps(out))

if __name__ == "__main__":
    main()
