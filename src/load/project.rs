//! Whole projects: several inputs (`.c`, `.bc`, `.ll`) linked into one module, and C files
//! compiled with the flags a `compile_commands.json` gives them (`-p DIR`).
//!
//! Only the flags that change what the code means are taken from the database (`-I`, `-D`,
//! `-U`, `-include`, `-isystem`, `-iquote`, `-std=`, `-f(no-)signed-char`, `-funsigned-char`):
//! optimisation, warnings, sanitizers and output options would fight the flags the analysis
//! needs ([`super::input::CLANG_ANALYSIS_FLAGS`]). Each file is compiled in its entry's
//! directory, as the build did.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// One C file of a compilation database with the flags kept for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileEntry {
    /// Absolute path of the source file.
    pub file: PathBuf,
    /// The directory the build compiled it in.
    pub directory: PathBuf,
    pub flags: Vec<String>,
}

/// Splits a shell command line into words (quotes and backslashes as a POSIX shell reads them,
/// no expansions).
pub fn shell_words(cmd: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut any = false;
    let mut chars = cmd.chars();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => {
                single = !single;
                any = true;
            }
            '"' if !single => {
                double = !double;
                any = true;
            }
            '\\' if !single => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    any = true;
                }
            }
            c if c.is_whitespace() && !single && !double => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// The meaning-changing flags of a compiler command line (see the module docs); relative
/// include paths are made absolute against `directory`.
fn kept_flags(args: &[String], directory: &Path) -> Vec<String> {
    let abs = |p: &str| -> String {
        let path = Path::new(p);
        if path.is_absolute() { p.to_string() } else { directory.join(path).to_string_lossy().into_owned() }
    };
    let mut out = vec![];
    let mut i = 1; // args[0] is the compiler
    while i < args.len() {
        let a = &args[i];
        let with_path = ["-I", "-isystem", "-iquote", "-include"];
        if let Some(flag) = with_path.iter().find(|f| a == *f) {
            if let Some(v) = args.get(i + 1) {
                out.push(flag.to_string());
                out.push(abs(v));
            }
            i += 2;
            continue;
        }
        if let Some(v) = a.strip_prefix("-I") {
            out.push(format!("-I{}", abs(v)));
        } else if (a == "-D" || a == "-U") && i + 1 < args.len() {
            out.push(a.clone());
            out.push(args[i + 1].clone());
            i += 1;
        } else if a.starts_with("-D") || a.starts_with("-U") || a.starts_with("-std=") || ["-fsigned-char", "-funsigned-char", "-fno-signed-char", "-fno-unsigned-char"].contains(&a.as_str()) {
            out.push(a.clone());
        }
        i += 1;
    }
    out
}

/// Reads `compile_commands.json` from `path` (the file, or a directory holding it): the C
/// files it compiles, with their kept flags.
pub fn read_compile_commands(path: &Path) -> Result<Vec<CompileEntry>> {
    let file = if path.is_dir() { path.join("compile_commands.json") } else { path.to_path_buf() };
    let text = std::fs::read_to_string(&file).map_err(|e| Error::bad_input(format!("-p {}: cannot read {}: {e}", path.display(), file.display())))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::bad_input(format!("{}: not a compilation database: {e}", file.display())))?;
    let entries = json.as_array().ok_or_else(|| Error::bad_input(format!("{}: not a compilation database (expected a JSON array)", file.display())))?;
    let mut out: Vec<CompileEntry> = vec![];
    for (k, e) in entries.iter().enumerate() {
        let bad = |what: &str| Error::bad_input(format!("{}: entry {k}: {what}", file.display()));
        let directory = PathBuf::from(e["directory"].as_str().ok_or_else(|| bad("no \"directory\""))?);
        let src = e["file"].as_str().ok_or_else(|| bad("no \"file\""))?;
        let src_path = if Path::new(src).is_absolute() { PathBuf::from(src) } else { directory.join(src) };
        if !matches!(src_path.extension().and_then(|x| x.to_str()), Some("c")) {
            continue; // C++ and assembly are not analysed
        }
        let args: Vec<String> = match (&e["arguments"], &e["command"]) {
            (serde_json::Value::Array(a), _) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            (_, serde_json::Value::String(c)) => shell_words(c),
            _ => return Err(bad("neither \"arguments\" nor \"command\"")),
        };
        if !out.iter().any(|o| o.file == src_path) {
            out.push(CompileEntry { file: src_path, flags: kept_flags(&args, &directory), directory });
        }
    }
    if out.is_empty() {
        return Err(Error::bad_input(format!("{}: no C file in the compilation database", file.display())));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_follow_quotes_and_escapes() {
        assert_eq!(shell_words(r#"cc -DNAME="a b" -I 'x y' a\ b.c"#), vec!["cc", "-DNAME=a b", "-I", "x y", "a b.c"]);
        assert_eq!(shell_words("  cc   -c  "), vec!["cc", "-c"]);
    }

    #[test]
    fn only_meaning_changing_flags_are_kept_with_absolute_includes() {
        let args: Vec<String> = "gcc -O2 -Wall -Iinc -I /abs -D X=1 -DY -std=c99 -fsanitize=address -o x.o -c src/a.c -funsigned-char"
            .split(' ')
            .map(str::to_string)
            .collect();
        assert_eq!(
            kept_flags(&args, Path::new("/proj")),
            vec!["-I/proj/inc", "-I", "/abs", "-D", "X=1", "-DY", "-std=c99", "-funsigned-char"]
        );
    }

    #[test]
    fn databases_are_read_with_commands_or_arguments() {
        let d = tempfile::tempdir().unwrap();
        let db = format!(
            r#"[{{"directory": "{0}", "command": "cc -DA=1 -c a.c", "file": "a.c"}},
                {{"directory": "{0}", "arguments": ["cc", "-Iinc", "-c", "b.c"], "file": "{0}/b.c"}},
                {{"directory": "{0}", "command": "c++ -c x.cpp", "file": "x.cpp"}}]"#,
            d.path().display()
        );
        std::fs::write(d.path().join("compile_commands.json"), db).unwrap();
        let e = read_compile_commands(d.path()).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].file, d.path().join("a.c"));
        assert_eq!(e[0].flags, vec!["-DA=1"]);
        assert_eq!(e[1].flags, vec![format!("-I{}/inc", d.path().display())]);
        std::fs::write(d.path().join("compile_commands.json"), "{}").unwrap();
        assert_eq!(read_compile_commands(d.path()).unwrap_err().exit_status(), 2);
    }
}
