//! The fuzzing engine on real programs: clang-19, libFuzzer and native sandboxed runs, no mocks.
//! Every `Reached` witness is replayed again here by the real `Replayer`.

mod common;
use apc_llvm::fuzz::{constant_entries, CmpConstant, FuzzEnd, FuzzLimits, FuzzStats, Fuzzer, Live};
use apc_llvm::load::{self, TargetSpec};
use apc_llvm::replay::Replayer;
use apc_llvm::witness::{ParamInput, Witness};
use common::*;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

struct Built {
    _program: CProgram,
    replayer: Replayer,
    fuzzer: Fuzzer,
}

/// Compiles `source`, loads `function` with `reach_error` calls as the target, and builds both
/// native programs (`APC_FUZZ_KEEP=1` keeps the fuzzer's directory, libFuzzer's logs included).
fn build(name: &str, source: &str, function: &str) -> Built {
    let p = c_program(name, source);
    let bc = compile_bitcode(&p);
    let loaded = load::load(&bc, function, &TargetSpec::Call("reach_error".into())).unwrap();
    let replayer = Replayer::new(&loaded, false).unwrap();
    let start = Instant::now();
    let keep = std::env::var_os("APC_FUZZ_KEEP").is_some();
    let fuzzer = Fuzzer::build(&loaded, keep).unwrap();
    eprintln!("{name}: fuzzer built in {:?}{}", start.elapsed(), if keep { format!(", kept in {}", fuzzer.dir().display()) } else { String::new() });
    Built { _program: p, replayer, fuzzer }
}

impl Built {
    fn fuzz(&self, seeds: &[Witness], dictionary: &[Vec<u8>], budget: Duration) -> (FuzzEnd, FuzzStats, Duration) {
        self.fuzz_filled(seeds, dictionary, &[], budget)
    }

    /// [`Built::fuzz`] with constant-fill seeds of the values `fills`.
    fn fuzz_filled(&self, seeds: &[Witness], dictionary: &[Vec<u8>], fills: &[u64], budget: Duration) -> (FuzzEnd, FuzzStats, Duration) {
        let cancel = AtomicBool::new(false);
        let replay = |w: &Witness| self.replayer.run(w).map(|o| o.reached.is_some()).unwrap_or(false);
        let start = Instant::now();
        let (end, stats) = self.fuzzer.search(seeds, dictionary, fills, &FuzzLimits::until(start + budget), &cancel, &replay, &Live::default());
        (end, stats, start.elapsed())
    }

    /// The constant-fill values the fuzz engine would use for `function` of program `name`.
    fn fill_values(&self, name: &str, function: &str) -> Vec<u64> {
        let program = apc_llvm::load::load(&self._program.dir.path().join(format!("{name}.bc")), function, &TargetSpec::Call("reach_error".into())).unwrap().program;
        apc_llvm::engine::fuzz::fill_values(&apc_llvm::engine::fuzz::comparison_constants(&program))
    }

    /// The dictionary and constant-fill values the fuzz engine would use for `function` of
    /// program `name`.
    fn engine_inputs(&self, name: &str, function: &str) -> (Vec<Vec<u8>>, Vec<u64>) {
        let program = apc_llvm::load::load(&self._program.dir.path().join(format!("{name}.bc")), function, &TargetSpec::Call("reach_error".into())).unwrap().program;
        let constants = apc_llvm::engine::fuzz::comparison_constants(&program);
        (apc_llvm::engine::fuzz::dictionary(&program, &constants), apc_llvm::engine::fuzz::fill_values(&constants))
    }

    /// Fuzzes without seeds for up to 30 s and returns the confirmed witness (see
    /// [`Built::confirmed`]) and the search's statistics; `name` labels the timing printed.
    fn found_alone(&self, name: &str) -> (Witness, FuzzStats) {
        let (end, stats, took) = self.fuzz(&[], &[], Duration::from_secs(30));
        eprintln!("{name}: {took:?}, {stats:?}");
        (self.confirmed(&end), stats)
    }

    /// The witness of a `Reached`, after checking that a fresh replay enters the target.
    fn confirmed(&self, end: &FuzzEnd) -> Witness {
        let FuzzEnd::Reached(w) = end else { panic!("expected Reached, got {end:?}") };
        let out = self.replayer.run(w).unwrap();
        assert_eq!(out.reached, Some(0), "the witness must replay natively: {out:?} {w:?}");
        w.clone()
    }
}

