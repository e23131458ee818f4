//! The generated libFuzzer driver: `LLVMFuzzerTestOneInput` decodes the fuzzer's bytes as
//! [`super::input`] describes and calls the function under test exactly as the replay driver
//! does (same prototype, same parameter passing, same `argv` for `main`).
//!
//! What differs from replay, and why:
//! * **The target marker traps** (`__builtin_trap`): a deadly signal is libFuzzer's crash, so it
//!   stops and writes the input to its artifact prefix.
//! * **Leaving early is not a crash.** `exit`, `abort`, `__assert_fail` (the program's own calls:
//!   [`Redirect::Leave`], renamed in its object file) and a failed `__VERIFIER_assume` jump back
//!   into `LLVMFuzzerTestOneInput`, which returns: libFuzzer would otherwise stop at every
//!   `exit(0)` as "fuzz target exited".
//! * **Globals are reset** before each input: the program's `.data`/`.bss` sections are renamed
//!   in its object file so that the linker brackets them (`__start_`/`__stop_`); a copy taken in
//!   `LLVMFuzzerInitialize` is restored before every run. Each input then starts from the state a
//!   fresh process has (up to libc's own state and the heap), as its replay will.
//! * **Faults and hangs of the program are not crashes either**: `SIGSEGV`, `SIGBUS`, `SIGFPE`
//!   and `SIGABRT` (handled on an alternate stack, so stack overflows too), a work budget (the
//!   program's object calls [`WORK_TICK`] at every function entry and loop iteration, see
//!   `replay::codegen::insert_work_ticks`; past `WORK_TICKS` the input is abandoned, at the
//!   same point on any machine under any load) and, behind it, a CPU-time tick (`ITIMER_VIRTUAL`,
//!   no system call per input) that abandons an input running for about a quarter second
//!   (`HANG_TICKS`: loops the budget does not see, inside the C library) jump back the same
//!   way, and the input is rejected (`-1`:
//!   kept out of the corpus, so mutations do not keep returning to it). libFuzzer is told to leave those signals alone
//!   ([`OWN_SIGNALS`]); otherwise every such input would stop it, and its compare tracing leads
//!   it straight back to the same crash after each restart. (A fault inside libc may leave a
//!   lock held: then libFuzzer's own `-timeout` ends the process, and the engine restarts it.)
//! * **Reads past the buffers fault.** The buffers lie slot after slot between two pages made
//!   inaccessible at start-up: a program reading past them is abandoned instead of reading the
//!   driver's own counters (CPU ticks among them), so an input covers the same on every run.
//! * **String compares feed libFuzzer.** Static binaries cannot use libFuzzer's interceptors
//!   (they look the real functions up with `dlsym`), so the program's `strcmp`, `memcmp`, ... are
//!   renamed to plain C versions here ([`Redirect::Compare`]) that report each compare to
//!   libFuzzer's `__sanitizer_weak_hook_*`: its table of recent compares then splices the
//!   expected bytes into inputs.
//! * `--apc-trace` (a flag libFuzzer ignores, `--` prefix) makes each nondet call write its size
//!   (`'1'`..`'8'`) and the marker `'H'` on fd 3: how the Rust side learns the call sizes of an
//!   input ([`super::input::InputLayout::decode`]).
//! * **A hit brings its trace.** Without the flag, the sizes of the current input's calls are
//!   kept in memory, and a target hit writes them and `'H'` on fd 3 before it traps: the input
//!   libFuzzer then saves as its crash decodes without a second run of the fuzzer (whose
//!   start-up, libFuzzer's tables, cost about 25 ms).

use super::input::{nondet_size, InputLayout, ParamSlot, BUFFER_SLACK, MAX_BUFFERS, MAX_BUFFER_DATA, NULL_LENGTH, MAX_SLOTS, MAX_TRACED_CALLS};
use crate::witness::MAX_POINTEE_DEPTH;
use crate::ir::{ParamExt, Ty};
use crate::load::TARGET_MARKER;
use crate::replay::driver::{DriverSpec, Passing};
use crate::symex::nondet_c_type;
use std::fmt::Write;

