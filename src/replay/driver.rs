//! The generated C driver: defines the target marker and the environment (nondet functions,
//! `__VERIFIER_assume`), builds the witness's inputs and calls the analysed function.
//!
//! Two forms share everything but where the inputs come from:
//! * the **replay driver** ([`generate_replay`]) is built once per analysis and reads each
//!   witness, encoded by [`encode`], from file descriptor 4, so that a replay is one exec;
//! * the **standalone test** ([`generate`]) has the witness written out as C initialisers; it is
//!   the regression test of `--emit-tests`.
//!
//! Both exit 0 exactly when the target is reached (the marker exits 0; every other way out goes
//! through an `atexit` hook that exits 1). They talk to the kernel with raw system calls, so the
//! program's own functions (one called `write` or `read`) cannot clash with them.

use crate::ir::{Function, ParamExt, Ty};
use crate::load::TARGET_MARKER;
use crate::symex::nondet_c_type;
use crate::witness::{ParamInput, Pointee, SlotValue, Witness};
use std::fmt::Write;

/// Exit status of a run that ended without reaching the target.
pub const EXIT_NOT_REACHED: i32 = 1;
/// Exit status when `__VERIFIER_assume` failed.
pub const EXIT_ASSUME_FAILED: i32 = 3;
/// Exit status of the replay driver when the witness on fd 4 is malformed or too large.
pub const EXIT_BAD_WITNESS: i32 = 4;

/// Largest encoded witness the replay driver accepts, and the size of its buffer arena.
const REPLAY_INPUT_MAX: usize = 16 << 20;
/// Most buffers (parameter buffers and their pointees) one witness may hold.
const REPLAY_MAX_BUFFERS: usize = 4096;
/// The high bit of a slot's pointee word: the slot holds no buffer (see [`encode`]).
const NOT_A_BUFFER: u64 = 1 << 63;
/// Magic number at the start of an encoded witness ("APCW", version 1).
const WITNESS_MAGIC: u64 = 0x0001_5743_5041;

/// C types of nondet functions, as logged by the driver (`nondet <index>`).
pub const NONDET_TYPES: &[&str] = &[
    "long long",
    "int",
    "unsigned int",
    "char",
    "unsigned char",
    "short",
    "unsigned short",
    "long",
    "unsigned long",
    "unsigned long long",
    "_Bool",
];

/// What the driver needs to know about the program.
pub struct DriverSpec<'a> {
    pub function: &'a Function,
    /// The name to call (`main` is renamed in the replayed code).
    pub call_name: &'a str,
    /// Functions declared but not defined by the program.
    pub declared: &'a [String],
    /// Names of the targets, by number, for the comment header.
    pub targets: &'a [String],
    /// The functions of the program's function table, in order (see
    /// `load::Loaded::function_table`): a witness's function pointers index it.
    pub functions: &'a [String],
}

impl DriverSpec<'_> {
    /// The C expression of function `name`'s address: its entry of the program's table, NULL
    /// when the table does not list it.
    fn function_c(&self, name: &str) -> String {
        match self.function_index(name) {
            Some(k) => format!("apc_function({k}u)"),
            None => "(void *)0".into(),
        }
    }

    fn function_index(&self, name: &str) -> Option<usize> {
        self.functions.iter().position(|f| f == name)
    }

    /// `main(int argc, char **argv)`: the driver builds a real argv (see [`generate`]).
    pub(crate) fn is_main_with_args(&self) -> bool {
        let f = self.function;
        self.call_name == crate::load::REPLAY_MAIN && f.params.len() == 2 && f.params[0].ty == Ty::Int(32) && f.params[1].ty == Ty::Ptr
    }
}

/// How a parameter is passed: its C type in the call's prototype.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Passing {
    Pointer,
    /// Integers of at most 32 bits (narrow ones already extended as the ABI attribute says).
    U32,
    U64,
    /// Floating point and the like: always zero.
    Double,
}

impl Passing {
    pub(crate) fn of(p: &crate::ir::Param) -> Passing {
        match &p.ty {
            Ty::Ptr => Passing::Pointer,
            Ty::Int(w) if *w <= 32 => Passing::U32,
            Ty::Int(_) => Passing::U64,
            other if other.to_string().contains("float") || other.to_string().contains("double") => Passing::Double,
            _ => Passing::U64,
        }
    }