const HELLO: &str = r#"
#include <string.h>
extern char __VERIFIER_nondet_char(void);
extern void reach_error(void);
int main(void) {
  char buf[6];
  for (int i = 0; i < 5; i++) buf[i] = __VERIFIER_nondet_char();
  buf[5] = 0;
  if (strcmp(buf, "Hello") == 0) reach_error();
  return 0;
}
"#;

#[test]
fn string_compare_over_nondet_chars_is_reached_by_fuzzing_alone() {
    let b = build("hello", HELLO, "main");
    let (w, stats) = b.found_alone("hello");
    assert_eq!(&w.nondet[..5], &b"Hello".map(u64::from)[..]);
    assert!(stats.executions > 0 && stats.seeds_used == 0, "{stats:?}");
}

#[test]
fn integer_magic_values_are_found_by_comparison_tracing() {
    let src = r#"
extern void reach_error(void);
void f(int a, long long b, short c) {
  if (a == 0x7a3f19c2)
    if (b == -4242424242LL)
      if (c == -1234) reach_error();
}
"#;
    let b = build("magic", src, "f");
    let (w, _) = b.found_alone("magic");
    assert_eq!(w.params[0], ParamInput::Int { name: "a".into(), width: 32, value: 0x7a3f19c2 });
    assert_eq!(w.params[1], ParamInput::Int { name: "b".into(), width: 64, value: (-4242424242i64) as u64 });
    assert_eq!(w.params[2], ParamInput::Int { name: "c".into(), width: 16, value: (-1234i16) as u16 as u64 });
}

