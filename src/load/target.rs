//! Finding the requested target blocks in the freshly parsed module and marking them.
//!
//! Targets are resolved *before* normalisation, on the code as the user wrote it, then every
//! target block gets a call `__apc_target_hit(k)` as its first instruction. The marker survives
//! inlining and mem2reg (it is an external call), so after normalisation the target blocks are
//! simply the blocks that call it, wherever inlining copied them. The same marker later records
//! the hit during native replay.

use super::llvm;
use crate::error::{list_names, Error, Result};
use llvm_sys::prelude::LLVMModuleRef;
use llvm_sys::LLVMOpcode;
use std::collections::{BTreeSet, HashMap};

/// The marker function inserted at the top of every target block.
pub const TARGET_MARKER: &str = "__apc_target_hit";

/// What the user asked to reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetSpec {
    /// A basic block by its IR label.
    Block(String),
    /// The first block whose instructions carry this source line; with a column, the block
    /// of the code closest to it from the left (the statement starting there).
    Line { file: String, line: u32, col: Option<u32> },
    /// Every block that calls this function.
    Call(String),
}

impl TargetSpec {
    /// Parses `FILE:LINE` or `FILE:LINE:COL`.
    pub fn parse_line(s: &str) -> Result<TargetSpec> {
        let bad = || Error::bad_input(format!("--line expects FILE:LINE or FILE:LINE:COL, got '{s}'"));
        let (head, last) = s.rsplit_once(':').ok_or_else(bad)?;
        let last: u32 = last.parse().map_err(|_| bad())?;
        let (file, line, col) = match head.rsplit_once(':').and_then(|(f, l)| Some((f, l.parse::<u32>().ok()?))) {
            Some((file, line)) => (file, line, Some(last)),
            None => (head, last, None),
        };
        if file.is_empty() || line == 0 || col == Some(0) {
            return Err(bad());
        }
        Ok(TargetSpec::Line { file: file.to_string(), line, col })
    }

    /// One target as a targets file writes it: `block:LABEL`, `line:FILE:N` or `call:FUNC`.
    pub fn parse_item(s: &str) -> Result<TargetSpec> {
        match s.split_once(':') {
            Some(("block", l)) if !l.is_empty() => Ok(TargetSpec::Block(l.to_string())),
            Some(("line", l)) => TargetSpec::parse_line(l),
            Some(("call", f)) if !f.is_empty() => Ok(TargetSpec::Call(f.to_string())),
            _ => Err(Error::bad_input(format!("'{s}' is not a target (block:LABEL, line:FILE:N or call:FUNC)"))),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            TargetSpec::Block(l) => format!("block {l}"),
            TargetSpec::Line { file, line, col: None } => format!("line {file}:{line}"),
            TargetSpec::Line { file, line, col: Some(c) } => format!("line {file}:{line}:{c}"),
            TargetSpec::Call(f) => format!("call to {f}"),
        }
    }
}

/// A target block found in the original module.
#[derive(Clone, Debug)]
pub struct ResolvedTarget {
    pub function: String,
    pub label: String,
    pub block: llvm::Block,
    /// The instruction the target starts at: the call of `--call`, the first instruction of
    /// `--line`'s line. `None` is the block's start (`--block`). A marker at the block's start
    /// would fire natively even when an earlier instruction of the block never returns.
    pub at: Option<llvm::Value>,
    /// For the report: a `--line` whose line has code in several blocks names the one chosen
    /// and the others with their columns, so the user can name another (`FILE:LINE:COL`).
    pub note: Option<String>,
}

/// Labels clang gives its own blocks without a dot: a C label of the same name (which cannot
/// hold a dot) is renamed with a number (`entry:` becomes `entry1`), and `--block entry` would
/// silently name the compiler's block instead.
/// Only names clang gives one block per function: others (`cleanup`) repeat with numbers.
const DOTLESS_CLANG_LABELS: &[&str] = &["entry", "return", "indirectgoto"];