    pub(crate) fn c_type(self) -> &'static str {
        match self {
            Passing::Pointer => "void *",
            Passing::U32 => "unsigned int",
            Passing::U64 => "unsigned long long",
            Passing::Double => "double",
        }
    }
}

/// The bits an integer parameter is passed with: narrow parameters travel extended to 32 bits
/// as the callee's ABI attribute says.
fn passed_int(p: &crate::ir::Param, value: u64) -> u64 {
    match p.ty {
        Ty::Int(w) if w < 32 => {
            let v = crate::expr::mask(w, value);
            match p.ext {
                ParamExt::Sign => crate::expr::to_signed(w, v) as u32 as u64,
                _ => v,
            }
        }
        Ty::Int(32) => value & 0xffff_ffff,
        _ => value,
    }
}

/// `argc` of a witness for `main(argc, argv)`: clamped to 1..=64 (argv's strings are empty; the
/// analysis treats them as unknown).
fn argc_of(w: &Witness) -> i32 {
    match w.params.first() {
        Some(ParamInput::Int { value, .. }) => argc_clamped(*value) as i32,
        _ => 1,
    }
}

/// `argc` as the drivers pass it: the low 32 bits as an `int`, between 1 and 64.
pub(crate) fn argc_clamped(v: u64) -> usize {
    (v as u32 as i32).clamp(1, 64) as usize
}

/// The replay driver as the init of its sandbox (`sandbox::Job::self_init`): started with
/// `--apc-init`, it forks; the child returns to run the witness, the init reaps every process
/// until the run ends and writes the run's wait status to fd 6. glibc's `fork` (not a raw
/// clone): the child's cached thread id must be its own, or its `abort()` signals the init.
const INIT_C: &str = r#"int fork(void);
static long apc_wait(int *st) {
  long r;
  register long r10 __asm__("r10") = 0;
  __asm__ volatile("syscall" : "=a"(r) : "a"(61L), "D"(-1L), "S"((long)st), "d"(0L), "r"(r10) : "rcx", "r11", "memory");
  return r;
}
static int apc_is_init_arg(const char *a) {
  const char *w = "--apc-init";
  while (*a && *a == *w) { a++; w++; }
  return *a == 0 && *w == 0;
}
static void apc_init(void) {
  int pid = fork();
  if (pid == 0) { apc_sys(3, 6, 0, 0); return; }
  if (pid < 0) apc_exit(127);
  apc_sys(3, 3, 0, 0);
  apc_sys(3, 4, 0, 0);
  int st = 0;
  for (;;) {
    long r = apc_wait(&st);
    if (r == pid) break;
    if (r < 0 && r != -4) { st = -1; break; }
  }
  apc_sys(1, 6, (long)&st, 4);
  apc_exit(0);
}
"#;