/// The fuzzing executable links libFuzzer as the toolchain cache's shared object (a link of
/// about 10 ms instead of 50), and its sessions get the libraries in their jail; without the
/// cache it is linked statically, and finds the same witness.
#[test]
fn libfuzzer_is_linked_shared_from_the_cache_and_statically_without_it() {
    if std::env::var_os("APC_LLVM_CACHE").is_some_and(|v| v == "off" || v == "0" || v.is_empty()) {
        eprintln!("skipped: the toolchain cache is off");
        return;
    }
    let b = build("hello_shared", HELLO, "main");
    let out = std::process::Command::new("/usr/lib/llvm-19/bin/llvm-readelf").arg("--needed-libs").arg(b.fuzzer.dir().join("fuzz")).output().unwrap();
    let needed = String::from_utf8_lossy(&out.stdout);
    assert!(needed.contains("libapcfuzz.so") && needed.contains("libc.so"), "{needed}");
    let (w, _) = b.found_alone("hello_shared");
    assert_eq!(&w.nondet[..5], &b"Hello".map(u64::from)[..]);
    // Without the cache: a static link, the same search.
    let p = c_program("hello_static", HELLO);
    let bc = compile_bitcode(&p);
    let out = apc_llvm_command()
        .env("APC_LLVM_CACHE", "off")
        .args([bc.to_str().unwrap(), "--function", "main", "--call", "reach_error", "--engine", "fuzz", "--json", "-v"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["verdict"], "reachable", "{report}");
    // The log's fields, without their colours.
    let mut stderr = String::new();
    let mut in_escape = false;
    for c in String::from_utf8_lossy(&out.stderr).chars() {
        match (in_escape, c) {
            (false, '\u{1b}') => in_escape = true,
            (true, 'm') => in_escape = false,
            (false, c) => stderr.push(c),
            _ => {}
        }
    }
    assert!(stderr.contains("shared=false"), "the fuzzer should be linked statically without the cache: {stderr}");
}

/// Nondet values of three sizes: a found input decodes only with its calls' sizes, which the
/// driver writes out at the hit (no second run of the fuzzer to trace it).
#[test]
fn a_hit_brings_the_call_sizes_of_its_input() {
    let src = r#"
extern void reach_error(void);
extern char __VERIFIER_nondet_char(void);
extern int __VERIFIER_nondet_int(void);
extern long __VERIFIER_nondet_long(void);
int main(void) {
  char c = __VERIFIER_nondet_char();
  int x = __VERIFIER_nondet_int();
  long y = __VERIFIER_nondet_long();
  if (c == 'q' && x == 0x31337 && y == -77777777777L) reach_error();
  return 0;
}
"#;
    let b = build("sizes", src, "main");
    let (w, stats) = b.found_alone("sizes");
    assert_eq!(&w.nondet[..3], &[b'q' as u64, 0x31337, (-77777777777i64) as u64]);
    assert_eq!(stats.trace_runs, 0, "the hit's trace came with it: {stats:?}");
}

/// murmur3's finaliser: a bijection without any gradient a fuzzer could follow.
fn mix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[test]
fn an_apc_seed_gets_the_fuzzer_past_what_it_cannot_guess() {
    let x0: u32 = 0x1337_c0de;
    let src = format!(
        r#"
#include <string.h>
extern unsigned __VERIFIER_nondet_uint(void);
extern char __VERIFIER_nondet_char(void);
extern void reach_error(void);
static unsigned mix(unsigned h) {{ h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16; return h; }}
void f(unsigned x) {{
  unsigned n = __VERIFIER_nondet_uint();
  if (mix(x) != {h}u || n != 3) return;
  char s[5];
  for (int i = 0; i < 4; i++) s[i] = __VERIFIER_nondet_char();
  s[4] = 0;
  if (strcmp(s, "Fuzz") == 0) reach_error();
}}
"#,
        h = mix(x0)
    );
    let b = build("seeded", &src, "f");
    let budget = Duration::from_secs(4);
    // Alone, the same budget is not enough.
    let (end, stats, took) = b.fuzz(&[], &[], budget);
    eprintln!("seeded, without the seed: {took:?}, {stats:?}, {end:?}");
    assert!(matches!(end, FuzzEnd::GaveUp(_)), "{end:?}");
    // The seed as an APC model gives it: x and n solved, the characters not (this model does
    // not replay: it is all zeros where "Fuzz" must be).
    let seed = Witness { params: vec![ParamInput::Int { name: "x".into(), width: 32, value: x0 as u64 }], nondet: vec![3, 0, 0, 0, 0] };
    assert_eq!(b.replayer.run(&seed).unwrap().reached, None);
    let dict = constant_entries(&[CmpConstant { value: 3, width: 32 }]);
    let (end, stats, took) = b.fuzz(&[seed], &dict, budget);
    eprintln!("seeded, with the seed: {took:?}, {stats:?}");
    let w = b.confirmed(&end);
    assert_eq!(w.params[0], ParamInput::Int { name: "x".into(), width: 32, value: x0 as u64 });
    assert_eq!(w.nondet[..5], [3, b'F' as u64, b'u' as u64, b'z' as u64, b'z' as u64], "calls of mixed sizes decoded by the trace");
    assert_eq!(stats.seeds_used, 1);
}

/// A program whose target needs `x` with a hash no fuzzer guesses (`mix(x0)`), then "Fuzz"
/// in the characters; `nondet` picks where the characters come from: a buffer parameter (one
/// input layout for every seed) or nondet calls after a nondet `unsigned` (calls of two sizes,
/// whose seeds are traced before a search starts).
fn hashed_then_fuzz(x0: u32, nondet: bool) -> String {
    let body = if nondet {
        "  if (__VERIFIER_nondet_uint() != 3) return;\n  char s[5];\n  for (int i = 0; i < 4; i++) s[i] = __VERIFIER_nondet_char();\n  s[4] = 0;\n"
    } else {
        ""
    };
    let params = if nondet { "unsigned x" } else { "unsigned x, const char *s" };
    format!(
        r#"
#include <string.h>
extern unsigned __VERIFIER_nondet_uint(void);
extern char __VERIFIER_nondet_char(void);
extern void reach_error(void);
static unsigned mix(unsigned h) {{ h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16; return h; }}
void f({params}) {{
  if (mix(x) != {h}u) return;
{body}  if (strncmp(s, "Fuzz", 4) == 0) reach_error();
}}
"#,
        h = mix(x0)
    )
}

/// A seed offered while libFuzzer runs goes into its corpus without a restart (the search
/// ends `Reached`, not `Reseed`), and gets it past the hash it cannot guess.
#[test]
fn a_seed_offered_while_fuzzing_is_fed_to_the_running_fuzzer() {
    let x0: u32 = 0x5eed_f00d;
    let b = build("live_seed", &hashed_then_fuzz(x0, false), "f");
    let seed = Witness {
        params: vec![
            ParamInput::Int { name: "x".into(), width: 32, value: x0 as u64 },
            ParamInput::Buffer { name: "s".into(), bytes: vec![0; 8], pointees: vec![], front: 0 },
        ],
        nondet: vec![],
    };
    assert_eq!(b.replayer.run(&seed).unwrap().reached, None, "the seed itself misses");
    let start = Instant::now();
    let offered_after = Duration::from_millis(300);
    let since = |known: usize| if start.elapsed() >= offered_after { vec![seed.clone()].split_off(known.min(1)) } else { vec![] };
    let cancel = AtomicBool::new(false);
    let replay = |w: &Witness| b.replayer.run(w).map(|o| o.reached.is_some()).unwrap_or(false);
    let live = Live { seeds_since: Some(&since), nice: None };
    let (end, stats) = b.fuzzer.search(&[], &[], &[], &FuzzLimits::until(start + Duration::from_secs(20)), &cancel, &replay, &live);
    eprintln!("live seed: {:?}, {stats:?}", start.elapsed());
    let w = b.confirmed(&end);
    assert_eq!(w.params[0], ParamInput::Int { name: "x".into(), width: 32, value: x0 as u64 });
    assert_eq!(stats.seeds_used, 1, "{stats:?}");
}

/// A seed the running libFuzzer cannot take (nondet calls of two sizes, which must be traced
/// before its bytes are known) ends the search at once with `Reseed`; the next search starts
/// from it and reaches the target.
#[test]
fn a_seed_that_needs_a_new_layout_ends_the_search_for_a_new_one() {
    let x0: u32 = 0x1dea_5eed;
    let b = build("reseed", &hashed_then_fuzz(x0, true), "f");
    let seed = Witness { params: vec![ParamInput::Int { name: "x".into(), width: 32, value: x0 as u64 }], nondet: vec![3, 0, 0, 0, 0] };
    let start = Instant::now();
    let since = |known: usize| if start.elapsed() >= Duration::from_millis(300) { vec![seed.clone()].split_off(known.min(1)) } else { vec![] };
    let cancel = AtomicBool::new(false);
    let replay = |w: &Witness| b.replayer.run(w).map(|o| o.reached.is_some()).unwrap_or(false);
    let live = Live { seeds_since: Some(&since), nice: None };
    let deadline = start + Duration::from_secs(20);
    let (end, _) = b.fuzzer.search(&[], &[], &[], &FuzzLimits::until(deadline), &cancel, &replay, &live);
    assert!(matches!(end, FuzzEnd::Reseed), "{end:?}");
    assert!(start.elapsed() < Duration::from_secs(5), "stopped {:?} after the seed came", start.elapsed());
    let (end, stats) = b.fuzzer.search(std::slice::from_ref(&seed), &[], &[], &FuzzLimits::until(deadline), &cancel, &replay, &live);
    let w = b.confirmed(&end);
    assert_eq!(w.nondet[..5], [3, b'F' as u64, b'u' as u64, b'z' as u64, b'z' as u64]);
    assert_eq!(stats.seeds_used, 1, "{stats:?}");
}

/// The running libFuzzer's scheduling group follows `Live::nice`, given how long it has gone
/// without new coverage: here a program with little to cover is lowered once it has gained
/// nothing for 300 ms.
#[test]
fn the_running_fuzzer_s_priority_follows_its_coverage() {
    if std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled").map_or(true, |v| v.trim() != "1") {
        eprintln!("skipped: no autogroups on this system");
        return;
    }
    let src = "extern void reach_error(void);\nvoid f(unsigned long m) { if (m * m == 0xfffffffffffffffdUL) reach_error(); }\n";
    let b = build("plateau", src, "f");
    let asked = std::sync::Mutex::new(vec![]);
    let nice = |quiet: Duration| {
        let n = if quiet >= Duration::from_millis(300) { 13 } else { 0 };
        asked.lock().unwrap().push(n);
        n
    };
    let cancel = AtomicBool::new(false);
    let replay = |_: &Witness| false;
    let live = Live { seeds_since: None, nice: Some(&nice) };
    // The group's nice value, read from outside while the search runs: the fuzzing
    // executable's processes are those whose executable lies in this fuzzer's directory.
    let dir = std::fs::canonicalize(b.fuzzer.dir()).unwrap();
    let seen = std::sync::Mutex::new(std::collections::BTreeSet::new());
    std::thread::scope(|scope| {
        let search = scope.spawn(|| b.fuzzer.search(&[], &[], &[], &FuzzLimits::until(Instant::now() + Duration::from_secs(3)), &cancel, &replay, &live));
        while !search.is_finished() {
            for pid in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
                let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
                if exe.starts_with(&dir) || exe.to_string_lossy().contains(&*dir.to_string_lossy()) {
                    if let Some(n) = std::fs::read_to_string(format!("/proc/{pid}/autogroup")).ok().and_then(|t| t.split_whitespace().last()?.parse::<i32>().ok()) {
                        seen.lock().unwrap().insert(n);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let (end, _) = search.join().unwrap();
        assert!(matches!(end, FuzzEnd::GaveUp(_)), "{end:?}");
    });
    let asked = asked.into_inner().unwrap();
    assert_eq!(asked.first(), Some(&0), "{asked:?}");
    assert!(asked.contains(&13), "never lowered: {asked:?}");
    let seen = seen.into_inner().unwrap();
    assert!(seen.contains(&0) && seen.contains(&13), "the run's group went through {seen:?}");
}

/// The same seed takes libFuzzer down the same path on a busy machine: inputs that loop too
/// long are cut after a number of loop iterations, not of CPU ticks, and reads past the
/// buffers fault instead of reading the driver's counters. Two counters over arrays read up to
/// a length from the input (most inputs read far past the buffers, many loop for long).
#[test]
fn fuzzing_repeats_under_load() {
    let src = "extern void reach_error(void);\nvoid f(const int *A, const int *B, int n) { int a = 0, b = 0; for (int i = 0; i < n; i++) { if (A[i] == 7) a++; if (B[i] != 7) b++; } if (a == 4 && b == 3) reach_error(); }\n";
    // A fuzzer each: a second search of the same one starts from the first one's corpus, with
    // a libFuzzer seed of its own.
    let a = build("repeats", src, "f");
    let (dict, fills) = a.engine_inputs("repeats", "f");
    let (end, quiet, _) = a.fuzz_filled(&[], &dict, &fills, Duration::from_secs(30));
    a.confirmed(&end);
    let b = build("repeats", src, "f");
    let stop = AtomicBool::new(false);
    let busy = std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        let out = b.fuzz_filled(&[], &dict, &fills, Duration::from_secs(60));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        out
    });
    b.confirmed(&busy.0);
    eprintln!("repeats: {quiet:?} then, busy, {:?}", busy.1);
    assert_eq!(quiet.executions, busy.1.executions, "another path under load");
}

/// Twenty inputs, each inside the same narrow range: no single one adds coverage, and a
/// constant-fill seed of the compared constant's neighbour is the witness at once. (libFuzzer
/// alone got there within 4 s in one run of four with one layout of the executable, never with
/// another: the test asserts what the seed is, not what the fuzzer misses.)
const ALL_IN_RANGE: &str = r#"
extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);
int main(void) {
  int k = 0;
  for (int i = 0; i < 20; i++) {
    int v = __VERIFIER_nondet_int();
    if (v > 5000 && v < 5010)
      ++k;
  }
  if (k == 20)
    reach_error();
  return 0;
}
"#;

