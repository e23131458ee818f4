//! Where the analysis's temporary directories go: loads, native builds, fuzzing sessions and
//! every replay's run directory.
//!
//! Without `TMPDIR`, a memory-backed file system (`/dev/shm`) when there is a usable one,
//! else the system's temporary directory. A replay creates a run directory (three directories,
//! the input file, a link to the executable) and removes it after the run, a hundred times and
//! more while a witness is reduced. On a disk file system mounted with `discard` (this
//! project's machines: ext4 on a virtual disk), removing a directory waits for the disk to
//! discard its freed block: DoIfEx's DSE alone spent 0.36 s against 0.24 s with its
//! directories in `/dev/shm`, of which 90 ms blocked in those discards. A user's `TMPDIR` is
//! always honoured (`--keep-temps` then leaves the files where they asked).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The memory-backed directory tried first.
const MEMORY_DIR: &str = "/dev/shm";

/// The directory temporary directories are made in (decided once per process).
pub fn base() -> &'static Path {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        if std::env::var_os("TMPDIR").is_some_and(|t| !t.is_empty()) {
            return std::env::temp_dir();
        }
        if usable_memory_dir(Path::new(MEMORY_DIR)) {
            return PathBuf::from(MEMORY_DIR);
        }
        std::env::temp_dir()
    })
}

/// A fresh temporary directory named `prefix…` under [`base`].
pub fn tempdir(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix(prefix).tempdir_in(base()).map_err(|e| Error::internal(format!("cannot create a temporary directory in {}: {e}", base().display())))
}

/// Whether `dir` is a tmpfs directory that everybody may write (sticky, as `/tmp`: replays run
/// as `nobody`) and that allows executing programs (Docker mounts its `/dev/shm` `noexec`).
fn usable_memory_dir(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(dir) else { return false };
    if !meta.is_dir() || meta.permissions().mode() & 0o1777 != 0o1777 {
        return false;
    }
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
    // SAFETY: plain system calls on a NUL-terminated path, into zeroed structs they fill.
    unsafe {
        let mut fs: libc::statfs = std::mem::zeroed();
        let mut vfs: libc::statvfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut fs) != 0 || libc::statvfs(c.as_ptr(), &mut vfs) != 0 {
            return false;
        }
        fs.f_type == libc::TMPFS_MAGIC && vfs.f_flag & libc::ST_NOEXEC == 0 && vfs.f_flag & libc::ST_RDONLY == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_directory_is_not_taken_for_memory() {
        // The crate's own directory is on a disk (or an overlay), never a tmpfs.
        assert!(!usable_memory_dir(Path::new(env!("CARGO_MANIFEST_DIR"))));
        assert!(!usable_memory_dir(Path::new("/nonexistent/apc-llvm")));
    }

    #[test]
    fn the_base_is_writable_and_a_tempdir_is_made_in_it() {
        let d = tempdir("apc-scratch-test-").unwrap();
        assert!(d.path().starts_with(base()));
        std::fs::write(d.path().join("f"), b"x").unwrap();
    }
}