/// The part both drivers share: system calls, the marker, the trace on fd 3, the nondet
/// functions over `apc_next()`, `__VERIFIER_assume`, and the prototype of the function under test.
fn prologue(spec: &DriverSpec, out: &mut String) {
    let f = spec.function;
    let _ = writeln!(out, "/* apc-llvm replay driver for {}() — targets: {} */", f.name, spec.targets.join(", "));
    let _ = writeln!(out, "/* Exits 0 exactly when a target block is entered; the target number goes to fd 3 if open. */");
    // No headers: the program's own names must not clash with library declarations.
    out.push_str("int atexit(void (*)(void));\n\n");
    out.push_str(
        "static long apc_sys(long n, long a, long b, long c) {\n  long r;\n  __asm__ volatile(\"syscall\" : \"=a\"(r) : \"a\"(n), \"D\"(a), \"S\"(b), \"d\"(c) : \"rcx\", \"r11\", \"memory\");\n  return r;\n}\n",
    );
    out.push_str("static void apc_exit(int code) { for (;;) apc_sys(231, code, 0, 0); }\n");
    let _ = writeln!(out, "static void apc_not_reached(void) {{ apc_exit({EXIT_NOT_REACHED}); }}");
    let _ = writeln!(
        out,
        "static void apc_trace(const char *kind, unsigned v) {{\n  char msg[64]; int n = 0; while (kind[n] && n < 40) {{ msg[n] = kind[n]; n++; }}\n  msg[n++] = ' '; char tmp[12]; int t = 0;\n  do {{ tmp[t++] = (char)('0' + v % 10); v /= 10; }} while (v && t < 11);\n  while (t) msg[n++] = tmp[--t];\n  msg[n++] = '\\n';\n  apc_sys(1, 3, (long)msg, n);\n}}\n"
    );
    // The hit message carries the run's token (replay only; 0 in the standalone test), so that
    // a program writing to fd 3 by accident cannot forge a hit.
    let _ = writeln!(
        out,
        "static unsigned long long apc_token;\nstatic long apc_hit_fd = 3;\nvoid {TARGET_MARKER}(int id) {{\n  char msg[48] = \"hit \"; int n = 4;\n  for (int k = 60; k >= 0; k -= 4) msg[n++] = \"0123456789abcdef\"[(apc_token >> k) & 15];\n  msg[n++] = ' '; unsigned v = (unsigned)id; char tmp[12]; int t = 0;\n  do {{ tmp[t++] = (char)('0' + v % 10); v /= 10; }} while (v && t < 11);\n  while (t) msg[n++] = tmp[--t];\n  msg[n++] = '\\n';\n  apc_sys(1, apc_hit_fd, (long)msg, n);\n  apc_exit(0);\n}}"
    );
    out.push_str("static unsigned long long apc_next(void);\n");
    // The program's function table (weak: a build without one passes NULL).
    let _ = writeln!(
        out,
        "extern void *const {table}[] __attribute__((weak));\nstatic void *apc_function(unsigned long k) {{ return {table} && k < {n}ul ? {table}[k] : (void *)0; }}",
        table = crate::load::FUNCTION_TABLE,
        n = spec.functions.len()
    );
    for name in spec.declared {
        if let Some(suffix) = name.strip_prefix("__VERIFIER_nondet_") {
            let ty = nondet_c_type(suffix).unwrap_or("long long");
            // Each call logs its C type (index into NONDET_TYPES) for the Test-Comp inputs.
            let tix = NONDET_TYPES.iter().position(|t| *t == ty).unwrap_or(0);
            if ty == "_Bool" {
                let _ = writeln!(out, "_Bool {name}(void) {{ apc_trace(\"nondet\", {tix}u); return (_Bool)(apc_next() & 1); }}");
            } else {
                let _ = writeln!(out, "{ty} {name}(void) {{ apc_trace(\"nondet\", {tix}u); return ({ty})apc_next(); }}");
            }
        }
    }
    if spec.declared.iter().any(|n| n == "__VERIFIER_assume") {
        let _ = writeln!(out, "void __VERIFIER_assume(int c) {{ if (!c) apc_exit({EXIT_ASSUME_FAILED}); }}");
    }
    let types: Vec<&str> =
        if spec.is_main_with_args() { vec!["int", "char **"] } else { f.params.iter().map(|p| Passing::of(p).c_type()).collect() };
    let proto = if types.is_empty() { "void".to_string() } else { types.join(", ") };
    // Called through an asm label, so that its name cannot clash with anything declared here.
    let _ = writeln!(out, "\nvoid apc_function_under_test({proto}) __asm__(\"{}\");\n", spec.call_name);
}

/// The statements building a real argv of `argc` entries with the strings the witness gives:
/// `given` is a `char **` expression (or null) whose non-null entries below `argc` are the
/// arguments; the others are `""` (`"apc"` for the program name).
fn argv_given_c(argc: &str, given: &str) -> String {
    format!(
        "  static char apc_arg0[] = \"apc\", apc_empty[] = \"\";\n  static char *apc_argv[66];\n  char **apc_given = {given};\n  for (int k = 0; k < {argc}; k++) apc_argv[k] = apc_given && apc_given[k] ? apc_given[k] : k ? apc_empty : apc_arg0;\n  apc_argv[{argc}] = 0;\n"
    )
}

