//! The native toolchain, run without its driver's start-up where that is safe: a small
//! persistent cache of what clang's driver would do (one native build per analysis,
//! as fast as it can be).
//!
//! Starting the clang driver costs 30–40 ms of the 2 cores a small analysis has (it loads
//! libclang-cpp and LLVM), before it does anything. Two of a build's steps need nothing of it:
//!
//! - **Links.** For a link, the driver only computes the linker's command line (crt files,
//!   library paths, `-lc`...) and runs the linker. The line depends on the installation and the
//!   flags, not on the objects, so it is asked of the driver once (`clang -###`), kept with the
//!   build directory written as a placeholder, and then the linker is run directly.
//! - **Generated drivers.** The replay and fuzzing drivers are C generated from the analysed
//!   function's signature: the same source for every analysis of that function. Their objects
//!   are kept by a hash of the source, the flags and the compiler.
//!
//! - **Shared runtimes.** libFuzzer's runtime is an archive of 2 MB with libstdc++ behind it:
//!   linked statically into every fuzzing executable, it cost 50 ms of a 60 ms build. Linked
//!   once into a shared object kept here ([`kept_shared_object`]), each fuzzing executable is a
//!   dynamic link of two small objects (about 10 ms).
//!
//! A kept line that names `ld.lld` runs the statically linked lld that `build.rs` built, when
//! there is one ([`linker`]): the same lld 19, starting in 5-12 ms of CPU instead of 10-30 (the system's
//! loads libLLVM-19.so).
//!
//! Both are keyed by the compiler's identity (its canonical path, size and modification time),
//! so an upgraded clang starts afresh. A kept link line that fails for any reason other than
//! undefined symbols (which the callers answer with stubs) is dropped and the link runs
//! through the driver. The cache is `$APC_LLVM_CACHE`, or `$XDG_CACHE_HOME/apc-llvm`, or
//! `~/.cache/apc-llvm`; `APC_LLVM_CACHE=off` turns it off. Entries are written to a
//! temporary file and renamed, so concurrent analyses never see half an entry.

use super::run_tool;
use crate::error::Result;
use crate::load::clang_path;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use tracing::debug;

/// What the build directory's path is replaced with in kept link lines.
const DIR: &str = "@APC_BUILD_DIR@";
/// Bumped when the format of an entry changes.
const VERSION: &str = "apc-llvm toolchain cache 1";

/// The cache directory, `None` when turned off or not writable.
fn cache_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = match std::env::var_os("APC_LLVM_CACHE") {
            Some(v) if v == "off" || v == "0" || v.is_empty() => return None,
            Some(v) => PathBuf::from(v),
            None => match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
                Some(x) => PathBuf::from(x).join("apc-llvm"),
                None => PathBuf::from(std::env::var_os("HOME")?).join(".cache").join("apc-llvm"),
            },
        };
        match std::fs::create_dir_all(&dir) {
            Ok(()) => Some(dir),
            Err(e) => {
                debug!(dir = %dir.display(), "no toolchain cache: {e}");
                None
            }
        }
    })
    .as_deref()
}

/// The compiler's identity: its canonical path, size and modification time.
fn compiler_identity() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let clang = clang_path();
        let real = std::fs::canonicalize(&clang).unwrap_or(clang);
        let meta = std::fs::metadata(&real).ok();
        let len = meta.as_ref().map_or(0, |m| m.len());
        let mtime = meta.and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
        format!("{VERSION}\n{}\n{len}\n{mtime}", real.display())
    })
}

