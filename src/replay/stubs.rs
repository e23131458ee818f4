//! Which functions the native builds must stub: those the program declares, that neither the
//! generated driver nor the C library defines.
//!
//! The builds used to find them by linking once, reading the linker's "undefined reference"
//! errors and linking again: every `--call reach_error` program paid for two compiles and two
//! static links (about 150 ms, more under load, on the critical path of every witness). The set
//! is now predicted before the first link by asking the C library loaded in this process
//! (`dlsym` on `libc.so.6` and `libm.so.6`); the link-error path stays as the fallback for
//! anything the prediction misses (a symbol only the static archive lacks).

use crate::load::TARGET_MARKER;

/// Functions of the static C library that its shared object lacks (they live in
/// `libc_nonshared.a`): never stubbed.
const NONSHARED: &[&str] = &["atexit", "at_quick_exit", "pthread_atfork", "__stack_chk_fail_local"];

/// Whether the name is defined by the drivers the builds generate (nondet inputs, assumptions,
/// the target marker) or by the compiler (intrinsics).
fn driver_or_compiler_defines(name: &str) -> bool {
    // `__ubsan_*`, `__asan_*` (clang's code generation calls `__asan_handle_no_return` before
    // every call that never returns, such as a program's own `reach_error` calling `abort`),
    // `__sanitizer_*`: the sanitizers' runtimes, linked into the UB-checking build only
    // (`replay::ub`); nothing else calls them. A stub would be a second definition.
    name.starts_with("llvm.") || ["__ubsan_", "__asan_", "__sanitizer_"].iter().any(|p| name.starts_with(p)) || name.starts_with("__VERIFIER_nondet_") || name == "__VERIFIER_assume" || name == TARGET_MARKER
}

/// The declared functions the link will not find: each gets a stub returning 0.
pub fn predicted(declared: &[String]) -> Vec<String> {
    declared
        .iter()
        .filter(|n| !driver_or_compiler_defines(n) && !NONSHARED.contains(&n.as_str()))
        .filter(|n| crate::load::clib::c_library_defines(n) == Some(false))
        .cloned()
        .collect()
}

/// C definitions of the stubs for `names` (each returns 0 whatever its real prototype).
pub fn source(names: &[String]) -> String {
    names.iter().map(|m| format!("long {m}() {{ return 0; }}\n")).collect()
}

/// The names in the linker's "undefined reference to `f'" errors.
pub fn undefined_in_link_errors(stderr: &str) -> std::collections::BTreeSet<String> {
    // GNU ld: "undefined reference to `foo'"; lld: "error: undefined symbol: foo".
    let gnu = stderr.lines().filter_map(|l| l.split("undefined reference to `").nth(1)).filter_map(|r| r.split('\'').next());
    let lld = stderr.lines().filter_map(|l| l.split("undefined symbol: ").nth(1)).map(str::trim);
    gnu.chain(lld).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizer_runtime_functions_are_never_stubbed() {
        let declared: Vec<String> = ["__asan_handle_no_return", "__ubsan_handle_add_overflow_abort", "__sanitizer_cov_trace_pc"].map(String::from).to_vec();
        assert!(predicted(&declared).is_empty(), "{:?}", predicted(&declared));
    }

    #[test]
    fn missing_symbols_are_read_from_either_linker() {
        let gnu = "/usr/bin/ld: /tmp/x.o: in function `main':\nx.c:(.text+0x9): undefined reference to `zork'\n";
        let lld = "ld.lld: error: undefined symbol: zork\n>>> referenced by u.c\n";
        for err in [gnu, lld] {
            assert_eq!(undefined_in_link_errors(err).into_iter().collect::<Vec<_>>(), vec!["zork".to_string()]);
        }
    }

    #[test]
    fn the_c_library_and_the_drivers_are_not_stubbed_and_unknown_functions_are() {
        let names: Vec<String> = ["strlen", "printf", "sqrt", "memcpy", "reach_error", "my_helper", "__VERIFIER_nondet_int", "llvm.memcpy.p0.p0.i64", "atexit", TARGET_MARKER]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(predicted(&names), vec!["reach_error".to_string(), "my_helper".to_string()]);
    }

    #[test]
    fn link_errors_name_the_missing_functions() {
        let err = "/usr/bin/ld: p.o: in function `f':\np.c:(.text+0x1a): undefined reference to `reach_error'\nld: x.o: undefined reference to `g'\nclang: error: linker command failed";
        let got: Vec<String> = undefined_in_link_errors(err).into_iter().collect();
        assert_eq!(got, vec!["g".to_string(), "reach_error".to_string()]);
    }
}