/// The strings `w` gives `main`'s argv: entry k (below argc) is the pointee at offset 8k of the
/// argv buffer, its bytes ending in a NUL (one is added when they do not); `None` where the
/// witness has none (the analysis left it free: any string does).
pub(crate) fn argv_strings(w: &Witness) -> Vec<Option<Vec<u8>>> {
    let argc = argc_of(w) as u64;
    let (pointees, front) = match w.params.get(1) {
        Some(ParamInput::Buffer { pointees, front, .. }) => (pointees.as_slice(), *front),
        _ => (&[][..], 0),
    };
    (0..argc)
        .map(|k| {
            pointees.iter().find(|p| p.offset == front + 8 * k).map(|p| {
                let mut b = p.bytes.clone();
                if !b.contains(&0) {
                    b.push(0);
                }
                b
            })
        })
        .collect()
}

fn c_bytes(bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(',');
            if i % 16 == 0 {
                s.push_str("\n    ");
            }
        }
        let _ = write!(s, "{b}");
    }
    s
}

/// Where the standalone test puts its buffers: in a zero-filled arena of the replay driver's
/// size, one after another in the order [`encode`] gives them (parents before their pointees),
/// each at a 16-byte boundary, exactly as the replay driver lays them out. A witness that reads
/// past a buffer's bytes (a fuzzed `n` larger than the buffer) reads the same zeros in the test
/// as in the replay; with buffers of their own size the test read other data, or crashed.
#[derive(Default)]
struct Arena {
    buffers: usize,
    used: usize,
}

/// Copies `bytes` into the arena at startup, then stores the address of each pointee buffer
/// into its slot; returns the buffer's address expression.
fn buffer_c(spec: &DriverSpec, bytes: &[u8], pointees: &[Pointee], arena: &mut Arena, decls: &mut String) -> String {
    let (k, at) = (arena.buffers, arena.used);
    arena.buffers += 1;
    arena.used += if bytes.is_empty() { 16 } else { (bytes.len() + 15) & !15 };
    if !bytes.is_empty() {
        let _ = writeln!(decls, "  static const unsigned char apc_init{k}[{}] = {{\n    {}\n  }};", bytes.len(), c_bytes(bytes));
        let _ = writeln!(decls, "  for (unsigned long i = 0; i < {}; i++) apc_arena[{at} + i] = apc_init{k}[i];", bytes.len());
    }
    for p in pointees {
        let child = match &p.holds {
            Some(SlotValue::Null) => "(void *)0".to_string(),
            Some(SlotValue::Function(f)) => spec.function_c(f),
            None => buffer_c(spec, &p.bytes, &p.pointees, arena, decls),
        };
        let _ = writeln!(decls, "  *(void **)(apc_arena + {at} + {}) = {child};", p.offset);
    }
    format!("(apc_arena + {at})")
}

/// The value expression of one parameter in the standalone test.
fn param_c(spec: &DriverSpec, p: &crate::ir::Param, input: Option<&ParamInput>, arena: &mut Arena, decls: &mut String) -> String {
    match (Passing::of(p), input) {
        (Passing::Pointer, Some(ParamInput::Function { function, .. })) => spec.function_c(function),
        (Passing::Pointer, Some(ParamInput::Buffer { bytes, pointees, front, .. })) => {
            let at = buffer_c(spec, bytes, pointees, arena, decls);
            if *front > 0 { format!("({at} + {front})") } else { at }
        }
        (Passing::Pointer, _) => "(void *)0".into(),
        (Passing::U32, Some(ParamInput::Int { value, .. })) => format!("{}u", passed_int(p, *value)),
        (Passing::U64, Some(ParamInput::Int { value, .. })) => format!("{}ull", passed_int(p, *value)),
        (Passing::U32, _) => "0u".into(),
        (Passing::U64, _) => "0ull".into(),
        (Passing::Double, _) => "0.0".into(),
    }
}