/// A hex key over the compiler, `args` (the build directory `dir` abstracted) and `extra`.
fn key(args: &[&OsStr], dir: &Path, extra: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(compiler_identity().as_bytes());
    for a in args {
        h.update(b"\0");
        h.update(abstracted(a, dir).as_bytes());
    }
    h.update(b"\0\0");
    h.update(extra);
    h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// `arg` with the build directory written as [`DIR`].
fn abstracted(arg: &OsStr, dir: &Path) -> String {
    let d = dir.to_string_lossy();
    arg.to_string_lossy().replace(d.as_ref(), DIR)
}

/// Writes `content` to `path` atomically (a temporary file in the same directory, renamed).
fn store(path: &Path, content: &[u8]) {
    let Some(parent) = path.parent() else { return };
    let written = tempfile::NamedTempFile::new_in(parent).and_then(|mut f| {
        std::io::Write::write_all(&mut f, content)?;
        f.persist(path).map_err(|e| e.error)
    });
    if let Err(e) = written {
        debug!(path = %path.display(), "toolchain cache entry not written: {e}");
    }
}

/// Link lines known in this process: (key, line with [`DIR`]).
static LINES: OnceLock<Mutex<HashMap<String, Vec<String>>>> = OnceLock::new();

/// Links as `clang ARGS` would (`args` are clang's, for a link of objects and archives only),
/// with every input and the output in `dir`: the linker directly when its line is known.
pub(crate) fn link(args: &[&OsStr], dir: &Path) -> Result<std::process::Output> {
    let k = key(args, dir, b"link");
    let lines = LINES.get_or_init(Default::default);
    let known = lines.lock().unwrap_or_else(|e| e.into_inner()).get(&k).cloned();
    let entry = cache_dir().map(|c| c.join(format!("link-{k}")));
    let known = known.or_else(|| {
        let text = std::fs::read_to_string(entry.as_ref()?).ok()?;
        let line: Vec<String> = text.lines().map(str::to_string).collect();
        (!line.is_empty()).then_some(line)
    });
    if let Some(line) = known {
        let out = run_line(&line, dir)?;
        // A link killed by a signal (the run ended before it, see `cleanup::finish`) says
        // nothing of the line: dropping it made the next analysis ask the driver again (a
        // clang start, 30-40 ms of CPU) after every run that ended before its replay build.
        let killed = std::os::unix::process::ExitStatusExt::signal(&out.status).is_some();
        if out.status.success() || killed || String::from_utf8_lossy(&out.stderr).contains("undefined symbol") {
            lines.lock().unwrap_or_else(|e| e.into_inner()).insert(k, line);
            return Ok(out);
        }
        debug!(stderr = %String::from_utf8_lossy(&out.stderr), "a kept link line failed; the clang driver links");
        lines.lock().unwrap_or_else(|e| e.into_inner()).remove(&k);
        if let Some(e) = &entry {
            let _ = std::fs::remove_file(e);
        }
        return run_tool(&clang_path(), args, dir);
    }
    // Ask the driver for the line, then run it (what the driver itself would have done).
    let mut probe: Vec<&OsStr> = vec!["-###".as_ref()];
    probe.extend_from_slice(args);
    let shown = run_tool(&clang_path(), &probe, dir)?;
    let line = match (shown.status.success(), linker_line(&String::from_utf8_lossy(&shown.stderr))) {
        (true, Some(line)) => line,
        _ => return run_tool(&clang_path(), args, dir),
    };
    let line: Vec<String> = line.iter().map(|a| abstracted(a.as_ref(), dir)).collect();
    let out = run_line(&line, dir)?;
    if out.status.success() {
        if let Some(e) = &entry {
            store(e, line.join("\n").as_bytes());
        }
        lines.lock().unwrap_or_else(|e| e.into_inner()).insert(k, line);
    }
    Ok(out)
}

/// Runs a kept link line in `dir`.
fn run_line(line: &[String], dir: &Path) -> Result<std::process::Output> {
    let d = dir.to_string_lossy();
    let args: Vec<String> = line[1..].iter().map(|a| a.replace(DIR, &d)).collect();
    let refs: Vec<&OsStr> = args.iter().map(|a| a.as_ref()).collect();
    run_tool(&linker(Path::new(&line[0].replace(DIR, &d))), &refs, dir)
}

/// The program to run for the linker `named` by clang's driver: the statically linked lld of
/// `build.rs` in place of any `ld.lld` (a link takes 10 ms instead of 21 for a replay
/// executable, 27 instead of 38 for a fuzzing one), else `named` itself.
fn linker(named: &Path) -> PathBuf {
    static STATIC_LLD: OnceLock<Option<PathBuf>> = OnceLock::new();
    let fast = STATIC_LLD.get_or_init(|| {
        let built = Path::new(env!("APC_LLVM_STATIC_LLD"));
        (!built.as_os_str().is_empty() && built.is_file()).then(|| built.to_path_buf())
    });
    match fast {
        Some(fast) if named.file_name() == Some(OsStr::new("ld.lld")) => fast.clone(),
        _ => named.to_path_buf(),
    }
}

/// The one command of `clang -###` output (its stderr), when there is exactly one: the
/// linker's, each argument unquoted.
fn linker_line(shown: &str) -> Option<Vec<String>> {
    let commands: Vec<&str> = shown.lines().filter(|l| l.starts_with(" \"")).collect();
    let [command] = commands.as_slice() else { return None };
    let args = unquote(command)?;
    // A link that needs no compile has the linker as its only command; anything else (a cc1
    // line) means the arguments were not a plain link.
    let tool = Path::new(args.first()?).file_name()?.to_string_lossy().to_string();
    (tool.contains("ld") && !args.iter().any(|a| a == "-cc1")).then_some(args)
}

/// The arguments of one `-###` command line: each in double quotes, with `\"`, `\\` and `\$`
/// escaped.
fn unquote(line: &str) -> Option<Vec<String>> {
    let mut args = vec![];
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        match chars.next() {
            None => return Some(args),
            Some('"') => {}
            Some(_) => return None,
        }
        let mut arg = String::new();
        loop {
            match chars.next()? {
                '\\' => arg.push(chars.next()?),
                '"' => break,
                c => arg.push(c),
            }
        }
        args.push(arg);
    }
}