/// Where the driver reads the buffer shapes (inside the sandbox's root).
pub const SHAPE_PATH: &str = "/shape";
/// The flag that turns on the call trace on fd 3.
pub const TRACE_FLAG: &str = "--apc-trace";
/// Prefix of the names the program's redirected calls get.
const REDIRECT_PREFIX: &str = "apc_fuzz_";
/// Period of the CPU-time tick that abandons hanging inputs (microseconds).
const TICK_USEC: u64 = 10_000;
/// Ticks an input may run at first: one using more than about a quarter second of CPU is
/// abandoned. Replay allows 5 s, but random inputs often ask for billions of loop iterations (a
/// bound taken from the input), and every such input costs the fuzzer this much; inputs an APC
/// model shapes run their loops as often as the model says, typically milliseconds. When
/// abandoned inputs take over a quarter of the CPU, the driver halves the limit (down to 20 ms).
const HANG_TICKS: u64 = 25;
/// The function the fuzzing object calls at every function entry and loop iteration (see
/// `replay::codegen::insert_work_ticks`), defined by the driver.
pub const WORK_TICK: &str = "apc_work_tick";
/// Work ticks an input may make at first: past them it is abandoned as a hang, at the same
/// point on every run and under any load (the CPU-time tick, sampled, cut the same input at
/// another point from one run to the next, and libFuzzer went down another path: beside two
/// busy loops, a target reached in 6,195 inputs alone was missed within 15 s). About 30-100 ms
/// of an instrumented loop; the CPU-time tick stays, past it, for what does not tick (a loop
/// inside the C library, a program compiled by clang when the in-process code generation
/// failed). When abandoned inputs take over a quarter of all the work, the limit halves, down
/// to a sixteenth.
const WORK_TICKS: u64 = 1 << 20;
/// libFuzzer's signals the driver handles itself (`-handle_<name>=0`): a fault of the program
/// ends its input, not the fuzzer. `SIGILL` stays libFuzzer's: the marker's trap.
pub const OWN_SIGNALS: &[&str] = &["segv", "bus", "fpe", "abrt"];
/// Most shape words the driver reads.
const SHAPE_MAX_WORDS: usize = 4096;

/// The program's data sections, renamed so that the driver can restore them before each input.
pub const DATA_SECTIONS: &[(&str, &str)] =
    &[(".data", "apc_g_data"), (".bss", "apc_g_bss"), (".data.rel.local", "apc_g_drl"), (".data.rel", "apc_g_dr")];

/// A library function whose calls from the program go to the driver instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redirect {
    /// Ends the run: becomes a jump back to `LLVMFuzzerTestOneInput`.
    Leave,
    /// A compare: computed here and reported to libFuzzer.
    Compare,
}

