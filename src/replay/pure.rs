//! Native evaluation of `--pure` functions for mixed concrete-symbolic solving (after the
//! mixed concrete-symbolic solving paper): the solver leaves a pure call's result unknown, the
//! function runs natively on the model's arguments, and the equality `f(args) = value` goes back
//! into the APC.
//!
//! The evaluator is a small static executable: the pure functions (extracted from the
//! instrumented bitcode with everything they call, or taken from the C library when the bitcode
//! only declares them) and a generated driver that reads `index arg...` records from its
//! command line and writes each result on fd 3. It runs in the replay sandbox, with its limits.

use super::sandbox::{self, Job, Limits};
use super::{first_error, run_tool, write};
use crate::error::{Error, Result};
use crate::ir::PureSignature;
use crate::load::{clang_path, llvm_tool, Loaded};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

/// The built evaluator of an analysis's `--pure` functions.
pub struct PureEvaluator {
    dir: tempfile::TempDir,
    exe: PathBuf,
    functions: Vec<PureSignature>,
    runs: AtomicU32,
    keep_temps: bool,
}

/// The C type a parameter or result of `width` bits is passed as (`signed` for `signext`).
fn c_type(width: u32, signed: bool) -> &'static str {
    match (width, signed) {
        (1, _) => "_Bool",
        (8, true) => "signed char",
        (8, false) => "unsigned char",
        (16, true) => "short",
        (16, false) => "unsigned short",
        (32, _) => "unsigned int",
        _ => "unsigned long long",
    }
}

/// The driver: `apc_pure_K` is bound to the function's real symbol with an asm label, so that
/// no header's prototype (`int abs(int)`) or builtin meaning gets in the way.
fn driver_source(functions: &[PureSignature]) -> String {
    let mut s = String::from(
        "unsigned long long strtoull(const char *, char **, int);\n\
         int dprintf(int, const char *, ...);\n",
    );
    for (k, f) in functions.iter().enumerate() {
        let params: Vec<&str> = f.params.iter().map(|p| c_type(p.width, p.signed)).collect();
        let params = if params.is_empty() { "void".to_string() } else { params.join(", ") };
        s.push_str(&format!("extern {} apc_pure_{k}({params}) __asm__(\"{}\");\n", c_type(f.ret, false), f.name));
    }
    s.push_str("int main(int argc, char **argv) {\n  int i = 1;\n  while (i < argc) {\n    unsigned long long r = 0;\n    switch ((int)strtoull(argv[i++], 0, 10)) {\n");
    for (k, f) in functions.iter().enumerate() {
        let args: Vec<String> = f.params.iter().map(|p| format!("({})strtoull(argv[i++], 0, 10)", c_type(p.width, p.signed))).collect();
        // Arguments are read left to right: one statement per argument keeps the order defined.
        s.push_str(&format!("    case {k}: {{\n"));
        for (j, a) in args.iter().enumerate() {
            s.push_str(&format!("      {} a{j} = {a};\n", c_type(f.params[j].width, f.params[j].signed)));
        }
        let names: Vec<String> = (0..args.len()).map(|j| format!("a{j}")).collect();
        s.push_str(&format!("      r = ({})apc_pure_{k}({});\n      break;\n    }}\n", c_type(f.ret, false), names.join(", ")));
    }
    s.push_str("    default: return 2;\n    }\n    dprintf(3, \"%llu\\n\", r);\n  }\n  return 0;\n}\n");
    s
}

