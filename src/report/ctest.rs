//! The regression test of a witness for a program given as C sources (see [`super::emit`]):
//! plain C that includes the user's current source and calls the function with the witness's
//! inputs as literals, an environment file (nondet values, stubs), and where its target is.
//!
//! Whether the target ran is read from the run's line coverage (llvm-cov), at the target's
//! position found again in the current source by its text (`T.target`, checked by the
//! generated `apc_reached.c`): a test built against an edited source follows the target's line
//! when code above it moved, and fails when the line is gone or no longer runs.

use crate::ir::{Function, Param};
use crate::witness::{ParamInput, Pointee, SlotValue, Witness};
use std::fmt::Write;

/// The name the user's `main` gets inside a test, which has a `main` of its own.
pub const MAIN_UNDER_TEST: &str = "apc_main_under_test";

/// A C integer literal of `value` (`width` bits) as a `signed` or unsigned type reads it.
fn int_literal(value: u64, width: u32, signed: bool) -> String {
    let v = crate::expr::mask(width, value);
    if signed {
        let s = crate::expr::to_signed(width, v);
        if s == i64::MIN {
            return "(-9223372036854775807LL - 1)".into();
        }
        return s.to_string();
    }
    if v > i64::MAX as u64 { format!("{v}ull") } else { v.to_string() }
}

/// Whether a buffer of this C element type is written as a string literal.
fn is_char(p: &Param) -> bool {
    p.c_type.as_ref().is_some_and(|c| c.name.contains("char")) && p.pointee_bytes.unwrap_or(1) == 1
}

/// `{0x4b, 0x56}`: bytes as a brace list, trailing zeros left to the initialiser's zero fill.
fn byte_list(bytes: &[u8]) -> String {
    let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1);
    let items: Vec<String> = bytes[..end].iter().map(|b| format!("0x{b:02x}")).collect();
    let mut s = String::from("{");
    for (k, item) in items.iter().enumerate() {
        if k > 0 {
            s.push_str(if k % 16 == 0 { ",\n    " } else { ", " });
        }
        s.push_str(item);
    }
    s.push('}');
    if end == 0 {
        s = "{0}".into();
    }
    s
}

/// The name of a function a witness passes, as the source spells it.
fn source_name(f: &str) -> String {
    f.strip_prefix(crate::load::STATIC_PREFIX).unwrap_or(f).to_string()
}

/// Declares the objects of one buffer and its pointees (depth first); the statements that
/// store the pointees' addresses into their slots go to `links`.
fn buffer_objects(name: &str, bytes: &[u8], pointees: &[Pointee], as_chars: bool, decls: &mut String, links: &mut String) {
    let size = bytes.len().max(1);
    let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1);
    if as_chars && pointees.is_empty() {
        let _ = writeln!(decls, "  static char {name}[{size}] = {};", super::c_string_literal(&bytes[..end]));
    } else {
        let _ = writeln!(decls, "  static unsigned char {name}[{size}] __attribute__((aligned(16))) = {};", byte_list(bytes));
    }
    for (k, p) in pointees.iter().enumerate() {
        if p.offset.checked_add(8).is_none_or(|e| e > bytes.len() as u64) {
            continue;
        }
        let value = match &p.holds {
            Some(SlotValue::Null) => "(void *)0".to_string(),
            Some(SlotValue::Function(f)) => format!("(void *)&{}", source_name(f)),
            None => {
                let child = format!("{name}_{k}");
                buffer_objects(&child, &p.bytes, &p.pointees, false, decls, links);
                child
            }
        };
        let _ = writeln!(links, "  *(void **)({name} + {}) = {value};", p.offset);
    }
}

/// The argument expression of parameter `p`.
/// `callee`: the function called, which a local of its parameter's name would hide.
fn argument(p: &Param, callee: &str, input: Option<&ParamInput>, decls: &mut String, links: &mut String) -> String {
    match input {
        Some(ParamInput::Int { value, width, .. }) => {
            let signed = p.c_type.as_ref().is_some_and(|c| c.signed);
            int_literal(*value, *width, signed)
        }
        Some(ParamInput::Buffer { bytes, pointees, front, .. }) => {
            // The parameter's own name reads best; a local of main's hides any global of it.
            let plain = crate::report::emit::sanitize(&p.name);
            let usable = plain.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && !plain.contains('-') && plain != callee && !plain.starts_with("apc_");
            let name = if usable { plain } else { format!("apc_{plain}") };
            let chars = is_char(p);
            buffer_objects(&name, bytes, pointees, chars, decls, links);
            let at = if *front > 0 { format!("{name} + {front}") } else { name };
            if chars { at } else { format!("(void *)({at})") }
        }
        Some(ParamInput::Function { function, .. }) => format!("&{}", source_name(function)),
        _ if matches!(p.ty, crate::ir::Ty::Ptr) => "(void *)0".into(),
        _ => "0".into(),
    }
}