/// Functions redirected when the program declares (and does not define) them, with the C
/// definition of their replacement (`NAME` stands for the replacement's name).
const REDIRECTS: &[(&str, Redirect, &str)] = &[
    ("exit", Redirect::Leave, "void NAME(int code) { apc_leave(code); }"),
    ("_exit", Redirect::Leave, "void NAME(int code) { apc_leave(code); }"),
    ("_Exit", Redirect::Leave, "void NAME(int code) { apc_leave(code); }"),
    ("quick_exit", Redirect::Leave, "void NAME(int code) { apc_leave(code); }"),
    ("abort", Redirect::Leave, "void NAME(void) { apc_leave(134); }"),
    (
        "__assert_fail",
        Redirect::Leave,
        "void NAME(const char *a, const char *f, unsigned l, const char *fn) { (void)a; (void)f; (void)l; (void)fn; apc_leave(134); }",
    ),
    (
        "strcmp",
        Redirect::Compare,
        "int NAME(const char *a, const char *b) {\n  apc_size_t k = 0; while (a[k] && a[k] == b[k]) k++;\n  int r = (unsigned char)a[k] - (unsigned char)b[k];\n  __sanitizer_weak_hook_strcmp(__builtin_return_address(0), a, b, r); return r;\n}",
    ),
    (
        "strncmp",
        Redirect::Compare,
        "int NAME(const char *a, const char *b, apc_size_t n) {\n  apc_size_t k = 0; int r = 0;\n  while (k < n && a[k] && a[k] == b[k]) k++;\n  if (k < n) r = (unsigned char)a[k] - (unsigned char)b[k];\n  __sanitizer_weak_hook_strncmp(__builtin_return_address(0), a, b, n, r); return r;\n}",
    ),
    (
        "strcasecmp",
        Redirect::Compare,
        "int NAME(const char *a, const char *b) {\n  apc_size_t k = 0; while (a[k] && apc_lower(a[k]) == apc_lower(b[k])) k++;\n  int r = apc_lower(a[k]) - apc_lower(b[k]);\n  __sanitizer_weak_hook_strcasecmp(__builtin_return_address(0), a, b, r); return r;\n}",
    ),
    (
        "strncasecmp",
        Redirect::Compare,
        "int NAME(const char *a, const char *b, apc_size_t n) {\n  apc_size_t k = 0; int r = 0;\n  while (k < n && a[k] && apc_lower(a[k]) == apc_lower(b[k])) k++;\n  if (k < n) r = apc_lower(a[k]) - apc_lower(b[k]);\n  __sanitizer_weak_hook_strncasecmp(__builtin_return_address(0), a, b, n, r); return r;\n}",
    ),
    (
        "memcmp",
        Redirect::Compare,
        "int NAME(const void *pa, const void *pb, apc_size_t n) {\n  const unsigned char *a = pa, *b = pb; apc_size_t k = 0; int r = 0;\n  while (k < n && a[k] == b[k]) k++;\n  if (k < n) r = a[k] - b[k];\n  __sanitizer_weak_hook_memcmp(__builtin_return_address(0), pa, pb, n, r); return r;\n}",
    ),
    (
        "bcmp",
        Redirect::Compare,
        "int NAME(const void *pa, const void *pb, apc_size_t n) {\n  const unsigned char *a = pa, *b = pb; apc_size_t k = 0; int r = 0;\n  while (k < n && a[k] == b[k]) k++;\n  if (k < n) r = a[k] - b[k];\n  __sanitizer_weak_hook_memcmp(__builtin_return_address(0), pa, pb, n, r); return r;\n}",
    ),
    (
        "strstr",
        Redirect::Compare,
        "char *NAME(const char *h, const char *n) {\n  char *r = 0;\n  for (apc_size_t i = 0;; i++) { apc_size_t k = 0; while (n[k] && h[i + k] == n[k]) k++; if (!n[k]) { r = (char *)h + i; break; } if (!h[i]) break; }\n  __sanitizer_weak_hook_strstr(__builtin_return_address(0), h, n, r); return r;\n}",
    ),
];

/// The functions of the program (declared, not defined: `declared`) whose calls are redirected,
/// and the names they get.
pub fn redirects(declared: &[String]) -> Vec<(String, String, Redirect)> {
    REDIRECTS
        .iter()
        .filter(|(name, _, _)| declared.iter().any(|d| d == name))
        .map(|(name, kind, _)| (name.to_string(), format!("{REDIRECT_PREFIX}{name}"), *kind))
        .collect()
}

/// The C expression passing integer parameter `k` (decoded into `apc_pK`) as the replay driver
/// passes it: narrow ones extended to 32 bits as the callee's ABI attribute says.
fn passed_int_c(k: usize, width: u32, ext: ParamExt, passing: Passing) -> String {
    let v = format!("apc_p{k}");
    match passing {
        Passing::U32 if width < 32 && ext == ParamExt::Sign => {
            format!("(unsigned int)(int)((long long)({v} << {}) >> {})", 64 - width, 64 - width)
        }
        Passing::U32 if width < 32 => format!("(unsigned int)({v} & {}ull)", (1u64 << width) - 1),
        Passing::U32 => format!("(unsigned int){v}"),
        _ if width < 64 => format!("({v} & {}ull)", (1u64 << width) - 1),
        _ => v,
    }
}

