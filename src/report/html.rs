//! The HTML report of a batch (`--html DIR`): each source file with its analysed lines marked
//! reached (with the witness and test), proved unreachable or unknown (with the reason), and
//! totals per function. One self-contained `index.html`: inline CSS, no script, no network
//! asset, so that it reads offline and as a CI artifact.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// What one line shows: the verdicts of the targets on it, combined.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    Reached,
    Unknown,
    Unreachable,
}

impl Mark {
    fn of(verdict: &str) -> Mark {
        match verdict {
            "reachable" => Mark::Reached,
            "unreachable" => Mark::Unreachable,
            _ => Mark::Unknown,
        }
    }

    fn class(self) -> &'static str {
        match self {
            Mark::Reached => "reached",
            Mark::Unknown => "unknown",
            Mark::Unreachable => "unreachable",
        }
    }

    /// A line whose code ran once is reached; it is unreachable only when every target on it
    /// was proved so.
    fn join(self, other: Mark) -> Mark {
        self.min(other)
    }
}

const CSS: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse}td,th{padding:2px 8px;vertical-align:top}
table.totals td,table.totals th{border:1px solid #bbb;text-align:right}table.totals td:first-child{text-align:left}
table.src{width:100%;font-family:monospace;font-size:13px}
table.src td.n{color:#888;text-align:right;user-select:none;width:3em}
table.src td.m{width:1.2em;text-align:center;font-weight:bold}
table.src td.c{white-space:pre}
tr.reached td.c,tr.reached td.m{background:#c8f0c8}tr.reached td.m{color:#176117}
tr.unreachable td.c,tr.unreachable td.m{background:#d6e4ff}tr.unreachable td.m{color:#1f3f8f}
tr.unknown td.c,tr.unknown td.m{background:#ffe7b3}tr.unknown td.m{color:#8a5a00}
td.i{font-family:sans-serif;font-size:12px;max-width:40em}
details summary{cursor:pointer}
.legend span{padding:1px 8px;margin-right:8px}
.k-reached{background:#c8f0c8}.k-unreachable{background:#d6e4ff}.k-unknown{background:#ffe7b3}";

/// Writes `DIR/index.html` for a batch report in JSON (as `--json` prints it, or merged).
pub fn write(dir: &Path, batch: &Value) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("index.html"), render(batch))
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// The page of a batch.
pub fn render(batch: &Value) -> String {
    let targets: Vec<&Value> = batch["targets"].as_array().map(|t| t.iter().collect()).unwrap_or_default();
    let function = batch["function"].as_str().unwrap_or("?");
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>apc-llvm: {} of {}</title><style>{CSS}</style></head><body>\n",
        esc(batch["batch"].as_str().unwrap_or("batch")),
        esc(function)
    );
    let s = &batch["summary"];
    let _ = writeln!(
        out,
        "<h1>apc-llvm: {} of <code>{}</code></h1>\n<p>{} targets: {} reachable (replayed), {} unreachable (proved), {} unknown.</p>",
        esc(batch["batch"].as_str().unwrap_or("batch")),
        esc(function),
        targets.len() + batch["skipped"].as_array().map_or(0, |s| s.len()),
        s["reachable"],
        s["unreachable"],
        s["unknown"]
    );
    out.push_str("<p class=\"legend\"><span class=\"k-reached\">✓ reached</span><span class=\"k-unreachable\">✗ proved unreachable</span><span class=\"k-unknown\">? unknown</span></p>\n");

    // Totals per function whose code holds the target.
    let mut totals: BTreeMap<String, [usize; 3]> = BTreeMap::new();
    for t in &targets {
        let f = t["target_function"].as_str().or(t["function"].as_str()).unwrap_or("?").to_string();
        let slot = match Mark::of(t["verdict"].as_str().unwrap_or("")) {
            Mark::Reached => 0,
            Mark::Unreachable => 1,
            Mark::Unknown => 2,
        };
        totals.entry(f).or_default()[slot] += 1;
    }
    out.push_str("<h2>Per function</h2>\n<table class=\"totals\"><tr><th>function</th><th>targets</th><th>reached</th><th>unreachable</th><th>unknown</th></tr>\n");
    for (f, [r, u, k]) in &totals {
        let _ = writeln!(out, "<tr><td><code>{}</code></td><td>{}</td><td>{r}</td><td>{u}</td><td>{k}</td></tr>", esc(f), r + u + k);
    }
    out.push_str("</table>\n");

    // Targets per file and line.
    let mut files: BTreeMap<String, BTreeMap<u64, Vec<&Value>>> = BTreeMap::new();
    let mut unplaced: Vec<&Value> = vec![];
    for t in &targets {
        match t["location"].as_str().and_then(|l| l.rsplit_once(':')).and_then(|(f, l)| Some((f.to_string(), l.parse::<u64>().ok()?))) {
            Some((f, l)) => files.entry(f).or_default().entry(l).or_default().push(t),
            None => unplaced.push(t),
        }
    }
    for (file, lines) in &files {
        let _ = writeln!(out, "<h2>{}</h2>", esc(file));
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                let _ = writeln!(out, "<p>The source could not be read ({}); its targets:</p>", esc(&e.to_string()));
                String::new()
            }
        };
        let mut src: Vec<&str> = text.lines().collect();
        // Lines past the file's end (an edited file) are still listed.
        let last = lines.keys().next_back().copied().unwrap_or(0) as usize;
        while src.len() < last {
            src.push("");
        }
        out.push_str("<table class=\"src\">\n");
        for (k, code) in src.iter().enumerate() {
            let n = k as u64 + 1;
            match lines.get(&n) {
                Some(here) => {
                    let mark = here.iter().map(|t| Mark::of(t["verdict"].as_str().unwrap_or(""))).reduce(Mark::join).unwrap_or(Mark::Unknown);
                    let sign = match mark {
                        Mark::Reached => "✓",
                        Mark::Unreachable => "✗",
                        Mark::Unknown => "?",
                    };
                    let _ = writeln!(
                        out,
                        "<tr id=\"L{n}\" class=\"{c}\" data-verdict=\"{c}\"><td class=\"n\">{n}</td><td class=\"m\">{sign}</td><td class=\"c\">{}</td><td class=\"i\">{}</td></tr>",
                        esc(code),
                        details(here),
                        c = mark.class()
                    );
                }
                None => {
                    let _ = writeln!(out, "<tr><td class=\"n\">{n}</td><td class=\"m\"></td><td class=\"c\">{}</td><td class=\"i\"></td></tr>", esc(code));
                }
            }
        }
        out.push_str("</table>\n");
    }
    if !unplaced.is_empty() {
        out.push_str("<h2>Targets without a source line</h2>\n<table class=\"src\">\n");
        for t in unplaced {
            let c = Mark::of(t["verdict"].as_str().unwrap_or("")).class();
            let _ = writeln!(out, "<tr class=\"{c}\"><td class=\"c\">{}</td><td class=\"i\">{}</td></tr>", esc(t["target_spec"].as_str().unwrap_or("?")), details(&[t]));
        }
        out.push_str("</table>\n");
    }
    if let Some(skipped) = batch["skipped"].as_array().filter(|s| !s.is_empty()) {
        out.push_str("<h2>Not analysed (the batch was stopped)</h2>\n<ul>\n");
        for s in skipped {
            let _ = writeln!(out, "<li>{}</li>", esc(s.as_str().unwrap_or("?")));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</body></html>\n");
    out
}

/// What the targets of one line say: verdict, then witness and test, or the reason.
fn details(targets: &[&Value]) -> String {
    let mut out = String::new();
    for t in targets {
        let verdict = t["verdict"].as_str().unwrap_or("unknown");
        let spec = t["target_spec"].as_str().unwrap_or("?");
        let body = match verdict {
            "reachable" => {
                let mut b = format!("witness: {}", esc(&super::sarif::witness_text(&t["witness"])));
                if let Some(e) = t["engine"].as_str() {
                    let _ = write!(b, " (found by {})", esc(e));
                }
                let tests: Vec<&str> = t["tests"].as_array().into_iter().flatten().filter_map(|x| x.as_str()).collect();
                if !tests.is_empty() {
                    let _ = write!(b, "<br>test: {}", esc(&tests.join(", ")));
                }
                b
            }
            _ => format!("reason: {}", esc(t["reason"].as_str().unwrap_or(""))),
        };
        let _ = write!(out, "<details><summary>{} {verdict}</summary>{body}</details>", esc(spec));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_reached_if_one_of_its_targets_is() {
        assert!(Mark::Reached.join(Mark::Unreachable) == Mark::Reached);
        assert!(Mark::Unreachable.join(Mark::Unknown) == Mark::Unknown);
        assert!(Mark::Unreachable.join(Mark::Unreachable) == Mark::Unreachable);
    }
}
