//! The module layers of ARCHITECTURE.md ("Layers"), checked: a module names (`use crate::…`,
//! `crate::x::…`) only modules of a lower tier, except the exceptions listed below.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Tiers from the bottom; keep in step with the table in ARCHITECTURE.md.
const TIERS: &[&[&str]] = &[
    &["error", "ops", "priority", "jailfs"],
    &["scratch", "ir", "expr"],
    &["cleanup", "cfg"],
    &["load"],
    &["symex"],
    &["solve"],
    &["apc", "summary"],
    &["witness"],
    &["replay"],
    &["chc", "dse", "fuzz", "report"],
    &["engine"],
    &["config"],
    &["backstop"],
    &["analysis"],
    &["api"],
    &["main"],
];

/// Imports that break the tiers on purpose: (importer, imported, why).
const EXCEPTIONS: &[(&str, &str, &str)] = &[
    ("apc", "summary", "the path builder applies a loop's summary at the loop's entry"),
    ("summary", "apc", "a loop iteration is executed by the path builder"),
];

/// Names the crate root re-exports, and the module each comes from.
const ROOT_REEXPORTS: &[(&str, &str)] = &[("Config", "config"), ("Error", "error"), ("Result", "error")];

fn tier(module: &str) -> Option<usize> {
    TIERS.iter().position(|t| t.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source with comments and the contents of string and character literals blanked (newlines
/// kept, so line numbers stay right).
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let raw_hashes = (c[i] == 'r' && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_')))
            .then(|| c[i + 1..].iter().take_while(|&&ch| ch == '#').count())
            .filter(|&n| c.get(i + 1 + n) == Some(&'"'));
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if let Some(n) = raw_hashes {
            let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat('#').take(n)).collect();
            i += n + 2;
            while i < c.len() && !c[i..].starts_with(&close) {
                blank(&mut out, c[i]);
                i += 1;
            }
            i += close.len();
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                }
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && c.get(i + 1) == Some(&'\\') {
            // An escaped character literal such as '\'' or '\u{7f}'.
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            i += 3;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn identifier(s: &str) -> &str {
    let end = s.find(|ch: char| !(ch.is_alphanumeric() || ch == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The first segment of each item of a `{…}` group that starts `s`.
fn group_heads(s: &str) -> Vec<&str> {
    let mut heads = vec![];
    let (mut depth, mut start) = (0, 1);
    for (k, ch) in s.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                heads.push(identifier(s[start..k].trim_start()));
                start = k + 1;
                if ch == '}' {
                    break;
                }
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    heads.into_iter().filter(|h| !h.is_empty() && *h != "self").collect()
}

/// The top-level modules `code` names through `crate::`, with their line numbers.
fn crate_references(code: &str) -> Vec<(usize, String)> {
    let mut out = vec![];
    for (at, _) in code.match_indices("crate::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|ch| ch.is_alphanumeric() || ch == '_' || ch == '$') {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = code[at + "crate::".len()..].trim_start();
        let heads = if rest.starts_with('{') { group_heads(rest) } else { vec![identifier(rest)] };
        for head in heads {
            let module = ROOT_REEXPORTS.iter().find(|(name, _)| *name == head).map_or(head, |(_, m)| *m);
            out.push((line, module.to_string()));
        }
    }
    out
}

#[test]
fn modules_import_only_lower_tiers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    rust_files(&src, &mut files);
    files.sort();
    let mut violations = vec![];
    let mut unplaced = BTreeSet::new();
    let mut used_exceptions = BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_str().unwrap();
        let module = first.strip_suffix(".rs").unwrap_or(first);
        if module == "lib" {
            continue;
        }
        let Some(own) = tier(module) else {
            unplaced.insert(module.to_string());
            continue;
        };
        let code = code_only(&std::fs::read_to_string(file).unwrap());
        for (line, imported) in crate_references(&code) {
            if imported == module {
                continue;
            }
            let Some(theirs) = tier(&imported) else {
                unplaced.insert(imported.clone());
                continue;
            };
            if theirs < own {
                continue;
            }
            if EXCEPTIONS.iter().any(|(a, b, _)| *a == module && *b == imported) {
                used_exceptions.insert((module.to_string(), imported.clone()));
                continue;
            }
            violations.push(format!("src/{}:{line}: `{module}` (tier {own}) imports `{imported}` (tier {theirs})", rel.display()));
        }
    }
    assert!(unplaced.is_empty(), "modules missing from TIERS (and ARCHITECTURE.md's layer table): {unplaced:?}");
    assert!(violations.is_empty(), "imports against the layers (see ARCHITECTURE.md, \"Layers\"):\n{}", violations.join("\n"));
    let stale: Vec<_> = EXCEPTIONS.iter().filter(|(a, b, _)| !used_exceptions.contains(&(a.to_string(), b.to_string()))).collect();
    assert!(stale.is_empty(), "exceptions no import needs any more (remove them here and in ARCHITECTURE.md): {stale:?}");
}

#[test]
fn the_table_in_architecture_md_matches() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap();
    for (k, modules) in TIERS.iter().enumerate() {
        let row = format!("| {k} | {} |", modules.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "));
        assert!(doc.contains(&row), "ARCHITECTURE.md lacks the layer row `{row}`");
    }
    for (a, b, _) in EXCEPTIONS {
        let entry = format!("`{a}` → `{b}`");
        assert!(doc.contains(&entry), "ARCHITECTURE.md lacks the layer exception {entry}");
    }
}

#[test]
fn the_scanner_sees_through_comments_strings_and_groups() {
    let code = code_only("use crate::{ir::{A, B}, expr};\n// crate::engine\nlet s = \"crate::report\"; let c = '\"'; x(crate::solve::check);\n");
    let found: Vec<_> = crate_references(&code).into_iter().map(|(line, m)| format!("{line}:{m}")).collect();
    assert_eq!(found, ["1:ir", "1:expr", "3:solve"]);
}
