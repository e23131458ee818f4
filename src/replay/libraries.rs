//! The shared libraries of a dynamically linked replay program, for its jail.
//!
//! Runs are confined to a directory that holds the executable and nothing else (see
//! [`super::sandbox`]). A dynamically linked program (the sanitized flavour: ASan's runtime
//! cannot be linked statically) also needs its program interpreter and the libraries it and they
//! name (`DT_NEEDED`): they are found as the dynamic loader would find them in the default
//! directories, copied once into the build directory, and hard-linked into every run's jail
//! under the same absolute paths. The ELF headers are read in this process
//! ([`super::elf::dynamic_needs_of`]); nothing of the program runs outside the sandbox. The
//! fuzzing executable links libFuzzer as a shared object of the toolchain cache, which is no
//! system library: it is named to [`gather`] with where it is.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Directories searched for a needed library (the loader's defaults on Debian's x86-64).
const SEARCH: &[&str] = &["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"];

/// Where the jail has the libraries found by name: a directory the loader searches by default.
const JAIL_LIBRARY_DIR: &str = "lib/x86_64-linux-gnu";

/// At most this many libraries (a chain of `DT_NEEDED` that goes on is not a program we built).
const MAX_LIBRARIES: usize = 32;

/// The interpreter and the libraries of `exe`, transitively, copied into `store`: pairs of
/// (the copy, its path relative to a jail's root). A needed name in `known` is the file given
/// there, not one of the system's directories.
pub fn gather(exe: &Path, store: &Path, known: &[(&str, &Path)]) -> Result<Vec<(PathBuf, PathBuf)>> {
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
        let path = known
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| p.to_path_buf())
            .or_else(|| SEARCH.iter().map(|d| Path::new(d).join(&name)).find(|p| p.is_file()))
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
    let needs = super::elf::dynamic_needs_of(file).map_err(|e| Error::internal(format!("reading {}: {e}", file.display())))?;
    Ok((needs.interpreter, needs.needed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_system_library_brings_what_it_needs() {
        let Some(libm) = SEARCH.iter().map(|d| Path::new(d).join("libm.so.6")).find(|p| p.is_file()) else { return };
        let store = tempfile::tempdir().unwrap();
        let libs = gather(&libm, store.path(), &[]).expect("libm's libraries");
        let rels: Vec<String> = libs.iter().map(|(_, r)| r.display().to_string()).collect();
        assert!(rels.contains(&"lib/x86_64-linux-gnu/libc.so.6".to_string()), "{rels:?}");
        let jail = tempfile::tempdir().unwrap();
        install(&libs, jail.path()).unwrap();
        assert!(jail.path().join("lib/x86_64-linux-gnu/libc.so.6").is_file());
    }

    /// A library no system directory has is taken from where `known` says, under its soname.
    #[test]
    fn a_known_library_comes_from_where_it_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("mine.c"), "int mine(void) { return 7; }\n").unwrap();
        std::fs::write(d.join("main.c"), "int mine(void);\nint main(void) { return mine(); }\n").unwrap();
        let clang = crate::load::clang_path();
        let so = d.join("built-mine.so");
        let st = std::process::Command::new(&clang).args(["-shared", "-fPIC", "-Wl,-soname,libmine.so", "-o"]).arg(&so).arg(d.join("mine.c")).status().unwrap();
        assert!(st.success());
        let exe = d.join("main");
        let st = std::process::Command::new(&clang).arg(d.join("main.c")).arg(&so).arg("-o").arg(&exe).status().unwrap();
        assert!(st.success());
        assert!(gather(&exe, &d.join("store"), &[]).is_err(), "libmine.so is in no system directory");
        let libs = gather(&exe, &d.join("store"), &[("libmine.so", &so)]).unwrap();
        let rels: Vec<String> = libs.iter().map(|(_, r)| r.display().to_string()).collect();
        assert!(rels.contains(&"lib/x86_64-linux-gnu/libmine.so".to_string()) && rels.contains(&"lib/x86_64-linux-gnu/libc.so.6".to_string()), "{rels:?}");
        assert!(rels.iter().any(|r| r.contains("ld-linux")), "the interpreter: {rels:?}");
        let jail = d.join("jail");
        install(&libs, &jail).unwrap();
        assert_eq!(std::fs::read(jail.join("lib/x86_64-linux-gnu/libmine.so")).unwrap(), std::fs::read(&so).unwrap());
    }
}
