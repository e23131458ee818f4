//! Files the analysed program can write, reached only through a directory descriptor the tool
//! holds: never by a path, never through a link.
//!
//! A run that hands its working directory back (the fuzzer's corpus and artifacts, see
//! `replay::sandbox::Job::share_work`) gives the tool a descriptor of the root of its tmpfs.
//! Everything the program wrote there is hostile: a corpus directory replaced by a link to `/`,
//! an artifact that is a link to a secret, a FIFO that blocks the reader. So every name is one
//! component (no `/`, no `..`), opened with `openat2` (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV`) or, on kernels without it, `openat` with
//! `O_NOFOLLOW` (which, for a single component from a directory descriptor, refuses the same
//! links); files are read only when they are regular files, and only up to a bound.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A directory reached through its descriptor (see the module's documentation).
#[derive(Debug)]
pub struct Dir(OwnedFd);

/// One name: a single path component, neither `.` nor `..`.
fn component(name: &str) -> std::io::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("not a plain name: {name:?}")));
    }
    CString::new(name).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in a name"))
}

fn check(r: libc::c_long) -> std::io::Result<libc::c_long> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// `openat2(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode)` without links, magic links or
/// mount crossings; `openat` with `O_NOFOLLOW` where `openat2` does not exist.
fn open_beneath(dir: libc::c_int, name: &str, flags: libc::c_int, mode: libc::mode_t) -> std::io::Result<OwnedFd> {
    let name = component(name)?;
    let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.mode = if flags & libc::O_CREAT != 0 { mode as u64 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS | libc::RESOLVE_NO_XDEV;
    // SAFETY: a NUL-terminated name and an initialised `open_how` of the size given.
    let fd = unsafe { libc::syscall(libc::SYS_openat2, dir, name.as_ptr(), &how as *const libc::open_how, std::mem::size_of::<libc::open_how>()) };
    let fd = match check(fd) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            // SAFETY: as above; one component, not followed if it is a link.
            check(unsafe { libc::openat(dir, name.as_ptr(), flags, mode as libc::c_uint) } as libc::c_long)?
        }
        r => r?,
    };
    // SAFETY: a descriptor just opened and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

fn fstat(fd: libc::c_int) -> std::io::Result<libc::stat> {
    // SAFETY: fills a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstat(fd, &mut st) } as libc::c_long)?;
    Ok(st)
}

impl Dir {
    /// Takes `fd`, a directory descriptor.
    pub fn from_fd(fd: OwnedFd) -> Dir {
        Dir(fd)
    }

    /// The subdirectory `name` (not a link to one).
    pub fn dir(&self, name: &str) -> std::io::Result<Dir> {
        open_beneath(self.0.as_raw_fd(), name, libc::O_RDONLY | libc::O_DIRECTORY, 0).map(Dir)
    }

    /// Makes the subdirectory `name` (mode `mode`, given to `owner` when there is one) and
    /// opens it.
    pub fn make_dir(&self, name: &str, mode: libc::mode_t, owner: Option<u32>) -> std::io::Result<Dir> {
        let c = component(name)?;
        // SAFETY: a NUL-terminated single component.
        check(unsafe { libc::mkdirat(self.0.as_raw_fd(), c.as_ptr(), mode) } as libc::c_long)?;
        let d = self.dir(name)?;
        // The mode exactly (the umask took from it), and the owner, on the descriptor.
        // SAFETY: a directory descriptor we own.
        check(unsafe { libc::fchmod(d.0.as_raw_fd(), mode) } as libc::c_long)?;
        if let Some(uid) = owner {
            check(unsafe { libc::fchown(d.0.as_raw_fd(), uid, uid) } as libc::c_long)?;
        }
        Ok(d)
    }

    /// The regular file `name`'s first `limit` bytes (a link, a FIFO, a device or a directory
    /// is an error, and nothing is read from it).
    pub fn read(&self, name: &str, limit: usize) -> std::io::Result<Vec<u8>> {
        let fd = open_beneath(self.0.as_raw_fd(), name, libc::O_RDONLY | libc::O_NONBLOCK, 0)?;
        let st = fstat(fd.as_raw_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{name} is not a regular file")));
        }
        let mut out = vec![];
        std::fs::File::from(fd).take(limit as u64).read_to_end(&mut out)?;
        Ok(out)
    }