/// The test's C source after its first line: includes `include` (the user's source, as a path
/// from the test's directory), builds the inputs and calls the function.
pub fn test_c(f: &Function, name: &str, w: &Witness, include: &str, target: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "/* {name}() reaches {target} on these inputs. `make` in this directory builds this file with");
    let _ = writeln!(out, "   the current source and fails when the target's line no longer runs (see {}). */", include.rsplit('/').next().unwrap_or(include));
    let is_main = name == "main";
    if is_main {
        let _ = writeln!(out, "#define main {MAIN_UNDER_TEST}");
    }
    let _ = writeln!(out, "#include \"{}\"", include.replace('\\', "\\\\").replace('"', "\\\""));
    if is_main {
        out.push_str("#undef main\n");
    }
    out.push_str("\nvoid apc_test_start(void);\n\nint main(void) {\n");
    let (mut decls, mut links) = (String::new(), String::new());
    let call = if is_main && f.params.len() == 2 {
        let strings = crate::replay::driver::argv_strings(w);
        let mut items = vec!["\"apc\"".to_string()];
        for s in strings.iter().skip(1) {
            let bytes = s.as_deref().unwrap_or(&[]);
            let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
            items.push(super::c_string_literal(&bytes[..end]));
        }
        let _ = writeln!(decls, "  static char *argv[] = {{{}, 0}};", items.iter().map(|s| format!("(char *){s}")).collect::<Vec<_>>().join(", "));
        format!("{MAIN_UNDER_TEST}({}, argv)", strings.len().max(1))
    } else {
        let args: Vec<String> = f.params.iter().enumerate().map(|(k, p)| argument(p, if is_main { MAIN_UNDER_TEST } else { name }, w.params.get(k), &mut decls, &mut links)).collect();
        format!("{}({})", if is_main { MAIN_UNDER_TEST } else { name }, args.join(", "))
    };
    out.push_str(&decls);
    out.push_str(&links);
    out.push_str("  apc_test_start();\n");
    let _ = writeln!(out, "  {call};\n  return 0;\n}}");
    out
}

/// The test's environment, its own translation unit so that nothing in it meets the user's
/// declarations: the nondet functions over the witness's values, `__VERIFIER_assume`, stubs for
/// the functions the program declares and nothing defines, and the coverage written out when
/// the program ends by a signal (an `abort()` after the target) or runs too long.
pub fn env_c(declared: &[String], stubs: &[String], nondet: &[u64]) -> String {
    let mut out = String::from("#include <signal.h>\n#include <stdlib.h>\n#include <unistd.h>\n\nint __llvm_profile_write_file(void);\n\n");
    let values: Vec<String> = nondet.iter().map(|v| format!("{v}ull")).collect();
    let _ = writeln!(out, "static const unsigned long long apc_nondet[] = {{{}}};", if values.is_empty() { "0".into() } else { values.join(", ") });
    let _ = writeln!(
        out,
        "static unsigned long apc_nondet_at;\nstatic unsigned long long apc_next(void) {{ return apc_nondet_at < {n} ? apc_nondet[apc_nondet_at++] : 0; }}",
        n = nondet.len()
    );
    for name in declared {
        if let Some(suffix) = name.strip_prefix("__VERIFIER_nondet_") {
            let ty = crate::symex::nondet_c_type(suffix).unwrap_or("long long");
            if ty == "_Bool" {
                let _ = writeln!(out, "_Bool {name}(void) {{ return (_Bool)(apc_next() & 1); }}");
            } else {
                let _ = writeln!(out, "{ty} {name}(void) {{ return ({ty})apc_next(); }}");
            }
        }
    }
    if declared.iter().any(|n| n == "__VERIFIER_assume") {
        out.push_str("void __VERIFIER_assume(int c) { if (!c) exit(3); }\n");
    }
    for s in stubs {
        let _ = writeln!(out, "long {s}() {{ return 0; }}");
    }
    out.push_str(
        "\nstatic void apc_flush(int sig) { __llvm_profile_write_file(); _exit(128 + sig); }\n\
void apc_test_start(void) {\n  int sigs[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM};\n  for (unsigned k = 0; k < sizeof sigs / sizeof *sigs; k++) signal(sigs[k], apc_flush);\n  alarm(10);\n}\n",
    );
    out
}