/// Generates the fuzz driver's C source.
pub fn generate(spec: &DriverSpec, layout: &InputLayout) -> String {
    let f = spec.function;
    let mut out = String::new();
    let _ = writeln!(out, "/* apc-llvm fuzz driver for {}() — targets: {} */", f.name, spec.targets.join(", "));
    let _ = writeln!(out, "/* libFuzzer's bytes -> the inputs replay uses (src/fuzz/input.rs); a target hit traps. */");
    // No headers: the program's own names must not clash with library declarations.
    out.push_str("typedef unsigned long apc_size_t;\n");
    out.push_str(
        "void __sanitizer_weak_hook_strcmp(void *, const char *, const char *, int);\n\
         void __sanitizer_weak_hook_strncmp(void *, const char *, const char *, apc_size_t, int);\n\
         void __sanitizer_weak_hook_strcasecmp(void *, const char *, const char *, int);\n\
         void __sanitizer_weak_hook_strncasecmp(void *, const char *, const char *, apc_size_t, int);\n\
         void __sanitizer_weak_hook_memcmp(void *, const void *, const void *, apc_size_t, int);\n\
         void __sanitizer_weak_hook_strstr(void *, const char *, const char *, char *);\n\
         void *malloc(apc_size_t);\n",
    );
    out.push_str(
        "static long apc_sys(long n, long a, long b, long c) {\n  long r;\n  __asm__ volatile(\"syscall\" : \"=a\"(r) : \"a\"(n), \"D\"(a), \"S\"(b), \"d\"(c) : \"rcx\", \"r11\", \"memory\");\n  return r;\n}\n",
    );
    let _ = writeln!(
        out,
        "#define APC_SLACK {BUFFER_SLACK}\n#define APC_NULL_LENGTH {NULL_LENGTH}\n#define APC_NFUNCTIONS {nfunctions}ul\n#define APC_MAX_DATA {MAX_BUFFER_DATA}\n#define APC_MAX_BUFFERS {MAX_BUFFERS}\n#define APC_MAX_DEPTH {MAX_POINTEE_DEPTH}\n#define APC_MAX_SLOTS {MAX_SLOTS}\n#define APC_SHAPE_MAX {SHAPE_MAX_WORDS}\n#define APC_TICK_USEC {TICK_USEC}\n#define APC_HANG_TICKS {HANG_TICKS}\n#define APC_MAX_CALLS {MAX_TRACED_CALLS}\n#define APC_WORK_TICKS {WORK_TICKS}ULL\n#define APC_BUF_BYTES (((APC_MAX_DATA + APC_SLACK) + 15) & ~15)",
        nfunctions = spec.functions.len()
    );
    // Only the signal API: declarations, nothing the program could define.
    out.push_str("#include <signal.h>\n#include <sys/time.h>\n");
    out.push_str(
        r#"static const unsigned char *apc_data;
static apc_size_t apc_size, apc_at;
static int apc_tracing;
static volatile int apc_in_run, apc_reject;
static void *apc_jmp[5];
/* The buffers, slot after slot, between two pages made inaccessible at start-up: a read past
   the last slot (or well before the first) faults, and the input is abandoned, instead of
   reading the driver's own counters beside the arena, some of them CPU time, which made the
   same input cover differently from one run to the next. */
#define APC_PAGE 4096UL
#define APC_ARENA_BYTES ((APC_MAX_BUFFERS + 1) * APC_BUF_BYTES)
#define APC_ARENA_SPAN ((APC_ARENA_BYTES + APC_PAGE - 1) & ~(APC_PAGE - 1))
static unsigned char apc_arena_pages[APC_PAGE + APC_ARENA_SPAN + APC_PAGE] __attribute__((aligned(4096)));
#define APC_SLOT(k) (apc_arena_pages + APC_PAGE + (APC_ARENA_SPAN - APC_ARENA_BYTES) + (k) * APC_BUF_BYTES)
static apc_size_t apc_nbuf;
static unsigned long long apc_shape[APC_SHAPE_MAX];
static apc_size_t apc_shape_len, apc_shape_at;

static int apc_lower(int c) { c = (unsigned char)c; return c >= 'A' && c <= 'Z' ? c + 32 : c; }
static unsigned long long apc_take(int n) {
  unsigned long long v = 0;
  for (int k = 0; k < n; k++) { unsigned long long b = apc_at < apc_size ? apc_data[apc_at] : 0; apc_at++; v |= b << (8 * k); }
  return v;
}
/* The current input's call sizes (without --apc-trace), written out at a hit. */
static char apc_calls[APC_MAX_CALLS];
static apc_size_t apc_ncalls;
static void apc_note(char c) {
  if (apc_tracing) apc_sys(1, 3, (long)&c, 1);
  else if (apc_ncalls < APC_MAX_CALLS) apc_calls[apc_ncalls++] = c;
}
static void apc_write_all(const char *p, apc_size_t n) {
  while (n > 0) { long w = apc_sys(1, 3, (long)p, (long)n); if (w == -4) continue; if (w <= 0) return; p += w; n -= (apc_size_t)w; }
}
/* Ends the current input: back into LLVMFuzzerTestOneInput (outside a run: the process). */
static void apc_leave(int code) {
  if (apc_in_run) __builtin_longjmp(apc_jmp, 1);
  for (;;) apc_sys(231, code, 0, 0);
}
/* A fault of the program ends its input, not the fuzzer; outside a run it is fatal as usual. */
static void apc_on_fault(int sig) {
  if (apc_in_run) { apc_reject = 1; __builtin_longjmp(apc_jmp, 1); }
  signal(sig, SIG_DFL);
  raise(sig);
}
/* CPU-time ticks: an input still running after apc_limit of them is abandoned. When abandoned
   inputs take more than a quarter of all CPU time, the limit halves (down to 2 ticks). */
static volatile unsigned long apc_run_id, apc_seen_id, apc_ticks, apc_all_ticks, apc_hang_ticks;
static volatile unsigned long apc_limit = APC_HANG_TICKS;
static void apc_on_tick(int sig) {
  (void)sig;
  apc_all_ticks++;
  if (!apc_in_run) return;
  if (apc_seen_id != apc_run_id) { apc_seen_id = apc_run_id; apc_ticks = 0; return; }
  if (++apc_ticks >= apc_limit) {
    apc_hang_ticks += apc_ticks;
    if (apc_hang_ticks * 4 > apc_all_ticks && apc_limit > 2) apc_limit /= 2;
    apc_reject = 1;
    __builtin_longjmp(apc_jmp, 1);
  }
}
/* Work ticks (the program calls apc_work_tick at every function entry and loop iteration): an
   input past apc_work_limit of them is abandoned. When abandoned inputs did more than a quarter
   of all the work, the limit halves (down to a sixteenth). */
static unsigned long long apc_work_left, apc_work_limit = APC_WORK_TICKS, apc_work_all, apc_work_hung;
void apc_work_tick(void) {
  if (!apc_in_run) return;
  if (apc_work_left) { apc_work_left--; return; }
  apc_work_hung += apc_work_limit;
  if (apc_work_hung * 4 > apc_work_all + apc_work_limit && apc_work_limit > APC_WORK_TICKS / 16) apc_work_limit /= 2;
  apc_reject = 1;
  __builtin_longjmp(apc_jmp, 1);
}
static void apc_handle(int sig, void (*h)(int)) {
  struct sigaction sa;
  __builtin_memset(&sa, 0, sizeof sa);
  sa.sa_handler = h;
  /* NODEFER: the jump out of the handler leaves the signal unblocked; ONSTACK: stack overflows. */
  sa.sa_flags = SA_NODEFER | SA_ONSTACK;
  sigaction(sig, &sa, 0);
}
static void apc_install_handlers(void) {
  apc_sys(10, (long)apc_arena_pages, (long)APC_PAGE, 0);
  apc_sys(10, (long)(apc_arena_pages + APC_PAGE + APC_ARENA_SPAN), (long)APC_PAGE, 0);
  static char alt[1 << 16] __attribute__((aligned(16)));
  stack_t ss;
  ss.ss_sp = alt; ss.ss_size = sizeof alt; ss.ss_flags = 0;
  sigaltstack(&ss, 0);
  apc_handle(SIGSEGV, apc_on_fault); apc_handle(SIGBUS, apc_on_fault);
  apc_handle(SIGFPE, apc_on_fault); apc_handle(SIGABRT, apc_on_fault);
  apc_handle(SIGVTALRM, apc_on_tick);
  struct itimerval tick;
  tick.it_interval.tv_sec = 0; tick.it_interval.tv_usec = APC_TICK_USEC;
  tick.it_value = tick.it_interval;
  setitimer(ITIMER_VIRTUAL, &tick, 0);
}
extern void *const __apc_function_table[] __attribute__((weak));
static void *apc_function_at(unsigned long long k) { return __apc_function_table && APC_NFUNCTIONS ? __apc_function_table[k % APC_NFUNCTIONS] : (void *)0; }
static unsigned long long apc_shape_word(void) { return apc_shape_at < apc_shape_len ? apc_shape[apc_shape_at++] : 0; }
/* A pointer: length byte, data, zero slack, then the pointees its shape lists. The largest
   length bytes (unless plain: argv's strings) make it NULL or a function of the program's
   table instead; its pointees are read all the same. */
static unsigned char *apc_buffer(int depth, int plain) {
  unsigned char *b = APC_SLOT(apc_nbuf < APC_MAX_BUFFERS ? apc_nbuf++ : APC_MAX_BUFFERS);
  apc_size_t len = (apc_size_t)apc_take(1);
  int is_buffer = 1;
  void *instead = 0;
  if (len > APC_MAX_DATA) {
    if (!plain) {
      is_buffer = 0;
      if (len != APC_NULL_LENGTH) instead = apc_function_at(apc_take(1));
    }
    len = plain ? APC_MAX_DATA : 0;
  }
  for (apc_size_t k = 0; k < APC_BUF_BYTES; k++) b[k] = 0;
  for (apc_size_t k = 0; k < len; k++) b[k] = (unsigned char)apc_take(1);
  unsigned long long n = depth < APC_MAX_DEPTH ? apc_shape_word() : 0;
  for (unsigned long long s = 0; s < n && s < APC_MAX_SLOTS; s++) {
    unsigned long long off = apc_shape_word();
    unsigned char *child = apc_buffer(depth + 1, 0);
    if (off + 8 <= len + APC_SLACK) *(void **)(b + off) = child;
  }
  return is_buffer ? b : (unsigned char *)instead;
}
"#,
    );
    // Out of the run first: a CPU tick must not abandon the input while its trace is written.
    let _ = writeln!(
        out,
        "void {TARGET_MARKER}(int id) {{\n  (void)id;\n  apc_in_run = 0;\n  if (!apc_tracing) apc_write_all(apc_calls, apc_ncalls);\n  apc_write_all(\"H\", 1);\n  __builtin_trap();\n}}"
    );
    for name in spec.declared {
        if let Some(suffix) = name.strip_prefix("__VERIFIER_nondet_") {
            let ty = nondet_c_type(suffix).unwrap_or("long long");
            let size = nondet_size(name).unwrap_or(8);
            if ty == "_Bool" {
                let _ = writeln!(out, "_Bool {name}(void) {{ apc_note('{size}'); return (_Bool)(apc_take({size}) & 1); }}");
            } else {
                let _ = writeln!(out, "{ty} {name}(void) {{ apc_note('{size}'); return ({ty})apc_take({size}); }}");
            }
        }
    }
    if spec.declared.iter().any(|n| n == "__VERIFIER_assume") {
        out.push_str("void __VERIFIER_assume(int c) { if (!c) apc_leave(3); }\n");
    }
    for (_, new, kind) in redirects(spec.declared) {
        let def = REDIRECTS.iter().find(|(n, k, _)| format!("{REDIRECT_PREFIX}{n}") == new && *k == kind).map(|r| r.2).unwrap_or("");
        let _ = writeln!(out, "{}", def.replace("NAME", &new));
    }
    // The data sections (weak: a section the program lacks brackets nothing).
    for (_, sec) in DATA_SECTIONS {
        let _ = writeln!(out, "extern unsigned char __start_{sec}[] __attribute__((weak)), __stop_{sec}[] __attribute__((weak));");
    }
    let _ = writeln!(out, "static struct {{ unsigned char *start, *stop, *copy; }} apc_regions[{}];", DATA_SECTIONS.len());
    out.push_str("static void apc_snapshot(void) {\n");
    for (k, (_, sec)) in DATA_SECTIONS.iter().enumerate() {
        let _ = writeln!(
            out,
            "  apc_regions[{k}].start = __start_{sec}; apc_regions[{k}].stop = __stop_{sec};\n  if (__start_{sec} && __stop_{sec} > __start_{sec}) {{ apc_regions[{k}].copy = malloc((apc_size_t)(__stop_{sec} - __start_{sec})); if (apc_regions[{k}].copy) __builtin_memcpy(apc_regions[{k}].copy, __start_{sec}, (apc_size_t)(__stop_{sec} - __start_{sec})); }}"
        );
    }
    out.push_str("}\n");
    let _ = writeln!(
        out,
        "static void apc_restore(void) {{\n  for (int k = 0; k < {}; k++) if (apc_regions[k].copy) __builtin_memcpy(apc_regions[k].start, apc_regions[k].copy, (apc_size_t)(apc_regions[k].stop - apc_regions[k].start));\n}}",
        DATA_SECTIONS.len()
    );
    // LLVMFuzzerInitialize: flags, shapes, snapshot.
    let _ = writeln!(
        out,
        r#"int LLVMFuzzerInitialize(int *argc, char ***argv) {{
  static const char flag[] = "{TRACE_FLAG}", path[] = "{SHAPE_PATH}";
  for (int i = 1; i < *argc; i++) {{
    const char *a = (*argv)[i]; int k = 0;
    while (flag[k] && a[k] == flag[k]) k++;
    if (!flag[k] && !a[k]) apc_tracing = 1;
  }}
  long fd = apc_sys(2, (long)path, 0, 0);
  if (fd >= 0) {{
    apc_size_t got = 0; long n;
    while (got < sizeof apc_shape && (n = apc_sys(0, fd, (long)((unsigned char *)apc_shape + got), (long)(sizeof apc_shape - got))) > 0) got += (apc_size_t)n;
    apc_shape_len = got / 8;
    apc_sys(3, fd, 0, 0);
  }}
  apc_snapshot();
  apc_install_handlers();
  return 0;
}}"#
    );
    // The prototype, as the replay driver declares it.
    let types: Vec<&str> =
        if spec.is_main_with_args() { vec!["int", "char **"] } else { f.params.iter().map(|p| Passing::of(p).c_type()).collect() };
    let proto = if types.is_empty() { "void".to_string() } else { types.join(", ") };
    let _ = writeln!(out, "void apc_function_under_test({proto}) __asm__(\"{}\");\n", spec.call_name);
    // One run: decode the parameters in order, then call; `apc_leave` jumps back here.
    out.push_str("__attribute__((noinline)) static void apc_run(void) {\n  if (__builtin_setjmp(apc_jmp) != 0) return;\n");
    out.push_str("  apc_at = 0; apc_nbuf = 0; apc_shape_at = 0; apc_ncalls = 0;\n");
    let mut args = vec![];
    for (k, (slot, p)) in layout.params.iter().zip(&f.params).enumerate() {
        match slot {
            ParamSlot::Int { width, .. } => {
                let _ = writeln!(out, "  unsigned long long apc_p{k} = apc_take({});", ParamSlot::int_bytes(*width));
                if spec.is_main_with_args() && k == 0 {
                    let _ = writeln!(out, "  int apc_argc = (int)(unsigned int)apc_p0;\n  if (apc_argc < 1) apc_argc = 1;\n  if (apc_argc > 64) apc_argc = 64;");
                    args.push("apc_argc".to_string());
                } else {
                    let width = if let Ty::Int(w) = p.ty { w } else { *width };
                    args.push(passed_int_c(k, width, p.ext, Passing::of(p)));
                }
            }
            ParamSlot::Buffer { front, .. } => {
                let _ = writeln!(out, "  unsigned char *apc_p{k} = apc_buffer(0, 0);");
                args.push(if *front > 0 { format!("(void *)(apc_p{k} + {front})") } else { format!("(void *)apc_p{k}") });
            }
            ParamSlot::Argv { .. } => {
                // argv[1..argc): one buffer each, without pointer slots (as `InputLayout::decode`).
                out.push_str("  static char apc_arg0[] = \"apc\";\n  static char *apc_argv[66];\n  apc_argv[0] = apc_arg0;\n");
                out.push_str("  for (int k = 1; k < apc_argc; k++) apc_argv[k] = (char *)apc_buffer(APC_MAX_DEPTH, 1);\n  apc_argv[apc_argc] = 0;\n");
                args.push("apc_argv".into());
            }
            ParamSlot::Fixed { .. } => args.push(
                match Passing::of(p) {
                    Passing::Pointer => "(void *)0",
                    Passing::U32 => "0u",
                    Passing::U64 => "0ull",
                    Passing::Double => "0.0",
                }
                .into(),
            ),
        }
    }
    let _ = writeln!(out, "  apc_function_under_test({});\n}}", args.join(", "));
    out.push_str(
        "/* -1: libFuzzer keeps no input that faulted or hung out of its corpus. */\nint LLVMFuzzerTestOneInput(const unsigned char *data, apc_size_t size) {\n  apc_run_id++;\n  apc_restore();\n  apc_data = data; apc_size = size;\n  apc_reject = 0;\n  unsigned long long limit = apc_work_limit;\n  apc_work_left = limit;\n  apc_in_run = 1;\n  apc_run();\n  apc_in_run = 0;\n  apc_work_all += limit - apc_work_left;\n  return apc_reject ? -1 : 0;\n}\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Function, Param, ValueId};

    #[test]
    fn driver_mirrors_the_replay_prototype_and_redirects_only_declared_functions() {
        let f = Function {
            name: "f".into(),
            params: vec![
                Param { value: ValueId(0), name: "c".into(), ty: Ty::Int(8), ext: ParamExt::Sign, c_type: None, pointee_bytes: None, buffer_bytes: None, front_bytes: 0 },
                Param { value: ValueId(1), name: "s".into(), ty: Ty::Ptr, ext: ParamExt::None, c_type: None, pointee_bytes: None, buffer_bytes: None, front_bytes: 0 },
            ],
            ret: Ty::Void,
            blocks: vec![],
            value_types: vec![],
            value_names: vec![],
            in_cycle: vec![],
        };
        let declared: Vec<String> = ["strcmp", "exit", "__VERIFIER_nondet_char", "puts"].iter().map(|s| s.to_string()).collect();
        let spec = DriverSpec { function: &f, call_name: "f", declared: &declared, targets: &[], functions: &[] };
        let layout = InputLayout::new(&spec);
        let src = generate(&spec, &layout);
        assert!(src.contains("void apc_function_under_test(unsigned int, void *) __asm__(\"f\");"), "{src}");
        assert!(src.contains("apc_function_under_test((unsigned int)(int)((long long)(apc_p0 << 56) >> 56), (void *)apc_p1);"), "{src}");
        assert!(src.contains("char __VERIFIER_nondet_char(void) { apc_note('1'); return (char)apc_take(1); }"));
        assert!(src.contains("int apc_fuzz_strcmp(") && src.contains("void apc_fuzz_exit(int code)"));
        assert!(!src.contains("apc_fuzz_memcmp") && !src.contains("apc_fuzz_abort"));
        let names: Vec<String> = redirects(&declared).into_iter().map(|r| r.0).collect();
        assert_eq!(names, vec!["exit".to_string(), "strcmp".to_string()]);
    }
}
