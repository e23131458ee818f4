//! ARCHITECTURE.md stays a true code map: it names every module under `src/` and every test file
//! under `tests/`, every path it names in backticks exists, and it stays short enough to read.
//! Pure Rust over the files; no build of the tool is needed.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn architecture() -> String {
    fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md at the repository root")
}

/// Every text between a pair of backticks.
fn quoted(text: &str) -> BTreeSet<String> {
    text.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// How ARCHITECTURE.md names each module of `src/`, relative to `src/`: `analysis.rs`,
/// `load/lower.rs`, and a directory (whose `mod.rs` it stands for) as `load/bounds/`.
fn module_names(dir: &Path, prefix: &str, out: &mut BTreeSet<String>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("readable src directory").map(|e| e.expect("directory entry").path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let sub = format!("{prefix}{name}/");
            out.insert(sub.clone());
            module_names(&path, &sub, out);
        } else if name.ends_with(".rs") && name != "mod.rs" {
            out.insert(format!("{prefix}{name}"));
        }
    }
}

#[test]
fn every_module_is_on_the_map() {
    let named = quoted(&architecture());
    let mut modules = BTreeSet::new();
    module_names(&root().join("src"), "", &mut modules);
    assert!(modules.contains("lib.rs") && modules.contains("load/"), "module walk found {modules:?}");
    let missing: Vec<_> = modules.iter().filter(|m| !named.contains(*m)).collect();
    assert!(missing.is_empty(), "ARCHITECTURE.md does not name these modules (relative to src/, in backticks): {missing:?}");
}

#[test]
fn every_test_file_is_on_the_map() {
    let named = quoted(&architecture());
    let mut missing = vec![];
    for entry in fs::read_dir(root().join("tests")).expect("tests directory") {
        let name = entry.expect("directory entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".rs") && !named.contains(&format!("tests/{name}")) {
            missing.push(name);
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "ARCHITECTURE.md does not name these test files (as `tests/NAME.rs`): {missing:?}");
}

#[test]
fn every_path_on_the_map_exists() {
    let root = root();
    let mut stale = vec![];
    for token in quoted(&architecture()) {
        // Relative paths only: a word with a slash and nothing but path characters.
        let pathlike = token.contains('/')
            && !token.starts_with('/')
            && token.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
        if pathlike && !root.join("src").join(&token).exists() && !root.join(&token).exists() {
            stale.push(token);
        }
    }
    assert!(stale.is_empty(), "ARCHITECTURE.md names paths that exist neither under src/ nor at the root: {stale:?}");
}

#[test]
fn the_map_stays_short() {
    let text = architecture();
    assert!(text.len() <= 18_432, "ARCHITECTURE.md is {} bytes; keep it a map (about 17 KB at most)", text.len());
    for (i, line) in text.lines().enumerate() {
        assert!(line.chars().count() <= 400, "ARCHITECTURE.md line {} is {} characters: no cell longer than a short paragraph", i + 1, line.chars().count());
    }
}