/// `T.target`: each target position with the text of its line and of the nearest non-blank
/// lines around it, by which `apc_reached` finds the line again. `file` is as the test's
/// directory reaches it; `lines` the source's lines.
pub fn target_file(positions: &[(String, u32, u32, Vec<String>)]) -> String {
    let mut out = String::from("# where the target is: a run passes when one of these positions ran; the line is found again by its text\n");
    for (file, line, col, lines) in positions {
        let at = (*line as usize).saturating_sub(1);
        let text = |k: usize| lines.get(k).map(|l| l.trim_end().to_string()).unwrap_or_default();
        let before = (0..at).rev().map(text).find(|l| !l.trim().is_empty()).unwrap_or_default();
        let after = (at + 1..lines.len()).map(text).find(|l| !l.trim().is_empty()).unwrap_or_default();
        let _ = write!(out, "file {file}\nline {line}\ncolumn {col}\ntext {}\nbefore {before}\nafter {after}\n", text(at));
    }
    out
}

/// Decides whether a test reached its target (see the module documentation).
pub const CHECKER: &str = r#"/* generated by apc-llvm: whether a regression test reached its target.
   Usage: apc_reached TEST.target COVERAGE.json NAME
   TEST.target names the target's line by its text and the lines around it (so that the line is
   found again after edits elsewhere) and its column; COVERAGE.json is the run's coverage from
   `llvm-cov export -format=text -skip-expansions -skip-functions`.
   Exit status 0 when one target position ran, 1 when none did or its line is gone. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t cap = 1 << 16, n = 0;
  char *s = malloc(cap + 1);
  size_t r;
  while (s && (r = fread(s + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) s = realloc(s, (cap *= 2) + 1);
  }
  fclose(f);
  if (s) s[n] = 0;
  return s;
}

/* The lines of `text`, trailing blanks and carriage returns cut. */
static char **split(char *text, long *count) {
  long cap = 1024, n = 0;
  char **lines = malloc(cap * sizeof *lines);
  for (char *p = text; p && *p;) {
    char *e = strchr(p, '\n');
    if (e) *e = 0;
    char *t = p + strlen(p);
    while (t > p && (t[-1] == ' ' || t[-1] == '\t' || t[-1] == '\r')) *--t = 0;
    if (n == cap) lines = realloc(lines, (cap *= 2) * sizeof *lines);
    lines[n++] = p;
    p = e ? e + 1 : 0;
  }
  *count = n;
  return lines;
}

static int blank(const char *s) { return strspn(s, " \t") == strlen(s); }

/* The current line (1-based) of the recorded one, 0 when gone, -1 when ambiguous. */
static long find_line(char **lines, long n, long was, const char *text, const char *before, const char *after) {
  long best = 0, best_score = -1, best_dist = 0, matches = 0;
  for (long i = 0; i < n; i++) {
    if (strcmp(lines[i], text) != 0) continue;
    matches++;
    long j = i - 1, k = i + 1;
    while (j >= 0 && blank(lines[j])) j--;
    while (k < n && blank(lines[k])) k++;
    long score = (strcmp(j >= 0 ? lines[j] : "", before) == 0) + (strcmp(k < n ? lines[k] : "", after) == 0);
    long dist = labs(i + 1 - was);
    if (score > best_score || (score == best_score && dist < best_dist)) best = i + 1, best_score = score, best_dist = dist;
  }
  if (matches > 1 && best_score == 0) return -1;
  return best;
}

