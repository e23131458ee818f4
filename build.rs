//! Builds the statically linked `ld.lld` of `native/ld_lld.cpp` into `OUT_DIR` when the lld 19
//! static libraries are installed (Debian's `liblld-19-dev`), and tells the crate where it is
//! (`APC_LLVM_STATIC_LLD`, empty when it could not be built). It is only a faster start of
//! the same linker: without it the native builds run the system's `ld.lld`, so a failure here
//! is a warning, never an error.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=native/ld_lld.cpp");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_191_PREFIX");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("lld");
    let built = match build(&out) {
        Ok(path) => path.to_string_lossy().into_owned(),
        Err(why) => {
            println!("cargo:warning=no static ld.lld ({why}); the native builds use the system's ld.lld");
            String::new()
        }
    };
    println!("cargo:rustc-env=APC_LLVM_STATIC_LLD={built}");
}

fn build(out: &Path) -> Result<PathBuf, String> {
    let prefix = PathBuf::from(std::env::var_os("LLVM_SYS_191_PREFIX").unwrap_or_else(|| "/usr/lib/llvm-19".into()));
    let lib = prefix.join("lib");
    for needed in ["liblldELF.a", "liblldCommon.a"] {
        let p = lib.join(needed);
        if !p.is_file() {
            return Err(format!("{} missing: install liblld-19-dev", p.display()));
        }
        println!("cargo:rerun-if-changed={}", p.display());
    }
    let clang = prefix.join("bin/clang++");
    let config = Command::new(prefix.join("bin/llvm-config")).args(["--link-static", "--libs", "all"]).output().map_err(|e| format!("llvm-config: {e}"))?;
    if !config.status.success() {
        return Err("llvm-config --link-static --libs all failed".into());
    }
    let llvm_libs = String::from_utf8_lossy(&config.stdout).split_whitespace().map(str::to_string).collect::<Vec<_>>();
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let obj = out.join("ld_lld.o");
    let exe = out.join("ld.lld");
    let tmp = out.join("ld.lld.tmp");
    let run = |cmd: &mut Command| -> Result<(), String> {
        let o = cmd.output().map_err(|e| format!("{}: {e}", clang.display()))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&o.stderr).lines().next().unwrap_or("failed").to_string())
        }
    };
    run(Command::new(&clang).args(["-O2", "-c", "native/ld_lld.cpp", "-o"]).arg(&obj).arg("-I").arg(prefix.join("include")))?;
    // Written under another name and renamed: an interrupted build leaves no half executable.
    run(Command::new(&clang)
        .args(["-static", "-fuse-ld=lld", "-Wl,--gc-sections", "-o"])
        .arg(&tmp)
        .arg(&obj)
        .arg(format!("-L{}", lib.display()))
        .args(["-llldELF", "-llldCommon"])
        .args(&llvm_libs)
        .args(["-lz", "-lzstd", "-lpthread", "-ldl", "-lrt", "-lm"]))?;
    std::fs::rename(&tmp, &exe).map_err(|e| format!("{}: {e}", exe.display()))?;
    // A smoke test: it must run and be lld 19.
    let v = Command::new(&exe).arg("--version").output().map_err(|e| format!("{}: {e}", exe.display()))?;
    let text = String::from_utf8_lossy(&v.stdout);
    if !v.status.success() || !text.contains("LLD 19") {
        let _ = std::fs::remove_file(&exe);
        return Err(format!("the built ld.lld does not run as lld 19 ({})", text.trim()));
    }
    Ok(exe)
}