/// The blocks of `func` named `label` plus a number, when `label` is one of
/// [`DOTLESS_CLANG_LABELS`]: C labels the compiler renamed.
fn renamed_c_labels(func: llvm::Value, label: &str) -> Vec<String> {
    if !DOTLESS_CLANG_LABELS.contains(&label) {
        return vec![];
    }
    llvm::blocks(func)
        .into_iter()
        .map(llvm::block_name)
        .filter(|n| n.strip_prefix(label).is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())))
        .collect()
}

/// The block of a line whose code comes closest to column `col` from the left (the statement
/// that starts at or before it): `cols[k]` are the columns of block `k`'s code on the line.
fn pick_column(cols: &[Vec<u32>], col: u32) -> Option<usize> {
    let mut best: Option<(u32, usize)> = None;
    for (k, cs) in cols.iter().enumerate() {
        if let Some(&c) = cs.iter().filter(|&&c| c <= col).max() {
            if best.is_none_or(|(bc, _)| c > bc) {
                best = Some((c, k));
            }
        }
    }
    best.map(|(_, k)| k)
}

/// `line F:L has code in N blocks: if.then (columns 22, 29; --line F:L:22), ...`, with the
/// chosen one marked.
fn line_blocks(candidates: &[(llvm::Value, llvm::Block, llvm::Value, Vec<u32>)], chosen: Option<usize>, file: &str, line: u32) -> String {
    let items: Vec<String> = candidates
        .iter()
        .enumerate()
        .map(|(k, (func, b, _, cols))| {
            let mut cs: Vec<u32> = cols.iter().copied().filter(|&c| c > 0).collect();
            cs.sort_unstable();
            cs.dedup();
            let first = cs.first().copied().unwrap_or(0);
            let list: Vec<String> = cs.iter().map(u32::to_string).collect();
            let mark = if Some(k) == chosen { "chosen, " } else { "" };
            format!("{}:{} ({mark}column{} {}; --line {file}:{line}:{first})", llvm::value_name(*func), llvm::block_name(*b), if cs.len() == 1 { "" } else { "s" }, list.join(", "))
        })
        .collect();
    format!("line {file}:{line} has code in {} blocks: {}", candidates.len(), items.join(", "))
}

fn find_function(m: LLVMModuleRef, name: &str) -> Option<llvm::Value> {
    llvm::functions(m).into_iter().find(|&f| llvm::value_name(f) == name)
}

/// Direct callees of `f` with a body.
fn defined_callees(f: llvm::Value) -> Vec<llvm::Value> {
    let mut out = vec![];
    for b in llvm::blocks(f) {
        for i in llvm::instructions(b) {
            if llvm::opcode(i) == LLVMOpcode::LLVMCall {
                let callee = llvm::called_value(i);
                if llvm::is_a_function(callee) && !llvm::is_declaration(callee) {
                    out.push(callee);
                }
            }
        }
    }
    out
}

/// Whether defined function `g` may run without a direct call of the program: its address
/// is taken (a callback, a handler, a constructor), or it stands in for a function of the C
/// library under the same name (its own `malloc`, which `strdup` calls).
pub fn runs_from_outside(g: llvm::Value) -> bool {
    llvm::address_taken(g) || super::clib::c_library_defines(&llvm::value_name(g)) == Some(true)
}

/// `f` first, then every function with a body it calls, transitively, in breadth-first order.
pub fn reachable_functions(f: llvm::Value) -> Vec<llvm::Value> {
    let mut order = vec![f];
    let mut seen: BTreeSet<usize> = [f as usize].into();
    let mut i = 0;
    while i < order.len() {
        for c in defined_callees(order[i]) {
            if seen.insert(c as usize) {
                order.push(c);
            }
        }
        i += 1;
    }
    order
}