#[test]
fn constant_fill_seeds_put_every_input_in_range_at_once() {
    let b = build("all_in_range", ALL_IN_RANGE, "main");
    let fills = b.fill_values("all_in_range", "main");
    assert!(fills.contains(&5001), "{fills:?}");
    // The seed of 5001 reaches the target natively; the one of 5000, the constant itself, does not.
    let layout = b.fuzzer.layout();
    let seed = layout.decode(&layout.fill_seed(5001, 32), None);
    assert!(seed.nondet.len() >= 20 && seed.nondet[..20].iter().all(|v| *v == 5001), "{seed:?}");
    assert!(b.replayer.run(&seed).unwrap().reached.is_some(), "{seed:?}");
    assert!(b.replayer.run(&layout.decode(&layout.fill_seed(5000, 32), None)).unwrap().reached.is_none());
    let (end, stats, took) = b.fuzz_filled(&[], &[], &fills, Duration::from_secs(20));
    let w = b.confirmed(&end);
    assert!(w.nondet.iter().take(20).all(|v| (5001..5010).contains(&(*v as u32))), "{w:?}");
    eprintln!("all_in_range: reached in {took:?}, {stats:?}");
}

/// Nine cells equal to zero, counted over an array whose length is an input: no single cell
/// adds coverage, the word fills put 9, 10 or 8 in every cell, and a zero-data seed (`n = 9`,
/// the array zeros) is the witness in one execution.
#[test]
fn zero_data_seeds_count_the_default_cells() {
    let src = "extern void reach_error(void);\nvoid f(const int *A, int n) { int c = 0; for (int i = 0; i < n; i++) if (A[i] == 0) c++; if (c == 9) reach_error(); }\n";
    let b = build("zero_cells", src, "f");
    let fills = b.fill_values("zero_cells", "f");
    assert!(fills.contains(&9), "{fills:?}");
    let layout = b.fuzzer.layout();
    assert!(b.replayer.run(&layout.decode(&layout.zero_data_seed(9, 0), None)).unwrap().reached.is_some());
    assert!(b.replayer.run(&layout.decode(&layout.fill_seed(9, 0), None)).unwrap().reached.is_none());
    let (end, stats, took) = b.fuzz_filled(&[], &[], &fills, Duration::from_secs(20));
    let w = b.confirmed(&end);
    assert_eq!(w.params[1], ParamInput::Int { name: "n".into(), width: 32, value: 9 });
    assert!(stats.executions < 1000, "found among the seeds, not by mutation: {stats:?}");
    eprintln!("zero_cells: reached in {took:?}, {stats:?}");
}