/// Generates the standalone test's C source for one witness.
pub fn generate(spec: &DriverSpec, w: &Witness) -> String {
    let f = spec.function;
    let mut out = String::new();
    prologue(spec, &mut out);
    // The nondet stream.
    let values: Vec<String> = w.nondet.iter().map(|v| format!("{v}ull")).collect();
    let _ = writeln!(
        out,
        "static const unsigned long long apc_stream[{}] = {{ {} }};",
        values.len().max(1),
        if values.is_empty() { "0".to_string() } else { values.join(", ") }
    );
    let _ = writeln!(out, "static unsigned long apc_pos = 0;");
    let _ = writeln!(
        out,
        "static unsigned long long apc_next(void) {{ return apc_pos < {} ? apc_stream[apc_pos++] : (apc_pos++, 0ull); }}\n",
        w.nondet.len()
    );
    // The call.
    let mut decls = String::new();
    let mut arena = Arena::default();
    let args: Vec<String> = if spec.is_main_with_args() {
        let argc = argc_of(w);
        let strings = argv_strings(w);
        let mut given = vec![];
        for (k, s) in strings.iter().enumerate() {
            match s {
                Some(bytes) => {
                    let _ = writeln!(decls, "  static char apc_arg_{k}[{}] = {{ {} }};", bytes.len(), c_bytes(bytes));
                    given.push(format!("apc_arg_{k}"));
                }
                None => given.push("0".into()),
            }
        }
        given.push("0".into());
        let _ = writeln!(decls, "  static char *apc_given_argv[] = {{ {} }};", given.join(", "));
        decls.push_str(&argv_given_c(&argc.to_string(), "apc_given_argv"));
        vec![argc.to_string(), "apc_argv".into()]
    } else {
        f.params.iter().enumerate().map(|(k, p)| param_c(spec, p, w.params.get(k), &mut arena, &mut decls)).collect()
    };
    if arena.buffers > 0 {
        let _ = writeln!(out, "static unsigned char apc_arena[{REPLAY_INPUT_MAX}ul] __attribute__((aligned(16)));");
    }
    out.push_str("int main(void) {\n  atexit(apc_not_reached);\n");
    out.push_str(&decls);
    let _ = writeln!(out, "  apc_function_under_test({});", args.join(", "));
    let _ = writeln!(out, "  return {EXIT_NOT_REACHED};\n}}");
    out
}

/// AddressSanitizer's options in the sanitized replay program (compiled in: runs get a cleared
/// environment). `mmap_limit_mb` bounds its heap and mappings, because the address-space limit
/// of ordinary runs cannot be used (the shadow memory reserves terabytes).
pub fn asan_options() -> String {
    let mb = super::Limits::default().memory_bytes >> 20;
    format!("detect_leaks=0:symbolize=0:mmap_limit_mb={mb}:allocator_may_return_null=1:detect_stack_use_after_return=0")
}