/* The execution count at (line, col) of `file` in the coverage, -1 when the file is not in it. */
static long long count_at(const char *json, const char *file, long line, long col) {
  char want[PATH_MAX], got[PATH_MAX], name[PATH_MAX];
  if (!realpath(file, want)) return -1;
  for (const char *p = strstr(json, "\"filename\":\""); p; p = strstr(p + 1, "\"filename\":\"")) {
    const char *q = p + 12;
    size_t n = 0;
    while (*q && *q != '"' && n + 1 < sizeof name) {
      if (*q == '\\' && q[1]) q++;
      name[n++] = *q++;
    }
    name[n] = 0;
    if (!realpath(name, got) || strcmp(got, want) != 0) continue;
    const char *s = strstr(q, "\"segments\":[");
    if (!s) return 0;
    s += 12;
    long long count = 0;
    while (*s == '[') {
      long long v[6] = {0};
      s++;
      for (int k = 0; k < 6; k++) {
        if (*s == 't') v[k] = 1, s += 4;
        else if (*s == 'f') v[k] = 0, s += 5;
        else v[k] = strtoll(s, (char **)&s, 10);
        if (*s == ',') s++;
      }
      if (*s == ']') s++;
      if (*s == ',') s++;
      if (v[0] > line || (v[0] == line && v[1] > col)) break;
      count = v[3] ? v[2] : 0;
    }
    return count;
  }
  return -1;
}

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: apc_reached TEST.target COVERAGE.json NAME\n"); return 2; }
  char *target = slurp(argv[1]), *json = slurp(argv[2]);
  const char *test = argv[3];
  if (!target || !json) { printf("FAIL %s: cannot read %s\n", test, target ? argv[2] : argv[1]); return 1; }
  long n;
  char **t = split(target, &n);
  const char *file = 0, *text = "", *before = "", *after = "";
  long line = 0, col = 0, checked = 0;
  for (long i = 0; i <= n; i++) {
    const char *l = i < n ? t[i] : "file";
    if (strncmp(l, "file ", 5) == 0 || i == n) {
      if (file) {
        checked++;
        char *src = slurp(file);
        if (!src) { printf("FAIL %s: cannot read %s\n", test, file); return 1; }
        long lines_n;
        char **lines = split(src, &lines_n);
        long now = find_line(lines, lines_n, line, text, before, after);
        if (now == 0) { printf("FAIL %s: the target line is gone from %s (it was line %ld: %s)\n", test, file, line, text + strspn(text, " \t")); return 1; }
        if (now < 0) { printf("FAIL %s: %s has the target line `%s` several times and none in its old place; emit the test again\n", test, file, text + strspn(text, " \t")); return 1; }
        long long c = count_at(json, file, now, col);
        if (c > 0) { printf("PASS %s: reached %s:%ld:%ld (%lld time%s)\n", test, file, now, col, c, c == 1 ? "" : "s"); return 0; }
        printf("FAIL %s: the target %s:%ld:%ld did not run: %s\n", test, file, now, col, text + strspn(text, " \t"));
        if (i == n) return 1;
      }
      if (i < n) file = l + 5;
    } else if (strncmp(l, "line ", 5) == 0) line = atol(l + 5);
    else if (strncmp(l, "column ", 7) == 0) col = atol(l + 7);
    else if (strncmp(l, "text ", 5) == 0) text = l + 5;
    else if (strncmp(l, "before ", 7) == 0) before = l + 7;
    else if (strncmp(l, "after ", 6) == 0) after = l + 6;
  }
  if (!checked) printf("FAIL %s: %s names no target\n", test, argv[1]);
  return 1;
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_literals_of_their_type() {
        assert_eq!(int_literal(0xffff_ffff, 32, true), "-1");
        assert_eq!(int_literal(0xffff_ffff, 32, false), "4294967295");
        assert_eq!(int_literal(u64::MAX, 64, false), "18446744073709551615ull");
        assert_eq!(int_literal(1 << 63, 64, true), "(-9223372036854775807LL - 1)");
    }

    #[test]
    fn the_target_file_keeps_the_lines_around_the_target() {
        let lines: Vec<String> = ["int f(int x) {", "  if (x == 3)", "", "    return 1;", "  return 0;", "}"].map(String::from).to_vec();
        let t = target_file(&[("../f.c".into(), 4, 5, lines)]);
        assert!(t.contains("file ../f.c\nline 4\ncolumn 5\ntext     return 1;\nbefore   if (x == 3)\nafter   return 0;\n"), "{t}");
    }
}