/// Six `x`s in a buffer whose length the program bounds by 8: coverage cannot see the count
/// grow, and the word fills put the character in one byte of four (and the length at 120). A
/// byte fill of `'x'` beside the fill value 8 is the witness in one execution. (Whether
/// libFuzzer alone gets there within seconds depends on where the linker puts the program's
/// comparisons, which value profiling hashes: 1 s with one layout, not within 4 s with another;
/// so the test asserts what the seed is, not what the fuzzer misses.)
const MANY_CHARS: &str = r#"
extern void reach_error(void);
void count_x(const char *s, unsigned len) {
  if (len > 8)
    return;
  int k = 0;
  for (unsigned i = 0; i < len; i++)
    if (s[i] == 'x')
      k++;
  if (k >= 6)
    reach_error();
}
"#;

#[test]
fn byte_fill_seeds_put_a_character_in_every_byte_under_a_small_length_bound() {
    let b = build("many_chars", MANY_CHARS, "count_x");
    let fills = b.fill_values("many_chars", "count_x");
    assert!(fills.contains(&(b'x' as u64)) && fills.contains(&8), "{fills:?}");
    // The seed itself reaches the target natively: every byte 'x', the length 8.
    let layout = b.fuzzer.layout();
    let seed = layout.decode(&layout.byte_fill_seed(b'x', 8, 16), None);
    let ParamInput::Buffer { bytes, .. } = &seed.params[0] else { panic!("{seed:?}") };
    assert!(bytes.len() >= 8 && bytes[..8].iter().all(|c| *c == b'x'), "{seed:?}");
    assert!(matches!(seed.params[1], ParamInput::Int { value: 8, .. }), "{seed:?}");
    assert!(b.replayer.run(&seed).unwrap().reached.is_some(), "the byte-fill seed should reach the target: {seed:?}");
    // A word fill of 'x' is not a witness (one byte in four, the length 120).
    let word = layout.decode(&layout.fill_seed(b'x' as u64, 16), None);
    assert!(b.replayer.run(&word).unwrap().reached.is_none(), "{word:?}");
    // And the search with the fills finds it within seconds.
    let (end, stats, took) = b.fuzz_filled(&[], &[], &fills, Duration::from_secs(3));
    let w = b.confirmed(&end);
    let ParamInput::Buffer { bytes, .. } = &w.params[0] else { panic!("{w:?}") };
    assert!(bytes.iter().filter(|c| **c == b'x').count() >= 6, "{w:?}");
    eprintln!("many_chars: reached in {took:?}, {stats:?}");
}

