//! Reading INPUT: `.c` (compiled with clang first), `.ll` (textual IR) or `.bc` (bitcode).

use crate::error::{Error, Result};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The clang flags that make bitcode fit for analysis: debug lines for `--line`, IR value names
/// for `--block`, and no `optnone` so that mem2reg and inlining run.
pub const CLANG_ANALYSIS_FLAGS: &[&str] =
    &["-g", "-O0", "-Xclang", "-disable-O0-optnone", "-fno-discard-value-names", "-emit-llvm", "-c"];

/// Diagnostics that clang 19 makes errors in C99 and later but gcc (before 14) only warns
/// about: C89-era code (implicit function declarations, implicit `int`, `return;` in an `int`
/// function) builds with gcc, so it must build here. The user's own `-Werror=...` comes after
/// these and wins.
pub const CLANG_LENIENT_FLAGS: &[&str] = &[
    "-Wno-error=implicit-function-declaration",
    "-Wno-error=implicit-int",
    "-Wno-error=return-mismatch",
    "-Wno-error=int-conversion",
    "-Wno-error=incompatible-pointer-types",
    "-Wno-error=incompatible-function-pointer-types",
];

/// How to give a `.c` input the flags of its project, for clang's errors.
pub const FLAGS_HINT: &str = "pass the project's flags with -I DIR, -D NAME[=VAL], -U NAME, -include FILE, --std STD or --cflags 'ARGS', or its compile_commands.json with -p DIR";

/// The clang executable: `$APC_CLANG`, else `clang-19` on PATH, else LLVM 19's own directory.
pub fn clang_path() -> PathBuf {
    if let Some(p) = std::env::var_os("APC_CLANG") {
        return PathBuf::from(p);
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let c = dir.join("clang-19");
        if c.is_file() {
            return c;
        }
    }
    PathBuf::from("/usr/lib/llvm-19/bin/clang")
}

/// An LLVM tool of the same installation as clang (`llvm-objcopy` next to clang-19).
pub fn llvm_tool(name: &str) -> PathBuf {
    if let Some(dir) = std::fs::canonicalize(clang_path()).ok().and_then(|c| c.parent().map(Path::to_path_buf)) {
        let p = dir.join(name);
        if p.is_file() {
            return p;
        }
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let p = dir.join(format!("{name}-19"));
        if p.is_file() {
            return p;
        }
    }
    PathBuf::from(format!("/usr/lib/llvm-19/bin/{name}"))
}

/// Compiles a C file to bitcode in `out_dir` and returns the bitcode's path.
pub fn compile_c(source: &Path, out_dir: &Path) -> Result<PathBuf> {
    compile_c_with(source, out_dir, "", &[], None)
}

/// [`compile_c`] with more clang flags (after [`CLANG_LENIENT_FLAGS`], before the analysis
/// flags, which win), in directory `cwd` when given; `prefix` keeps the bitcode names of
/// several inputs apart.
pub fn compile_c_with(source: &Path, out_dir: &Path, prefix: &str, flags: &[String], cwd: Option<&Path>) -> Result<PathBuf> {
    let stem = source.file_stem().and_then(|s| s.to_str()).unwrap_or("input");
    let out = out_dir.join(format!("{prefix}{stem}.bc"));
    let clang = clang_path();
    let mut cmd = Command::new(&clang);
    cmd.args(CLANG_LENIENT_FLAGS).args(flags).args(CLANG_ANALYSIS_FLAGS).arg(source).arg("-o").arg(&out);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let output = crate::cleanup::output(&mut cmd, out_dir)
        .map_err(|e| Error::internal(format!("cannot run {}: {e}", clang.display())))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().find(|l| l.contains("error: ")).unwrap_or("").trim();
        return Err(Error::bad_input(format!(
            "{}: clang failed to compile it: {} ({FLAGS_HINT})",
            source.display(),
            if first.is_empty() { "see clang's output" } else { first }
        )));
    }
    Ok(out)
}

/// What kind of file INPUT is, from its extension and first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    C,
    Bitcode,
    TextIr,
}

pub fn classify(path: &Path, head: &[u8]) -> InputKind {
    let is_bitcode_magic =
        head.starts_with(b"BC\xC0\xDE") || head.starts_with(&[0xDE, 0xC0, 0x17, 0x0B]);
    match path.extension().and_then(|e| e.to_str()) {
        Some("c") | Some("i") => InputKind::C,
        _ if is_bitcode_magic => InputKind::Bitcode,
        Some("bc") => InputKind::Bitcode,
        _ => InputKind::TextIr,
    }
}

/// Parses a `.bc` or `.ll` file into a module of `ctx`.
pub fn parse_module<'ctx>(ctx: &'ctx Context, path: &Path) -> Result<Module<'ctx>> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::bad_input(format!("{}: cannot read: {e}", path.display())))?;
    if bytes.is_empty() {
        return Err(Error::bad_input(format!("{}: file is empty", path.display())));
    }
    let kind = classify(path, &bytes[..bytes.len().min(4)]);
    let buf = MemoryBuffer::create_from_memory_range_copy(&bytes, "input");
    let parsed = match kind {
        InputKind::Bitcode => ctx.create_module_from_ir(buf).map_err(|e| {
            let msg = e.to_string();
            let msg = msg.lines().next().unwrap_or("").trim();
            Error::bad_input(format!("{}: not valid LLVM bitcode: {msg}", path.display()))
        }),
        InputKind::TextIr => ctx.create_module_from_ir(buf).map_err(|e| {
            let msg = e.to_string();
            let msg = msg.lines().next().unwrap_or("").trim().to_string();
            Error::bad_input(format!(
                "{}: neither LLVM bitcode nor textual LLVM IR ({msg})",
                path.display()
            ))
        }),
        InputKind::C => unreachable!("C files are compiled before parsing"),
    }?;
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_uses_extension_then_magic() {
        assert_eq!(classify(Path::new("a.c"), b""), InputKind::C);
        assert_eq!(classify(Path::new("a.bc"), b"xxxx"), InputKind::Bitcode);
        assert_eq!(classify(Path::new("a.out"), b"BC\xC0\xDE"), InputKind::Bitcode);
        assert_eq!(classify(Path::new("a.ll"), b"; Mo"), InputKind::TextIr);
    }
}