/// `path` without `.` components and with `..` folded into its parent, lexically.
fn lexical(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = vec![];
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            _ => parts.push(c),
        }
    }
    let joined = parts.join("/");
    if absolute { format!("/{joined}") } else { joined }
}

/// Whether `wanted` (the user's `--line` file) names the source file of a debug location:
/// `debug_file` as clang recorded it, in compilation directory `debug_dir`. `wanted` may be a
/// suffix of the recorded path (`prog.c`, `src/prog.c`), `./`-prefixed, absolute, or relative to
/// the current directory.
fn file_matches(debug_file: &str, debug_dir: &str, wanted: &str) -> bool {
    let full = lexical(&if debug_file.starts_with('/') || debug_dir.is_empty() { debug_file.to_string() } else { format!("{debug_dir}/{debug_file}") });
    let want = lexical(wanted);
    if want.is_empty() {
        return false;
    }
    if full == want || full.ends_with(&format!("/{want}")) || lexical(debug_file) == want {
        return true;
    }
    // The same file by another route (symlinks, a relative path from elsewhere).
    match (std::fs::canonicalize(wanted), std::fs::canonicalize(&full)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Every line of `file` that holds code of `function` or the functions it calls (what
/// `--line` accepts there), in order: the targets of `--all-lines`.
pub fn lines_of(m: LLVMModuleRef, function: &str, file: &str) -> Result<Vec<TargetSpec>> {
    let f = find_function(m, function).expect("function checked by caller");
    let (mut lines, mut files, mut any_debug) = (std::collections::BTreeSet::new(), vec![], false);
    for func in reachable_functions(f) {
        for b in llvm::blocks(func) {
            for i in llvm::instructions(b) {
                let Some(l) = llvm::debug_line(i).filter(|&l| l > 0) else { continue };
                any_debug = true;
                let Some(df) = llvm::debug_file(i) else { continue };
                if file_matches(&df, &llvm::debug_dir(i), file) {
                    lines.insert(l);
                } else if !files.contains(&df) {
                    files.push(df);
                }
            }
        }
    }
    if !any_debug {
        return Err(Error::bad_input(format!("--all-lines {file}: function '{function}' has no debug line information (compile with -g)")));
    }
    if lines.is_empty() {
        return Err(Error::bad_input(format!(
            "--all-lines {file}: no code of '{function}' or its callees comes from '{file}' (their files: {})",
            list_names(&files)
        )));
    }
    Ok(lines.into_iter().map(|line| TargetSpec::Line { file: file.to_string(), line, col: None }).collect())
}

/// Resolves `spec` in `function` and, when not found there, in the functions it calls.
pub fn resolve(m: LLVMModuleRef, function: &str, spec: &TargetSpec) -> Result<Vec<ResolvedTarget>> {
    let f = find_function(m, function).expect("function checked by caller");
    let scope = reachable_functions(f);
    match spec {
        TargetSpec::Block(spec_label) => resolve_block(m, function, f, &scope, spec_label),
        TargetSpec::Line { file, line, col } => resolve_line(function, &scope, spec, file, line, col),
        TargetSpec::Call(callee) => resolve_call(m, function, &scope, callee),
    }
}

/// A target block of `func`, found at `at` (a line's first instruction, a call).
fn target_at(func: llvm::Value, b: llvm::Block, at: Option<llvm::Value>) -> ResolvedTarget {
    ResolvedTarget { function: llvm::value_name(func), label: llvm::block_name(b), block: b, at, note: None }
}

/// `--block [FUNC:]LABEL`: the function's block of that label, else the one callee's that has it.
fn resolve_block(m: LLVMModuleRef, function: &str, f: llvm::Value, scope: &[llvm::Value], spec_label: &String) -> Result<Vec<ResolvedTarget>> {
    // `FUNC:LABEL` names the function (a callee) whose block is meant.
    let (only, label) = match spec_label.split_once(':') {
        Some((func, l)) if find_function(m, func).is_some() => (Some(func), l.to_string()),
        _ => (None, spec_label.clone()),
    };
    let label = &label;
    if let Some(name) = only {
        if !scope.iter().any(|&g| llvm::value_name(g) == name) {
            return Err(Error::bad_input(format!("--block {spec_label}: '{function}' never calls '{name}'")));
        }
    }
    let hits_in = |func: llvm::Value| -> Vec<ResolvedTarget> {
        llvm::blocks(func).into_iter().filter(|&b| llvm::block_name(b) == *label).map(|b| target_at(func, b, None)).collect()
    };
    // The analysed function first; a callee's block only when the function has none,
    // and only when one callee has it (labels like `if.then` repeat across functions).
    let mut found: Vec<(String, Vec<ResolvedTarget>)> = vec![];
    for &func in scope {
        let name = llvm::value_name(func);
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let hits = hits_in(func);
        if hits.is_empty() {
            continue;
        }
        let renamed = renamed_c_labels(func, label);
        if !renamed.is_empty() {
            let mut close = vec![label.clone()];
            close.extend(renamed.iter().cloned());
            return Err(Error::bad_input(format!(
                "--block {spec_label}: '{label}' is a block the compiler makes itself in '{name}', and it renamed a C label '{label}:' to {}; name the block you mean (close names: {})",
                renamed.join(" or "),
                list_names(&close)
            )));
        }
        if func == f && only.is_none() {
            return Ok(hits);
        }
        found.push((name, hits));
    }
    match found.len() {
        0 => {}
        1 => return Ok(found.pop().expect("one").1),
        _ => {
            let names: Vec<String> = found.iter().map(|(n, _)| n.clone()).collect();
            return Err(Error::bad_input(format!(
                "--block {label}: several functions called by '{function}' have a block labelled '{label}' ({}); name one as FUNC:{label}",
                list_names(&names)
            )));
        }
    }
    let label = spec_label;
    let labels: Vec<String> = llvm::blocks(f).into_iter().map(llvm::block_name).collect();
    let stem = |l: &str| l.trim_end_matches(|c: char| c.is_ascii_digit()).to_ascii_lowercase();
    let close: Vec<String> = labels.iter().filter(|l| !l.is_empty() && stem(l) == stem(label)).cloned().collect();
    let hint = if labels.iter().all(|l| l.is_empty()) {
        " (its blocks have no names: compile with -fno-discard-value-names)".to_string()
    } else if !close.is_empty() {
        format!("; close names: {}; its blocks are: {}", list_names(&close), list_names(&labels))
    } else {
        format!("; its blocks are: {}", list_names(&labels))
    };
    Err(Error::bad_input(format!(
        "no block labelled '{label}' in function '{function}' or the functions it calls{hint}"
    )))
}

/// `--line FILE:LINE[:COL]`: the block of the code on that line (at that column).
fn resolve_line(function: &str, scope: &[llvm::Value], spec: &TargetSpec, file: &String, line: &u32, col: &Option<u32>) -> Result<Vec<ResolvedTarget>> {
    let shown = spec.describe();
    let shown = shown.trim_start_matches("line ");
    let mut any_debug = false;
    let mut file_seen = false;
    let mut files: Vec<String> = vec![];
    // Every block with code on the line: its first instruction there and the columns
    // of the line's code in it, in program order.
    let mut candidates: Vec<(llvm::Value, llvm::Block, llvm::Value, Vec<u32>)> = vec![];
    for &func in scope {
        for b in llvm::blocks(func) {
            for i in llvm::instructions(b) {
                if let Some(l) = llvm::debug_line(i) {
                    any_debug = true;
                    let Some(df) = llvm::debug_file(i) else { continue };
                    if !file_matches(&df, &llvm::debug_dir(i), file) {
                        if !files.contains(&df) {
                            files.push(df);
                        }
                        continue;
                    }
                    file_seen = true;
                    if l != *line {
                        continue;
                    }
                    let c = llvm::debug_column(i).unwrap_or(0);
                    match candidates.last_mut() {
                        Some((_, cb, _, cols)) if *cb == b => cols.push(c),
                        _ => candidates.push((func, b, i, vec![c])),
                    }
                }
            }
        }
    }
    if !any_debug {
        return Err(Error::bad_input(format!(
            "--line {shown}: function '{function}' has no debug line information (compile with -g)"
        )));
    }
    if !file_seen {
        return Err(Error::bad_input(format!(
            "--line {shown}: no code of '{function}' or its callees comes from '{file}' (their files: {})",
            list_names(&files)
        )));
    }
    if candidates.is_empty() {
        return Err(Error::bad_input(format!(
            "--line {shown}: no code of '{function}' or its callees is on that line"
        )));
    }
    let chosen = match col {
        None => 0,
        Some(c) => pick_column(&candidates.iter().map(|(_, _, _, cols)| cols.clone()).collect::<Vec<_>>(), *c).ok_or_else(|| {
            Error::bad_input(format!("--line {shown}: no code on that line starts at or before column {c}; {}", line_blocks(&candidates, None, file, *line)))
        })?,
    };
    let (func, b, at, _) = candidates[chosen];
    let mut t = target_at(func, b, Some(at));
    if candidates.len() > 1 {
        t.note = Some(line_blocks(&candidates, Some(chosen), file, *line));
    }
    Ok(vec![t])
}

/// `--call FUNC`: every block that calls it, in the function, its callees and callbacks.
fn resolve_call(m: LLVMModuleRef, function: &str, scope: &[llvm::Value], callee: &String) -> Result<Vec<ResolvedTarget>> {
    if find_function(m, callee).is_none() {
        let names: Vec<String> = llvm::functions(m).into_iter().map(llvm::value_name).collect();
        return Err(Error::bad_input(format!(
            "--call {callee}: the module has no function '{callee}'; functions: {}",
            list_names(&names)
        )));
    }
    let mut hits = vec![];
    for &func in scope {
        if llvm::value_name(func) == *callee {
            continue; // calls inside the callee itself are not "calls from the program"
        }
        for b in llvm::blocks(func) {
            let call = llvm::instructions(b).into_iter().find(|&i| {
                llvm::opcode(i) == LLVMOpcode::LLVMCall
                    && llvm::value_name(llvm::called_value(i)) == *callee
            });
            if let Some(call) = call {
                hits.push(target_at(func, b, Some(call)));
            }
        }
    }
    // Calls from functions run through a pointer to them (a signal handler, an `atexit`
    // or `qsort` callback) are targets too, for the native runs: the analysis does not
    // follow such functions, and the calls that may run them are marked as sites that
    // rule a proof out (see `bounds`), so that a run through them is replayed.
    let callbacks: Vec<llvm::Value> = llvm::functions(m)
        .into_iter()
        .filter(|&g| !llvm::is_declaration(g) && llvm::value_name(g) != *callee && runs_from_outside(g))
        .flat_map(reachable_functions)
        .filter(|&g| llvm::value_name(g) != *callee && !scope.contains(&g))
        .collect();
    let mut seen = BTreeSet::new();
    for g in callbacks {
        if !seen.insert(g as usize) {
            continue;
        }
        for b in llvm::blocks(g) {
            let call = llvm::instructions(b).into_iter().find(|&i| llvm::opcode(i) == LLVMOpcode::LLVMCall && llvm::value_name(llvm::called_value(i)) == *callee);
            if let Some(call) = call {
                hits.push(target_at(g, b, Some(call)));
            }
        }
    }
    if hits.is_empty() {
        return Err(Error::bad_input(format!("--call {callee}: '{function}' never calls '{callee}', directly or through its callees")));
    }
    Ok(hits)
}

/// Where the user's source has `t`: the file (as the debug information names it, joined to its
/// compilation directory when relative) and line of its first instruction with a line.
pub fn source_location(t: &ResolvedTarget) -> Option<(String, u32)> {
    let from = t.at.into_iter().chain(llvm::instructions(t.block));
    for i in from {
        if let (Some(line), Some(file)) = (llvm::debug_line(i), llvm::debug_file(i)) {
            let dir = llvm::debug_dir(i);
            let path = if file.starts_with('/') || dir.is_empty() { file } else { format!("{dir}/{file}") };
            return Some((path, line));
        }
    }
    None
}

/// Like [`source_location`], with the column of that instruction.
pub fn source_position(t: &ResolvedTarget) -> Option<(String, u32, u32)> {
    let from = t.at.into_iter().chain(llvm::instructions(t.block));
    for i in from {
        if let (Some(line), Some(file)) = (llvm::debug_line(i), llvm::debug_file(i)) {
            let dir = llvm::debug_dir(i);
            let path = if file.starts_with('/') || dir.is_empty() { file } else { format!("{dir}/{file}") };
            return Some((path, line, llvm::debug_column(i).unwrap_or(1)));
        }
    }
    None
}

/// Inserts the marker call into every resolved target block, where the target starts. All blocks
/// of one spec share the target number `id`.
pub fn instrument(m: LLVMModuleRef, targets: &[ResolvedTarget], id: u32) {
    let mut done: HashMap<usize, ()> = HashMap::new();
    for t in targets {
        if done.insert(t.block as usize, ()).is_none() {
            llvm::insert_marker_call(m, TARGET_MARKER, t.block, t.at, id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_specs_parse_and_reject_garbage() {
        assert_eq!(
            TargetSpec::parse_line("a/b.c:12").unwrap(),
            TargetSpec::Line { file: "a/b.c".into(), line: 12, col: None }
        );
        assert_eq!(TargetSpec::parse_line("b.c:12:7").unwrap(), TargetSpec::Line { file: "b.c".into(), line: 12, col: Some(7) });
        assert_eq!(TargetSpec::parse_line("b.c:12:7").unwrap().describe(), "line b.c:12:7");
        for bad in ["b.c", "b.c:x", ":3", "b.c:0", "b.c:3:0"] {
            let e = TargetSpec::parse_line(bad).unwrap_err();
            assert_eq!(e.exit_status(), 2, "{bad}");
        }
    }

    #[test]
    fn a_column_picks_the_statement_starting_at_or_before_it() {
        // `if (depth >= MAX) return ERR;`: the condition's code at 7..13, the return at 21.
        let cols = vec![vec![7, 13, 7], vec![21, 21]];
        assert_eq!(pick_column(&cols, 21), Some(1));
        assert_eq!(pick_column(&cols, 30), Some(1));
        assert_eq!(pick_column(&cols, 3), None);
        assert_eq!(pick_column(&cols, 7), Some(0));
        assert_eq!(pick_column(&cols, 20), Some(0));
    }

    #[test]
    fn debug_file_names_match_by_suffix() {
        assert!(file_matches("/tmp/x/prog.c", "", "prog.c"));
        assert!(file_matches("/tmp/x/prog.c", "", "x/prog.c"));
        assert!(!file_matches("/tmp/x/prog.c", "", "rog.c"));
        // Relative to the compilation directory, `./`-prefixed, absolute, with `..`.
        assert!(file_matches("src/prog.c", "/home/u/proj", "./src/prog.c"));
        assert!(file_matches("src/prog.c", "/home/u/proj", "/home/u/proj/src/prog.c"));
        assert!(file_matches("src/prog.c", "/home/u/proj", "/home/u/proj/lib/../src/./prog.c"));
        assert!(file_matches("./prog.c", "/home/u/proj", "prog.c"));
        assert!(!file_matches("src/prog.c", "/home/u/proj", "/home/u/other/src/prog.c"));
        assert!(!file_matches("src/prog.c", "/home/u/proj", "/prog.c"));
    }
}