#[test]
fn an_unreachable_target_gives_up_at_the_deadline() {
    // Squares are 0 or 1 modulo 4; 0xffffffff is 3.
    let src = r#"
extern void reach_error(void);
void f(unsigned x, unsigned y) { if (x * x == 0xffffffffu && y > 7) reach_error(); }
"#;
    let b = build("unreach", src, "f");
    let budget = Duration::from_secs(2);
    let (end, stats, took) = b.fuzz(&[], &[], budget);
    eprintln!("unreachable: {took:?}, {stats:?}, {end:?}");
    assert!(matches!(end, FuzzEnd::GaveUp(_)), "{end:?}");
    assert!(took >= budget - Duration::from_millis(300), "fuzzed until the deadline: {took:?}");
    assert!(took < budget + Duration::from_millis(1500), "stopped at the deadline: {took:?}");
    assert!(stats.executions > 1000, "{stats:?}");
}

#[test]
fn globals_are_reset_and_exit_is_not_a_crash() {
    // Without the reset, `calls` is 1 only in the first run; without turning `exit` into a
    // return, libFuzzer would stop at the first odd input.
    let src = r#"
#include <stdlib.h>
extern void reach_error(void);
int calls;
void f(int x) {
  calls++;
  if (x & 1) exit(0);
  if (calls == 1 && x == 0x4d2c0) reach_error();
}
"#;
    let b = build("globals", src, "f");
    let (w, _) = b.found_alone("globals");
    assert_eq!(w.params[0], ParamInput::Int { name: "x".into(), width: 32, value: 0x4d2c0 });
}

