//! The shared libraries of a dynamically linked replay program, for its jail.
//!
//! Runs are confined to a directory that holds the executable and nothing else (see
//! [`super::sandbox`]). A dynamically linked program (the sanitized flavour: ASan's runtime
//! cannot be linked statically) also needs its program interpreter and the libraries it and they
//! name (`DT_NEEDED`): they are found as the dynamic loader would find them in the default
//! directories, copied once into the build directory, and hard-linked into every run's jail
//! under the same absolute paths. The ELF headers are read with `llvm-readelf`; nothing of the
//! program runs outside the sandbox.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Directories searched for a needed library (the loader's defaults on Debian's x86-64).
const SEARCH: &[&str] = &["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"];

/// Where the jail has the libraries found by name: a directory the loader searches by default.
const JAIL_LIBRARY_DIR: &str = "lib/x86_64-linux-gnu";

/// At most this many libraries (a chain of `DT_NEEDED` that goes on is not a program we built).
const MAX_LIBRARIES: usize = 32;

/// The interpreter and the libraries of `exe`, transitively, copied into `store`: pairs of
/// (the copy, its path relative to a jail's root).
pub fn gather(exe: &Path, store: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    std::fs::create_dir_all(store).map_err(|e| Error::internal(format!("creating {}: {e}", store.display())))?;
    let (interpreter, mut pending) = headers(exe)?;
    let mut found: Vec<(PathBuf, PathBuf)> = vec![];
    if let Some(interp) = interpreter {
        let rel = PathBuf::from(interp.trim_start_matches('/'));
        found.push((copy_in(Path::new(&interp), store)?, rel));
    }
    let mut seen: Vec<String> = vec![];
    while let Some(name) = pending.pop() {
        if seen.contains(&name) || name.contains('/') {
            continue;
        }
        if seen.len() >= MAX_LIBRARIES {
            return Err(Error::internal(format!("{} needs more than {MAX_LIBRARIES} shared libraries", exe.display())));
        }
        seen.push(name.clone());
        let path = SEARCH
            .iter()
            .map(|d| Path::new(d).join(&name))
            .find(|p| p.is_file())
            .ok_or_else(|| Error::internal(format!("the shared library {name} that {} needs was not found", exe.display())))?;
        let rel = Path::new(JAIL_LIBRARY_DIR).join(&name);
        if !found.iter().any(|(_, r)| *r == rel) {
            found.push((copy_in(&path, store)?, rel));
        }
        pending.extend(headers(&path)?.1);
    }
    Ok(found)
}

/// Hard-links (or copies) `libraries` into `jail`.
pub fn install(libraries: &[(PathBuf, PathBuf)], jail: &Path) -> Result<()> {
    for (copy, rel) in libraries {
        let at = jail.join(rel);
        if let Some(dir) = at.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::internal(format!("creating {}: {e}", dir.display())))?;
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755));
        }
        if std::fs::hard_link(copy, &at).is_err() {
            std::fs::copy(copy, &at).map_err(|e| Error::internal(format!("copying {}: {e}", copy.display())))?;
        }
    }
    Ok(())
}

/// Copies `lib` (following links) into `store` under a unique name; readable by a run's uid.
fn copy_in(lib: &Path, store: &Path) -> Result<PathBuf> {
    let name = lib.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dest = store.join(format!("{}-{name}", std::fs::read_dir(store).map_or(0, |d| d.count())));
    std::fs::copy(lib, &dest).map_err(|e| Error::internal(format!("copying {}: {e}", lib.display())))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).map_err(|e| Error::internal(format!("chmod {}: {e}", dest.display())))?;
    Ok(dest)
}

/// The program interpreter and the `DT_NEEDED` names of an ELF file.
fn headers(file: &Path) -> Result<(Option<String>, Vec<String>)> {
    let readelf = crate::load::input::llvm_tool("llvm-readelf");
    let out = std::process::Command::new(&readelf)
        .args(["--needed-libs", "--program-headers"])
        .arg(file)
        .output()
        .map_err(|e| Error::internal(format!("cannot run {}: {e}", readelf.display())))?;
    if !out.status.success() {
        return Err(Error::internal(format!("{} {}: {}", readelf.display(), file.display(), super::first_error(&out.stderr))));
    }
    Ok(parse_headers(&String::from_utf8_lossy(&out.stdout)))
}

/// [`headers`] from `llvm-readelf --needed-libs --program-headers` output.
fn parse_headers(text: &str) -> (Option<String>, Vec<String>) {
    let interpreter = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("[Requesting program interpreter: ")?.strip_suffix(']').map(str::to_string));
    let needed = match text.split_once("NeededLibraries [") {
        Some((_, rest)) => rest.lines().map(str::trim).take_while(|l| *l != "]").filter(|l| !l.is_empty()).map(str::to_string).collect(),
        None => vec![],
    };
    (interpreter, needed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_interpreter_and_the_needed_libraries() {
        let text = "Program Headers:\n  INTERP 0x000318 ...\n      [Requesting program interpreter: /lib64/ld-linux-x86-64.so.2]\n  LOAD ...\nNeededLibraries [\n  libc.so.6\n  libm.so.6\n]\n";
        let (interp, needed) = parse_headers(text);
        assert_eq!(interp.as_deref(), Some("/lib64/ld-linux-x86-64.so.2"));
        assert_eq!(needed, vec!["libc.so.6", "libm.so.6"]);
        assert_eq!(parse_headers("NeededLibraries [\n]\n"), (None, vec![]));
    }

    #[test]
    fn a_system_library_brings_what_it_needs() {
        let Some(libm) = SEARCH.iter().map(|d| Path::new(d).join("libm.so.6")).find(|p| p.is_file()) else { return };
        let store = tempfile::tempdir().unwrap();
        let libs = gather(&libm, store.path()).expect("libm's libraries");
        let rels: Vec<String> = libs.iter().map(|(_, r)| r.display().to_string()).collect();
        assert!(rels.contains(&"lib/x86_64-linux-gnu/libc.so.6".to_string()), "{rels:?}");
        let jail = tempfile::tempdir().unwrap();
        install(&libs, jail.path()).unwrap();
        assert!(jail.path().join("lib/x86_64-linux-gnu/libc.so.6").is_file());
    }
}
