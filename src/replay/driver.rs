//! The generated C driver: defines the target marker and the environment (nondet functions,
//! `__VERIFIER_assume`), builds the witness's inputs and calls the analysed function.
//!
//! The same file is the standalone regression test of `--emit-tests`: it exits 0 exactly when the
//! target is reached (the marker `_exit(0)`s; every other way out goes through an `atexit` hook
//! that exits 1).

use crate::ir::{Function, ParamExt, Ty};
use crate::load::TARGET_MARKER;
use crate::symex::nondet_c_type;
use crate::witness::{ParamInput, Pointee, Witness};
use std::fmt::Write;

/// Exit status of a run that ended without reaching the target.
pub const EXIT_NOT_REACHED: i32 = 1;
/// Exit status when `__VERIFIER_assume` failed.
pub const EXIT_ASSUME_FAILED: i32 = 3;

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

/// Declares a static buffer with `bytes`, then stores the address of each pointee buffer
/// into its slot; returns the buffer's name.
fn buffer_c(bytes: &[u8], pointees: &[Pointee], buf_index: &mut usize, decls: &mut String) -> String {
    let k = *buf_index;
    *buf_index += 1;
    let _ = writeln!(decls, "  static unsigned char apc_buf{k}[{}] = {{\n    {}\n  }};", bytes.len().max(1), c_bytes(bytes));
    for p in pointees {
        let child = buffer_c(&p.bytes, &p.pointees, buf_index, decls);
        let _ = writeln!(decls, "  *(void **)(apc_buf{k} + {}) = {child};", p.offset);
    }
    format!("apc_buf{k}")
}

/// The C type a parameter is passed as, and the value expression for it.
fn param_c(p: &crate::ir::Param, input: Option<&ParamInput>, buf_index: &mut usize, decls: &mut String) -> (String, String) {
    match (&p.ty, input) {
        (Ty::Ptr, Some(ParamInput::Buffer { bytes, pointees, .. })) => ("void *".into(), buffer_c(bytes, pointees, buf_index, decls)),
        (Ty::Ptr, _) => ("void *".into(), "(void *)0".into()),
        (Ty::Int(w), Some(ParamInput::Int { value, .. })) => {
            if *w < 32 {
                // Narrow parameters travel extended to 32 bits as the callee's ABI attribute says.
                let v = crate::expr::mask(*w, *value);
                let ext = match p.ext {
                    ParamExt::Sign => crate::expr::to_signed(*w, v) as u32 as u64,
                    _ => v,
                };
                ("unsigned int".into(), format!("{ext}u"))
            } else if *w == 32 {
                ("unsigned int".into(), format!("{}u", value & 0xffff_ffff))
            } else {
                ("unsigned long long".into(), format!("{value}ull"))
            }
        }
        (Ty::Int(w), _) if *w <= 32 => ("unsigned int".into(), "0u".into()),
        (Ty::Int(_), _) => ("unsigned long long".into(), "0ull".into()),
        (other, _) => {
            // Floating point and the like: zero of a type of the same register class is not
            // expressible in general; pass a double 0 for float types, else a zero pointer-size.
            if other.to_string().contains("float") || other.to_string().contains("double") {
                ("double".into(), "0.0".into())
            } else {
                ("unsigned long long".into(), "0ull".into())
            }
        }
    }
}

/// Generates the driver's C source for one witness.
pub fn generate(spec: &DriverSpec, w: &Witness) -> String {
    let f = spec.function;
    let mut out = String::new();
    let _ = writeln!(out, "/* apc-llvm replay driver for {}() — targets: {} */", f.name, spec.targets.join(", "));
    let _ = writeln!(
        out,
        "/* Exits 0 exactly when a target block is entered; the target number goes to fd 3 if open. */"
    );
    // No headers: the program's own names (a function called `brk` or `write`) must not clash
    // with library declarations. The three library functions used are declared here.
    out.push_str("void _exit(int);\nlong write(int, const void *, unsigned long);\nint atexit(void (*)(void));\n\n");
    let _ = writeln!(out, "static void apc_not_reached(void) {{ _exit({EXIT_NOT_REACHED}); }}");
    let _ = writeln!(
        out,
        "static void apc_trace(const char *kind, unsigned v) {{\n  char msg[64]; int n = 0; while (kind[n] && n < 40) {{ msg[n] = kind[n]; n++; }}\n  msg[n++] = ' '; char tmp[12]; int t = 0;\n  do {{ tmp[t++] = (char)('0' + v % 10); v /= 10; }} while (v && t < 11);\n  while (t) msg[n++] = tmp[--t];\n  msg[n++] = '\\n';\n  (void)!write(3, msg, (unsigned long)n);\n}}\nvoid {TARGET_MARKER}(int id) {{ apc_trace(\"hit\", (unsigned)id); _exit(0); }}\n"
    );
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
        let _ = writeln!(out, "void __VERIFIER_assume(int c) {{ if (!c) _exit({EXIT_ASSUME_FAILED}); }}");
    }
    // The call.
    let mut decls = String::new();
    let mut buf_index = 0;
    let mut types = vec![];
    let mut args = vec![];
    let is_main_with_args = spec.call_name == crate::load::REPLAY_MAIN
        && f.params.len() == 2
        && f.params[0].ty == Ty::Int(32)
        && f.params[1].ty == Ty::Ptr;
    if is_main_with_args {
        // main(argc, argv): a real argv of argc entries ("apc", then empty strings), argc from
        // the witness clamped to 1..=64; the analysis treats argv's strings as unknown.
        let argc = match w.params.first() {
            Some(ParamInput::Int { value, .. }) => (*value as u32 as i32).clamp(1, 64),
            _ => 1,
        };
        let _ = writeln!(
            decls,
            "  static char apc_arg0[] = \"apc\", apc_empty[] = \"\";\n  static char *apc_argv[66];\n  apc_argv[0] = apc_arg0;\n  for (int k = 1; k < {argc}; k++) apc_argv[k] = apc_empty;\n  apc_argv[{argc}] = 0;"
        );
        types = vec!["int".into(), "char **".into()];
        args = vec![argc.to_string(), "apc_argv".into()];
    } else {
        for (k, p) in f.params.iter().enumerate() {
            let (t, v) = param_c(p, w.params.get(k), &mut buf_index, &mut decls);
            types.push(t);
            args.push(v);
        }
    }
    let proto = if types.is_empty() { "void".to_string() } else { types.join(", ") };
    // Called through an asm label, so that its name cannot clash with anything declared here.
    let _ = writeln!(out, "\nvoid apc_function_under_test({proto}) __asm__(\"{}\");\n", spec.call_name);
    out.push_str("int main(void) {\n  atexit(apc_not_reached);\n");
    out.push_str(&decls);
    let _ = writeln!(out, "  apc_function_under_test({});", args.join(", "));
    let _ = writeln!(out, "  return {EXIT_NOT_REACHED};\n}}");
    out
}