/// Generates the replay driver: it reads a witness encoded by [`encode`] from fd 4, lays its
/// buffers out in a static arena (16-byte aligned, pointer slots patched), and makes the call.
pub fn generate_replay(spec: &DriverSpec) -> String {
    let f = spec.function;
    let mut out = String::new();
    prologue(spec, &mut out);
    let _ = writeln!(
        out,
        "#define APC_INPUT_MAX {REPLAY_INPUT_MAX}ul\n#define APC_MAX_BUFFERS {REPLAY_MAX_BUFFERS}ul\n#define APC_BAD {EXIT_BAD_WITNESS}\n#define APC_ASAN_OPTIONS \"{}\"",
        asan_options()
    );
    out.push_str(
        r#"static unsigned char apc_input[APC_INPUT_MAX] __attribute__((aligned(16)));
#ifdef APC_SANITIZED
/* Each buffer an allocation of its own, exactly as long as the witness says: AddressSanitizer
   reports an access past it. Its options: no leak check (the driver frees nothing), no
   symbolizer (the jail has none: the analyser symbolizes), the heap bounded instead of the
   address space (the shadow memory needs terabytes of it). */
void *malloc(unsigned long);
const char *__asan_default_options(void) { return APC_ASAN_OPTIONS; }
#else
static unsigned char apc_arena[APC_INPUT_MAX] __attribute__((aligned(16)));
#endif
static unsigned char *apc_bufs[APC_MAX_BUFFERS];
static unsigned long apc_lens[APC_MAX_BUFFERS];
static unsigned long apc_len, apc_at, apc_stream_at, apc_stream_len, apc_pos;
static unsigned long long apc_params[64];
static unsigned long long apc_word(void) {
  if (apc_at + 8 > apc_len) apc_exit(APC_BAD);
  unsigned long long v = 0;
  for (int k = 7; k >= 0; k--) v = (v << 8) | apc_input[apc_at + k];
  apc_at += 8;
  return v;
}
static unsigned long long apc_next(void) {
  if (apc_pos >= apc_stream_len) { apc_pos++; return 0ull; }
  unsigned long long v = 0;
  for (int k = 7; k >= 0; k--) v = (v << 8) | apc_input[apc_stream_at + 8 * apc_pos + k];
  apc_pos++;
  return v;
}
static void apc_read_witness(void) {
  long n;
  while (apc_len < APC_INPUT_MAX && (n = apc_sys(0, 4, (long)(apc_input + apc_len), (long)(APC_INPUT_MAX - apc_len))) > 0) apc_len += (unsigned long)n;
  if (apc_len >= APC_INPUT_MAX) apc_exit(APC_BAD);
  apc_sys(3, 4, 0, 0);
"#,
    );
    let _ = writeln!(out, "  if (apc_word() != {WITNESS_MAGIC}ull) apc_exit(APC_BAD);\n  apc_token = apc_word();");
    out.push_str(
        r#"  apc_stream_len = apc_word();
  if (apc_stream_len > (apc_len - apc_at) / 8) apc_exit(APC_BAD);
  apc_stream_at = apc_at;
  apc_at += 8 * apc_stream_len;
  unsigned long nbuf = apc_word(), used = 0;
  if (nbuf > APC_MAX_BUFFERS) apc_exit(APC_BAD);
  for (unsigned long b = 0; b < nbuf; b++) {
    unsigned long len = apc_word();
    if (len > apc_len - apc_at || len > APC_INPUT_MAX - used) apc_exit(APC_BAD);
#ifdef APC_SANITIZED
    apc_bufs[b] = (unsigned char *)malloc(len);
    if (!apc_bufs[b]) apc_exit(APC_BAD);
#else
    apc_bufs[b] = apc_arena + used;
#endif
    apc_lens[b] = len;
    for (unsigned long k = 0; k < len; k++) apc_bufs[b][k] = apc_input[apc_at + k];
    apc_at += (len + 7) & ~7ul;
    used += len ? (len + 15) & ~15ul : 16;
  }
  unsigned long nslots = apc_word();
  for (unsigned long s = 0; s < nslots; s++) {
    unsigned long b = apc_word(), off = apc_word(), child = apc_word();
    if (b >= nbuf || off > APC_INPUT_MAX || (child < (1ul << 63) && child >= nbuf)) apc_exit(APC_BAD);
    /* The high bit: no buffer but NULL (all ones below it) or function k of the table. */
    void *value = child >> 63 ? ((child & 0xfffffffful) == 0xfffffffful ? (void *)0 : apc_function(child & 0xfffffffful)) : apc_bufs[child];
    *(void **)(apc_bufs[b] + off) = value;
  }
  unsigned long nparams = apc_word();
  if (nparams > 64) apc_exit(APC_BAD);
  for (unsigned long p = 0; p < nparams; p++) {
    unsigned long long tag = apc_word(), v = apc_word();
    if (tag == 1) {
      unsigned long b = (unsigned long)(v & 0xffffffffull), front = (unsigned long)(v >> 32);
      if (b >= nbuf || front > apc_lens[b]) apc_exit(APC_BAD);
      apc_params[p] = (unsigned long long)(apc_bufs[b] + front);
    }
    else if (tag == 3) apc_params[p] = (unsigned long long)apc_function((unsigned long)v);
    else apc_params[p] = tag == 0 ? v : 0ull;
  }
}
"#,
    );
    // The hit channel also lives on a high descriptor (close-on-exec), so that a program that
    // closes fd 3 (as daemons do) still reports its hit.
    out.push_str(INIT_C);
    out.push_str("int main(int apc_main_argc, char **apc_main_argv) {\n  if (apc_main_argc > 1 && apc_is_init_arg(apc_main_argv[1])) apc_init();\n  atexit(apc_not_reached);\n  apc_read_witness();\n  { long d = apc_sys(72, 3, 1030, 900); if (d >= 0) apc_hit_fd = d; }\n");
    let args: Vec<String> = if spec.is_main_with_args() {
        out.push_str(&argv_given_c("(int)apc_params[0]", "(char **)apc_params[1]"));
        vec!["(int)apc_params[0]".into(), "apc_argv".into()]
    } else {
        f.params
            .iter()
            .enumerate()
            .map(|(k, p)| match Passing::of(p) {
                Passing::Pointer => format!("(void *)apc_params[{k}]"),
                Passing::U32 => format!("(unsigned int)apc_params[{k}]"),
                Passing::U64 => format!("apc_params[{k}]"),
                Passing::Double => "0.0".into(),
            })
            .collect()
    };
    let _ = writeln!(out, "  apc_function_under_test({});", args.join(", "));
    let _ = writeln!(out, "  return {EXIT_NOT_REACHED};\n}}");
    out
}