#[test]
fn cancelling_stops_the_fuzzer() {
    let b = build("cancel", "extern void reach_error(void);\nvoid f(unsigned x) { if (x * x == 0xffffffffu) reach_error(); }\n", "f");
    let cancel = AtomicBool::new(false);
    let replay = |w: &Witness| b.replayer.run(w).map(|o| o.reached.is_some()).unwrap_or(false);
    let start = Instant::now();
    let (end, _) = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(700));
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        b.fuzzer.search(&[], &[], &[], &FuzzLimits::until(start + Duration::from_secs(60)), &cancel, &replay, &Live::default())
    });
    assert!(matches!(&end, FuzzEnd::GaveUp(r) if r == "cancelled"), "{end:?}");
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());
}

#[test]
fn pointer_fields_follow_the_shape_of_the_seed() {
    let src = r#"
#include <string.h>
extern void reach_error(void);
struct req { const char *method; const char *path; int len; };
void f(struct req *r, const char *body) {
  if (strcmp(r->method, "POST") == 0 && r->path[0] == '/' && r->len == 1000 && strncmp(body, "k=v", 3) == 0)
    reach_error();
}
"#;
    let b = build("shape", src, "f");
    // As an APC model gives it: `r` with its two pointer slots, nothing solved yet.
    use apc_llvm::witness::{Pointee, BUFFER_SLACK};
    let empty = || vec![0u8; BUFFER_SLACK];
    let seed = Witness {
        params: vec![
            ParamInput::Buffer {
                name: "r".into(),
                bytes: vec![0; 24 + BUFFER_SLACK],
                pointees: vec![Pointee::buffer(0, empty(), vec![]), Pointee::buffer(8, empty(), vec![])],
                front: 0,
            },
            ParamInput::Buffer { name: "body".into(), bytes: empty(), pointees: vec![], front: 0 },
        ],
        nondet: vec![],
    };
    let (end, stats, took) = b.fuzz(&[seed], &[], Duration::from_secs(30));
    eprintln!("shape: {took:?}, {stats:?}");
    let w = b.confirmed(&end);
    let ParamInput::Buffer { bytes, pointees, .. } = &w.params[0] else { panic!("{w:?}") };
    assert_eq!(i32::from_le_bytes(bytes[16..20].try_into().unwrap()), 1000);
    assert!(pointees[0].bytes.starts_with(b"POST\0"), "{w:?}");
}

#[test]
fn main_with_arguments_gets_argc_and_the_nondet_stream() {
    let src = r#"
extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);
int main(int argc, char **argv) {
  if (argc == 3 && argv[2][0] == 0 && __VERIFIER_nondet_int() == 99999) reach_error();
  return 0;
}
"#;
    let b = build("argc", src, "main");
    let (w, _) = b.found_alone("argc");
    assert_eq!(w.params[0], ParamInput::Int { name: "argc".into(), width: 32, value: 3 });
    assert_eq!(w.nondet, vec![99999]);
}