impl PureEvaluator {
    /// Builds the evaluator of `loaded.program.pure_functions`.
    pub fn build(loaded: &Loaded, keep_temps: bool) -> Result<PureEvaluator> {
        let start = Instant::now();
        let functions = loaded.program.pure_functions.clone();
        let mut dir = crate::scratch::tempdir("apc-pure-")?;
        if keep_temps {
            dir.disable_cleanup(true);
        } else {
            crate::cleanup::register(dir.path());
        }
        let d = dir.path().to_path_buf();
        let driver = d.join("driver.c");
        write(&driver, driver_source(&functions).as_bytes())?;
        let mut inputs = vec![driver.clone()];
        let defined: Vec<&PureSignature> = functions.iter().filter(|f| f.defined).collect();
        if !defined.is_empty() {
            let program = d.join("program.bc");
            write(&program, &loaded.instrumented_bitcode)?;
            let extracted = d.join("pure.bc");
            let mut args: Vec<std::ffi::OsString> = vec!["--recursive".into()];
            args.extend(defined.iter().map(|f| format!("--func={}", f.name).into()));
            args.extend([program.into_os_string(), "-o".into(), extracted.clone().into_os_string()]);
            let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
            let out = run_tool(&llvm_tool("llvm-extract"), &refs, &d)?;
            if !out.status.success() {
                return Err(Error::internal(format!("extracting the pure functions failed: {}", first_error(&out.stderr))));
            }
            inputs.push(extracted);
        }
        let exe = d.join("eval");
        let mut args: Vec<&std::ffi::OsStr> = vec!["-O0".as_ref(), "-w".as_ref(), "-static".as_ref(), "--target=x86_64-pc-linux-gnu".as_ref()];
        args.extend(inputs.iter().map(|p| p.as_os_str()));
        args.extend(["-lm".as_ref(), "-o".as_ref(), exe.as_os_str()]);
        let out = run_tool(&clang_path(), &args, &d)?;
        if !out.status.success() {
            return Err(Error::internal(format!("building the native evaluator of the pure functions failed: {}", first_error(&out.stderr))));
        }
        tracing::info!(elapsed = ?start.elapsed(), "pure-function evaluator built");
        Ok(PureEvaluator { dir, exe, functions, runs: AtomicU32::new(0), keep_temps })
    }

    /// Runs the functions natively: each call is (index into the `--pure` functions, argument
    /// bits); the results come back in order, as the low bits of a `u64`.
    pub fn eval(&self, calls: &[(usize, Vec<u64>)], limits: Limits) -> Result<Vec<u64>> {
        if calls.is_empty() {
            return Ok(vec![]);
        }
        let mut args = vec![];
        for (k, a) in calls {
            let f = self.functions.get(*k).ok_or_else(|| Error::internal("no such pure function"))?;
            if a.len() != f.params.len() {
                return Err(Error::internal(format!("`{}` takes {} argument(s), got {}", f.name, f.params.len(), a.len())));
            }
            args.push(k.to_string());
            args.extend(a.iter().map(u64::to_string));
        }
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let (work, jail) = super::jail_for(self.dir.path(), n, &self.exe, "eval")?;
        let job = Job { args: &args, ..Job::new(&jail, "eval", limits) };
        let exit = sandbox::execute(&job).map_err(|e| Error::internal(format!("running the evaluator: {e}")));
        if !self.keep_temps {
            let _ = std::fs::remove_dir_all(&work);
        }
        let exit = exit?;
        let values: Vec<u64> = String::from_utf8_lossy(&exit.trace).lines().filter_map(|l| l.trim().parse().ok()).collect();
        if exit.status != "exit 0" || values.len() != calls.len() {
            return Err(Error::internal(format!("the native evaluation of the pure functions ended with {} after {} of {} results", exit.status, values.len(), calls.len())));
        }
        Ok(values)
    }
}

impl Drop for PureEvaluator {
    fn drop(&mut self) {
        crate::cleanup::release(self.dir.path());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::PureParam;

    #[test]
    fn the_driver_binds_each_function_by_its_symbol() {
        let f = PureSignature { name: "abs".into(), params: vec![PureParam { width: 32, signed: false }], ret: 32, defined: false };
        let g = PureSignature { name: "h".into(), params: vec![PureParam { width: 16, signed: true }, PureParam { width: 64, signed: false }], ret: 8, defined: true };
        let src = driver_source(&[f, g]);
        assert!(src.contains("extern unsigned int apc_pure_0(unsigned int) __asm__(\"abs\");"), "{src}");
        assert!(src.contains("extern unsigned char apc_pure_1(short, unsigned long long) __asm__(\"h\");"), "{src}");
        assert!(src.contains("case 1:"), "{src}");
    }
}