/// Encodes `w` for the replay driver of `spec`: little-endian 64-bit words: magic; the token
/// the run's hit message must carry; the nondet
/// stream (count, values); the buffers (count, then per buffer its length and bytes padded to
/// 8); the pointer slots (count, then buffer, offset, pointee buffer); the parameters (count,
/// then per parameter a tag, 0 integer / 1 buffer / 2 zero or NULL / 3 function, and its value,
/// buffer index or function index; a buffer's index has in its high 32 bits how many of its
/// bytes lie in front of the address passed). A slot's pointee word with its high bit set is no
/// buffer: NULL when the low 32 bits are all ones, else a function index.
pub fn encode(spec: &DriverSpec, w: &Witness, token: u64) -> Vec<u8> {
    fn flatten<'a>(spec: &DriverSpec, bytes: &'a [u8], pointees: &'a [Pointee], bufs: &mut Vec<&'a [u8]>, slots: &mut Vec<[u64; 3]>) -> u64 {
        let me = bufs.len() as u64;
        bufs.push(bytes);
        for p in pointees {
            let child = match &p.holds {
                Some(SlotValue::Null) => NOT_A_BUFFER | 0xffff_ffff,
                Some(SlotValue::Function(f)) => spec.function_index(f).map_or(NOT_A_BUFFER | 0xffff_ffff, |k| NOT_A_BUFFER | k as u64),
                None => flatten(spec, &p.bytes, &p.pointees, bufs, slots),
            };
            // A slot that does not fit its buffer would write outside it: leave it out.
            if p.offset.checked_add(8).is_some_and(|end| end <= bytes.len() as u64) {
                slots.push([me, p.offset, child]);
            }
        }
        me
    }
    // main's argv: an array of argc + 1 pointers, null except where the witness gives a string.
    let argv = if spec.is_main_with_args() { argv_strings(w) } else { vec![] };
    let argv_array = vec![0u8; 8 * (argv.len() + 1)];
    let mut bufs: Vec<&[u8]> = vec![];
    let mut slots = vec![];
    let params: Vec<[u64; 2]> = if spec.is_main_with_args() {
        bufs.push(&argv_array);
        for (k, s) in argv.iter().enumerate() {
            if let Some(bytes) = s {
                slots.push([0, 8 * k as u64, bufs.len() as u64]);
                bufs.push(bytes);
            }
        }
        vec![[0, argv.len() as u64], [1, 0]]
    } else {
        spec.function
            .params
            .iter()
            .enumerate()
            .map(|(k, p)| match (Passing::of(p), w.params.get(k)) {
                (Passing::Pointer, Some(ParamInput::Buffer { bytes, pointees, front, .. })) => {
                    // The address passed is `front` bytes into the buffer.
                    let front = (*front).min(bytes.len() as u64);
                    [1, flatten(spec, bytes, pointees, &mut bufs, &mut slots) | front << 32]
                }
                (Passing::Pointer, Some(ParamInput::Function { function, .. })) => match spec.function_index(function) {
                    Some(k) => [3, k as u64],
                    None => [2, 0],
                },
                (Passing::U32 | Passing::U64, Some(ParamInput::Int { value, .. })) => [0, passed_int(p, *value)],
                _ => [2, 0],
            })
            .collect()
    };
    let mut out = Vec::with_capacity(64 + 8 * w.nondet.len() + bufs.iter().map(|b| b.len() + 16).sum::<usize>());
    let word = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&v.to_le_bytes());
    word(&mut out, WITNESS_MAGIC);
    word(&mut out, token);
    word(&mut out, w.nondet.len() as u64);
    for v in &w.nondet {
        word(&mut out, *v);
    }
    word(&mut out, bufs.len() as u64);
    for b in &bufs {
        word(&mut out, b.len() as u64);
        out.extend_from_slice(b);
        out.resize(out.len().next_multiple_of(8), 0);
    }
    word(&mut out, slots.len() as u64);
    for s in &slots {
        for v in s {
            word(&mut out, *v);
        }
    }
    word(&mut out, params.len() as u64);
    for p in &params {
        word(&mut out, p[0]);
        word(&mut out, p[1]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Function, Param};

    fn function(name: &str, params: Vec<(&str, Ty, ParamExt)>) -> Function {
        Function {
            name: name.into(),
            params: params.into_iter().enumerate().map(|(k, (n, ty, ext))| Param { value: crate::ir::ValueId(k as u32), name: n.into(), ty, ext, c_type: None, pointee_bytes: None, buffer_bytes: None, front_bytes: 0 }).collect(),
            ret: Ty::Void,
            blocks: vec![],
            value_types: vec![],
            value_names: vec![],
            in_cycle: vec![],
        }
    }

    fn words(b: &[u8]) -> Vec<u64> {
        b.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn encoding_lists_stream_buffers_slots_and_parameters() {
        let f = function("f", vec![("p", Ty::Ptr, ParamExt::None), ("c", Ty::Int(8), ParamExt::Sign)]);
        let spec = DriverSpec { function: &f, call_name: "f", declared: &[], targets: &[], functions: &[] };
        let w = Witness {
            params: vec![
                ParamInput::Buffer {
                    name: "p".into(),
                    bytes: vec![0; 8],
                    pointees: vec![Pointee::buffer(0, vec![7], vec![]), Pointee::buffer(4, vec![], vec![])],
                    front: 0,
                },
                ParamInput::Int { name: "c".into(), width: 8, value: 0xff },
            ],
            nondet: vec![5, 6],
        };
        let e = encode(&spec, &w, 0xabc);
        assert_eq!(e.len() % 8, 0);
        #[rustfmt::skip]
        let expect = vec![
            WITNESS_MAGIC, 0xabc,
            2, 5, 6,                     // stream
            3, 8, 0, 1, 7, 0,            // buffers: 8 bytes; 1 byte (padded); empty
            1, 0, 0, 1,                  // one slot: the one at offset 4 does not fit
            2, 1, 0, 0, 0xffff_ffff,     // parameters: buffer 0; c = -1 as 32 bits
        ];
        assert_eq!(words(&e), expect);
    }

    #[test]
    fn a_buffer_with_bytes_in_front_passes_an_address_inside_it() {
        let f = function("f", vec![("s", Ty::Ptr, ParamExt::None)]);
        let spec = DriverSpec { function: &f, call_name: "f", declared: &[], targets: &[], functions: &[] };
        let w = Witness { params: vec![ParamInput::Buffer { name: "s".into(), bytes: vec![1, 2, 3, 4], pointees: vec![], front: 3 }], nondet: vec![] };
        let words = words(&encode(&spec, &w, 9));
        // magic, token, stream 0, one buffer of 4 bytes (one word), no slots, one parameter:
        // tag 1, buffer 0 with 3 bytes in front.
        assert_eq!(&words[words.len() - 3..], &[1, 1, 3 << 32]);
        assert!(generate(&spec, &w).contains("(apc_arena + 0) + 3"));
    }

    #[test]
    fn both_drivers_call_through_the_same_prototype() {
        let f = function("g", vec![("x", Ty::Int(64), ParamExt::None)]);
        let spec = DriverSpec { function: &f, call_name: "g", declared: &["__VERIFIER_nondet_int".to_string()], targets: &[], functions: &[] };
        let proto = "void apc_function_under_test(unsigned long long) __asm__(\"g\");";
        let replay = generate_replay(&spec);
        let standalone = generate(&spec, &Witness::default());
        assert!(replay.contains(proto) && standalone.contains(proto), "{replay}");
        assert!(replay.contains("int __VERIFIER_nondet_int(void)") && standalone.contains("int __VERIFIER_nondet_int(void)"));
        assert!(standalone.contains("apc_function_under_test(0ull)"));
        assert!(replay.contains("apc_function_under_test(apc_params[0])"));
    }
}