    /// Writes `bytes` into a new file `name` (mode 0644), replacing whatever had that name (a
    /// link is removed, not followed), with modification time `mtime` (seconds since the
    /// epoch) when given.
    pub fn write(&self, name: &str, bytes: &[u8], mtime: Option<u64>) -> std::io::Result<()> {
        let _ = self.remove(name);
        let fd = open_beneath(self.0.as_raw_fd(), name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644)?;
        let mut f = std::fs::File::from(fd);
        f.write_all(bytes)?;
        if let Some(secs) = mtime {
            f.set_times(std::fs::FileTimes::new().set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)))?;
        }
        Ok(())
    }

    /// Removes the file or link `name` (never what a link points to).
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        let c = component(name)?;
        // SAFETY: a NUL-terminated single component; unlinkat never follows it.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), 0) } as libc::c_long).map(drop)
    }

    /// Renames `from` in this directory to `to` in `dir` (links are renamed, not followed).
    pub fn rename_to(&self, from: &str, dir: &Dir, to: &str) -> std::io::Result<()> {
        let (a, b) = (component(from)?, component(to)?);
        // SAFETY: NUL-terminated single components relative to directories we hold.
        check(unsafe { libc::renameat(self.0.as_raw_fd(), a.as_ptr(), dir.0.as_raw_fd(), b.as_ptr()) } as libc::c_long).map(drop)
    }

    /// Sets this directory's modification time (seconds since the epoch).
    pub fn set_modified(&self, secs: u64) -> std::io::Result<()> {
        let times = [libc::timespec { tv_sec: 0, tv_nsec: libc::UTIME_OMIT }, libc::timespec { tv_sec: secs as libc::time_t, tv_nsec: 0 }];
        // SAFETY: a descriptor we own and two initialised timespecs.
        check(unsafe { libc::futimens(self.0.as_raw_fd(), times.as_ptr()) } as libc::c_long).map(drop)
    }

    /// The names in this directory (not `.` and `..`; names that are not UTF-8 are skipped),
    /// at most `limit` of them.
    pub fn names(&self, limit: usize) -> std::io::Result<Vec<String>> {
        // A descriptor of our own for the stream (`closedir` closes it): this directory again
        // (`.` is no link), with an offset of its own.
        // SAFETY: a NUL-terminated name relative to a directory descriptor we own.
        let fd = check(unsafe { libc::openat(self.0.as_raw_fd(), c".".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) } as libc::c_long)?;
        // SAFETY: a descriptor just opened.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        let raw = std::os::fd::IntoRawFd::into_raw_fd(fd);
        // SAFETY: `raw` is a directory descriptor handed to the stream, which closes it.
        let stream = unsafe { libc::fdopendir(raw) };
        if stream.is_null() {
            let e = std::io::Error::last_os_error();
            unsafe { libc::close(raw) };
            return Err(e);
        }
        let mut out = vec![];
        loop {
            // SAFETY: a stream we opened; the entry is read before the next call.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() || out.len() >= limit {
                break;
            }
            let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
            if let Ok(n) = name.to_str() {
                if n != "." && n != ".." {
                    out.push(n.to_string());
                }
            }
        }
        // SAFETY: closes the stream and its descriptor, once.
        unsafe { libc::closedir(stream) };
        Ok(out)
    }
}

impl AsRawFd for Dir {
    fn as_raw_fd(&self) -> libc::c_int {
        self.0.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn open(p: &std::path::Path) -> Dir {
        Dir::from_fd(std::fs::File::open(p).unwrap().into())
    }

    /// Links planted where the tool reads, writes and removes are never followed.
    #[test]
    fn links_are_never_followed() {
        let d = tempfile::tempdir().unwrap();
        let (jail, victim) = (d.path().join("jail"), d.path().join("victim"));
        std::fs::create_dir_all(jail.join("corpus")).unwrap();
        std::fs::create_dir_all(&victim).unwrap();
        std::fs::write(victim.join("secret"), b"secret").unwrap();
        symlink(victim.join("secret"), jail.join("corpus/link")).unwrap();
        symlink(&victim, jail.join("dirlink")).unwrap();
        std::fs::write(jail.join("corpus/plain"), b"plain").unwrap();
        let root = open(&jail);
        let corpus = root.dir("corpus").unwrap();
        assert!(root.dir("dirlink").is_err(), "a link to a directory was opened");
        assert!(corpus.read("link", 100).is_err(), "a link was read");
        assert_eq!(corpus.read("plain", 100).unwrap(), b"plain");
        assert_eq!(corpus.read("plain", 2).unwrap(), b"pl");
        assert!(corpus.read("../corpus/plain", 100).is_err());
        // Writing over a link replaces the link.
        corpus.write("link", b"mine", Some(1_000_000)).unwrap();
        assert_eq!(std::fs::read(victim.join("secret")).unwrap(), b"secret");
        assert_eq!(std::fs::read(jail.join("corpus/link")).unwrap(), b"mine");
        let mut names = corpus.names(10).unwrap();
        names.sort();
        assert_eq!(names, ["link", "plain"]);
        assert_eq!(corpus.names(1).unwrap().len(), 1);
        corpus.remove("link").unwrap();
        assert!(root.remove("dirlink").is_ok());
        assert!(victim.join("secret").exists());
        // A FIFO is not read (it would block).
        let fifo = std::ffi::CString::new(jail.join("corpus/fifo").as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(corpus.read("fifo", 100).is_err());
        let t = root.make_dir("t", 0o700, None).unwrap();
        t.write("x", b"1", None).unwrap();
        t.rename_to("x", &corpus, "y").unwrap();
        assert_eq!(corpus.read("y", 10).unwrap(), b"1");
    }
}
