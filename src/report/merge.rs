//! `apc-llvm merge A.json B.json ...`: the batch reports of shards (`--shard K/N`) back into the
//! report of the whole batch, targets in the batch's order.

use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The merged batch and how many of its targets no shard had (a shard not given).
pub fn merge(batches: &[(String, Value)]) -> Result<(Value, usize), String> {
    let Some((first_name, first)) = batches.first() else { return Err("no batch report given".into()) };
    let key = |v: &Value| (v["function"].clone(), v["batch"].clone(), v["total_targets"].clone());
    let mut targets: BTreeMap<u64, Value> = BTreeMap::new();
    let mut skipped: BTreeMap<u64, Value> = BTreeMap::new();
    for (name, b) in batches {
        let (Some(ts), Some(_)) = (b["targets"].as_array(), b["total_targets"].as_u64()) else {
            return Err(format!("{name}: not a batch report of --json with --cover, --all-calls, --all-lines or --targets"));
        };
        if key(b) != key(first) {
            return Err(format!("{name}: another batch than {first_name} (function, targets or their number differ)"));
        }
        for t in ts {
            let i = t["batch_index"].as_u64().ok_or_else(|| format!("{name}: a target without batch_index"))?;
            if targets.insert(i, t.clone()).is_some() {
                return Err(format!("{name}: target {i} ({}) is in two reports", t["target_spec"].as_str().unwrap_or("?")));
            }
        }
        let names = b["skipped"].as_array().cloned().unwrap_or_default();
        let at = b["skipped_indices"].as_array().cloned().unwrap_or_default();
        for (s, i) in names.into_iter().zip(at) {
            let i = i.as_u64().ok_or_else(|| format!("{name}: a skipped target without its index"))?;
            if targets.contains_key(&i) || skipped.insert(i, s).is_some() {
                return Err(format!("{name}: target {i} is in two reports"));
            }
        }
    }
    let total = first["total_targets"].as_u64().unwrap_or(0);
    let missing = (total as usize).saturating_sub(targets.len() + skipped.len());
    let count = |v: &str| targets.values().filter(|t| t["verdict"] == v).count();
    let merged = json!({
        "function": first["function"],
        "batch": first["batch"],
        "targets": targets.values().collect::<Vec<_>>(),
        "skipped": skipped.values().collect::<Vec<_>>(),
        "skipped_indices": skipped.keys().collect::<Vec<_>>(),
        "total_targets": total,
        "summary": { "reachable": count("reachable"), "unreachable": count("unreachable"), "unknown": count("unknown") + skipped.len() + missing },
    });
    Ok((merged, missing))
}

/// The human summary of a batch in JSON: a line per target, then the counts.
pub fn text(batch: &Value) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let targets = batch["targets"].as_array().cloned().unwrap_or_default();
    let _ = writeln!(out, "{} of '{}': {} targets", batch["batch"].as_str().unwrap_or("?"), batch["function"].as_str().unwrap_or("?"), batch["total_targets"]);
    let width = targets.iter().filter_map(|t| t["target_spec"].as_str()).map(str::len).max().unwrap_or(6).max(6);
    for t in &targets {
        let verdict = t["verdict"].as_str().unwrap_or("unknown");
        let how = match verdict {
            "reachable" => format!("replayed ({})", t["engine"].as_str().unwrap_or("-")),
            "unreachable" => "proof".into(),
            _ => t["reason"].as_str().unwrap_or("").to_string(),
        };
        let _ = writeln!(out, "  {:<width$}  {verdict:<11}  {how}", t["target_spec"].as_str().unwrap_or("?"));
    }
    for s in batch["skipped"].as_array().into_iter().flatten() {
        let _ = writeln!(out, "  {:<width$}  {:<11}  not analysed (the batch was stopped)", s.as_str().unwrap_or("?"), "unknown");
    }
    let s = &batch["summary"];
    let _ = writeln!(out, "\nsummary: {} reachable (replayed), {} unreachable (proved), {} unknown", s["reachable"], s["unreachable"], s["unknown"]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(idx: &[u64]) -> Value {
        let targets: Vec<Value> = idx.iter().map(|i| json!({ "target_spec": format!("block b{i}"), "verdict": "reachable", "batch_index": i })).collect();
        json!({ "function": "f", "batch": "every block", "targets": targets, "skipped": [], "skipped_indices": [], "total_targets": 4 })
    }

    #[test]
    fn shards_merge_in_batch_order_and_overlaps_are_refused() {
        let (m, missing) = merge(&[("a".into(), shard(&[1, 3])), ("b".into(), shard(&[0, 2]))]).unwrap();
        assert_eq!(missing, 0);
        let order: Vec<u64> = m["targets"].as_array().unwrap().iter().map(|t| t["batch_index"].as_u64().unwrap()).collect();
        assert_eq!(order, vec![0, 1, 2, 3]);
        assert_eq!(m["summary"]["reachable"], 4);
        assert!(merge(&[("a".into(), shard(&[1])), ("b".into(), shard(&[1]))]).unwrap_err().contains("two reports"));
        assert_eq!(merge(&[("a".into(), shard(&[1]))]).unwrap().1, 3);
    }
}
