//! The report of many targets analysed one by one (`--cover`, `--all-calls`): one line per
//! target and a summary (replayed tests, proofs, unknowns); in JSON, every target's own report
//! (its `target_spec` says which target it is).

use super::{Report, Verdict};
use std::fmt::Write;

/// One target of a batch and its report.
pub struct BatchEntry {
    /// The target as asked (`block if.then`).
    pub target: String,
    /// Its position in the whole batch (before `--shard` split it): how shards merge back.
    pub index: usize,
    pub report: Report,
}

pub struct BatchReport {
    pub function: String,
    /// What the batch covers (`every block`, `every call to reach_error`).
    pub what: String,
    pub entries: Vec<BatchEntry>,
    /// Targets not analysed (the batch was stopped: memory bound, a stage that ignored the
    /// deadline).
    /// With their positions in the whole batch.
    pub skipped: Vec<(usize, String)>,
    /// Targets of the whole batch, all shards together.
    pub total: usize,
    /// `--shard K/N`: this report has the K-th of N shares of the targets.
    pub shard: Option<(usize, usize)>,
}

/// The text of source line `FILE:LINE`, trimmed (`None` when the file cannot be read).
fn source_text(location: &str) -> Option<String> {
    let (file, line) = location.rsplit_once(':')?;
    let line: usize = line.parse().ok()?;
    let text = std::fs::read_to_string(file).ok()?;
    let l = text.lines().nth(line.checked_sub(1)?)?.trim();
    (!l.is_empty()).then(|| l.to_string())
}

impl BatchReport {
    fn count(&self, v: Verdict) -> usize {
        self.entries.iter().filter(|e| e.report.verdict == v).count()
    }

    /// Replayed witnesses (each a test), proofs, and the rest.
    pub fn summary(&self) -> (usize, usize, usize) {
        (self.count(Verdict::Reachable), self.count(Verdict::Unreachable), self.count(Verdict::Unknown) + self.skipped.len())
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let (r, u, k) = self.summary();
        let shard = self.shard.map(|(k, n)| format!(" (shard {k}/{n} of {})", self.total)).unwrap_or_default();
        let _ = writeln!(out, "{} of '{}': {} targets{shard}", self.what, self.function, self.entries.len() + self.skipped.len());
        let width = self.entries.iter().map(|e| e.target.len()).chain(self.skipped.iter().map(|(_, t)| t.len())).max().unwrap_or(6).max(6);
        for e in &self.entries {
            let secs = e.report.timings.get("total").copied().unwrap_or(0.0);
            let how = match e.report.verdict {
                Verdict::Reachable => format!("replayed ({})", e.report.engine.as_deref().unwrap_or("-")),
                Verdict::Unreachable => "proof".to_string(),
                Verdict::Unknown => e.report.reason.clone(),
            };
            let _ = writeln!(out, "  {:<width$}  {:<11}  {:>6.2}s  {how}", e.target, e.report.verdict.to_string(), secs);
            // Where the target is, as a `--line` user reads it: the line and its text.
            if let Some(l) = &e.report.location {
                match source_text(l) {
                    Some(text) => {
                        let _ = writeln!(out, "  {:<width$}  at {l}: {text}", "");
                    }
                    None => {
                        let _ = writeln!(out, "  {:<width$}  at {l}", "");
                    }
                }
            }
        }
        for (_, t) in &self.skipped {
            let _ = writeln!(out, "  {t:<width$}  {:<11}  {:>7}  not analysed (the batch was stopped)", "unknown", "-");
        }
        let tests: usize = self.entries.iter().map(|e| e.report.tests.len().min(1)).sum();
        let _ = writeln!(out, "\nsummary: {r} reachable (replayed), {u} unreachable (proved), {k} unknown");
        if tests > 0 {
            let _ = writeln!(out, "regression tests written for {tests} target(s)");
        }
        out
    }

    pub fn to_json(&self) -> String {
        let (r, u, k) = self.summary();
        let targets: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|e| {
                let mut v: serde_json::Value = serde_json::from_str(&e.report.to_json()).expect("a report is JSON");
                v["batch_index"] = e.index.into();
                v
            })
            .collect();
        let mut v = serde_json::json!({
            "function": self.function,
            "batch": self.what,
            "targets": targets,
            "skipped": self.skipped.iter().map(|(_, t)| t).collect::<Vec<_>>(),
            "skipped_indices": self.skipped.iter().map(|(i, _)| i).collect::<Vec<_>>(),
            "total_targets": self.total,
            "summary": { "reachable": r, "unreachable": u, "unknown": k },
        });
        if let Some((k, n)) = self.shard {
            v["shard"] = format!("{k}/{n}").into();
        }
        v.to_string()
    }
}
