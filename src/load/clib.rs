//! What the C library this process runs with defines: the native builds link it (static
//! glibc), so a function it defines runs for real in a replay, while other declared functions
//! get stubs that return 0. Asked of the shared objects loaded here (`dlsym` on `libc.so.6` and
//! `libm.so.6`).

use std::ffi::CString;
use std::sync::OnceLock;

struct Libraries {
    handles: Vec<usize>,
}

fn libraries() -> &'static Libraries {
    static LIBS: OnceLock<Libraries> = OnceLock::new();
    LIBS.get_or_init(|| {
        let handles = ["libc.so.6", "libm.so.6"]
            .iter()
            .filter_map(|lib| {
                let name = CString::new(*lib).ok()?;
                // SAFETY: dlopen of the system's C library (already mapped into this process, or
                // libm, which has no constructors that matter); the handle is never closed.
                let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY) };
                (!h.is_null()).then_some(h as usize)
            })
            .collect();
        Libraries { handles }
    })
}

/// Whether the C library (libc or libm) defines `name`. `None` when the libraries could not
/// be opened: then nothing is predicted.
pub fn c_library_defines(name: &str) -> Option<bool> {
    let libs = libraries();
    if libs.handles.is_empty() {
        return None;
    }
    let Ok(sym) = CString::new(name) else { return Some(false) };
    // SAFETY: `dlsym` on handles from `dlopen` that stay open for the life of the process.
    Some(libs.handles.iter().any(|&h| !unsafe { libc::dlsym(h as *mut libc::c_void, sym.as_ptr()) }.is_null()))
}