/// Compiles `source` (already written to the file `args` name) as `clang ARGS` would, with its
/// object at `obj`: a copy of the kept object when this compiler compiled the same source with
/// the same flags before.
pub(crate) fn compile_generated(args: &[&OsStr], source: &[u8], obj: &Path, dir: &Path) -> Result<std::process::Output> {
    let entry = cache_dir().map(|c| c.join(format!("obj-{}.o", key(args, dir, source))));
    if let Some(e) = &entry {
        if std::fs::copy(e, obj).is_ok() {
            return Ok(success());
        }
    }
    let out = run_tool(&clang_path(), args, dir)?;
    if out.status.success() {
        if let (Some(e), Ok(bytes)) = (&entry, std::fs::read(obj)) {
            store(e, &bytes);
        }
    }
    Ok(out)
}

/// A shared object linked by `clang -shared ARGS` (archives and libraries, no sources), kept in
/// the cache as `STEM-KEY.so`: linked once per compiler, arguments and input files (the size
/// and modification time of every argument that names a file, so an upgraded runtime archive
/// links afresh), then found again. `None` without a cache, or when the link fails.
pub(crate) fn kept_shared_object(stem: &str, args: &[&OsStr]) -> Option<PathBuf> {
    let cache = cache_dir()?;
    let mut inputs = Vec::new();
    for a in args {
        if let Ok(meta) = std::fs::metadata(a) {
            let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
            inputs.extend(format!("{}\0{}\0{mtime}\0", Path::new(a).display(), meta.len()).into_bytes());
        }
    }
    let path = cache.join(format!("{stem}-{}.so", key(args, cache, &[b"shared\0".as_slice(), &inputs].concat())));
    if path.is_file() {
        return Some(path);
    }
    let temporary = tempfile::Builder::new().prefix(stem).suffix(".so.tmp").tempfile_in(cache).ok()?;
    let mut full: Vec<&OsStr> = vec!["-shared".as_ref(), "-o".as_ref(), temporary.path().as_os_str()];
    full.extend_from_slice(args);
    let out = run_tool(&clang_path(), &full, cache).ok()?;
    if !out.status.success() {
        debug!(stderr = %String::from_utf8_lossy(&out.stderr), "linking the shared object {stem} failed");
        return None;
    }
    // Renamed into place: an analysis running beside this one sees the whole file or none.
    temporary.persist(&path).ok()?;
    debug!(path = %path.display(), "linked a shared object for the toolchain cache");
    Some(path)
}

/// The output of a command that succeeded silently.
fn success() -> std::process::Output {
    use std::os::unix::process::ExitStatusExt;
    std::process::Output { status: std::process::ExitStatus::from_raw(0), stdout: vec![], stderr: vec![] }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_arguments_are_read_back() {
        let line = r#" "/usr/bin/ld.lld" "-o" "/tmp/a b/prog" "x\"y" "back\\slash" "\$HOME""#;
        assert_eq!(
            unquote(line).unwrap(),
            ["/usr/bin/ld.lld", "-o", "/tmp/a b/prog", "x\"y", "back\\slash", "$HOME"].map(String::from).to_vec()
        );
        assert_eq!(unquote(r#" "unterminated"#), None);
        assert_eq!(unquote(" bare"), None);
    }

    #[test]
    fn only_a_lone_linker_command_is_kept() {
        let link = "clang version 19\nTarget: x86_64-pc-linux-gnu\n \"/usr/lib/llvm-19/bin/ld.lld\" \"-static\" \"-o\" \"p\"\n";
        assert_eq!(linker_line(link).unwrap()[0], "/usr/lib/llvm-19/bin/ld.lld");
        let compile_and_link = " \"/usr/lib/llvm-19/bin/clang\" \"-cc1\" \"x.c\"\n \"/usr/bin/ld\" \"x.o\"\n";
        assert_eq!(linker_line(compile_and_link), None);
    }

    /// A link through a kept line gives the program the clang driver gives, and the line is
    /// the driver's own (asked with `-###`), with the build directory abstracted.
    #[test]
    fn a_kept_link_line_links_like_the_driver() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("m.c"), "int main(void) { return 7; }\n").unwrap();
        let src = d.join("m.c");
        let obj = d.join("m.o");
        let st = std::process::Command::new(clang_path()).arg("-c").arg(&src).arg("-o").arg(&obj).status().unwrap();
        assert!(st.success());
        let mut args = super::super::static_link_args();
        let exe = d.join("m");
        args.extend([obj.as_os_str(), "-o".as_ref(), exe.as_os_str()]);
        for _ in 0..2 {
            let _ = std::fs::remove_file(&exe);
            let out = link(&args, d).unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(std::process::Command::new(&exe).status().unwrap().code(), Some(7));
        }
        let k = key(&args, d, b"link");
        let line = LINES.get().unwrap().lock().unwrap().get(&k).cloned().expect("the line is kept");
        assert!(Path::new(&line[0]).file_name().unwrap().to_string_lossy().contains("ld"), "{line:?}");
        assert!(line.iter().any(|a| a == &format!("{DIR}/m")), "{line:?}");
        assert!(!line.iter().any(|a| a.contains(d.to_str().unwrap())), "{line:?}");
    }
}