#[test]
fn crashes_and_hangs_that_are_not_the_target_do_not_stop_the_fuzzer() {
    let src = r#"
extern void reach_error(void);
void f(int x, int y) {
  if (x == 5) *(volatile int *)0 = 1;
  if (x == 6) for (;;) {}
  if (x == 0x1234567 && y == 0x89) reach_error();
}
"#;
    let b = build("crashy", src, "f");
    // Seeds that crash and hang: dropped from the corpus, never stopping a restart.
    let seed = |x: u64| Witness {
        params: vec![ParamInput::Int { name: "x".into(), width: 32, value: x }, ParamInput::Int { name: "y".into(), width: 32, value: 0 }],
        nondet: vec![],
    };
    let (end, stats, took) = b.fuzz(&[seed(5), seed(6), seed(7)], &[], Duration::from_secs(30));
    eprintln!("crashy: {took:?}, {stats:?}");
    let w = b.confirmed(&end);
    assert_eq!(w.params[0], ParamInput::Int { name: "x".into(), width: 32, value: 0x1234567 });
}

/// Engines race on several threads: one fuzzer serves them all.
#[allow(dead_code)]
fn fuzzer_is_shared_across_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Fuzzer>();
}

/// Fuzzing alone (no seeds, no dictionary) on every benchmark with `--call reach_error`:
/// prints the time to a replayed witness, and checks that an `expect=unreachable` one is never
/// reached. Slow (10 s per open benchmark): `cargo test --release --test fuzz_tests -- --ignored`.
#[test]
#[ignore]
fn benchmarks_fuzzed_alone() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("c-benchmarks");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).collect();
    files.sort();
    for path in files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "c")) {
        let src = std::fs::read_to_string(&path).unwrap();
        let Some(header) = src.lines().find_map(|l| l.strip_prefix("// apc:")) else { continue };
        let words: Vec<&str> = header.split_whitespace().collect();
        let Some(function) = words.iter().position(|w| *w == "--function").map(|k| words[k + 1]) else { continue };
        if !header.contains("--call reach_error") || std::env::var("APC_BENCH").is_ok_and(|b| !path.to_string_lossy().contains(&b)) {
            continue;
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let b = build(&name, &src, function);
        // APC_BENCH_DICT=1: the source's string literals as the dictionary (what the APC's
        // constant arrays would give).
        let dict: Vec<Vec<u8>> = if std::env::var_os("APC_BENCH_DICT").is_some() {
            src.split('"').skip(1).step_by(2).filter(|s| !s.is_empty()).map(|s| s.as_bytes().to_vec()).collect()
        } else {
            vec![]
        };
        let (end, stats, took) = b.fuzz(&[], &dict, Duration::from_secs(10));
        let reached = matches!(end, FuzzEnd::Reached(_));
        eprintln!("BENCH {name:<22} {:<12} {took:>12.3?} {:>10} execs", if reached { "reached" } else { "gave up" }, stats.executions);
        if reached {
            b.confirmed(&end);
        }
        assert!(!(reached && header.contains("expect=unreachable")), "{name}: reached an unreachable target");
    }
}

/// A second search of the same fuzzer (a new round when the APC offers seeds) starts from the
/// first one's corpus: the coverage it reached is not fuzzed for again.
#[test]
fn a_new_round_goes_on_from_the_last_round_s_corpus() {
    // Many branches to cover, and a target nothing reaches (no square is 5 modulo 8).
    let src = "extern void reach_error(void);\n\
               void f(const unsigned char *s, unsigned long magic) {\n\
               \x20 int k = 0;\n\
               \x20 for (int i = 0; i < 16; i++) { if (s[i] == 'a' + i) k++; else if (s[i] == 'A' + i) k += 2; }\n\
               \x20 if (k > 3 && magic * magic == 0xfffffffffffffffdUL) reach_error();\n\
               }\n";
    let b = build("carry", src, "f");
    let (end, first, _) = b.fuzz(&[], &[], Duration::from_secs(2));
    assert!(matches!(end, FuzzEnd::GaveUp(_)), "{end:?}");
    assert!(first.corpus_size > 5, "{first:?}");
    // Too short to find that coverage again from scratch.
    let (_, second, _) = b.fuzz(&[], &[], Duration::from_millis(300));
    assert!(second.corpus_size >= first.corpus_size, "the second round started over: {first:?} then {second:?}");
}
