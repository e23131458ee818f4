//! SARIF 2.1.0 (`--sarif FILE`): one result per target, for code-scanning views in CI.
//!
//! Built from the JSON reports (not from [`super::Report`]), so that a merged batch
//! ([`super::merge`]) gives the same file as the batch it came from.

use serde_json::{json, Value};
use std::path::Path;

/// The rules, one per verdict: (id, level, kind, description).
const RULES: [(&str, &str, &str, &str); 3] = [
    ("reachable", "note", "fail", "The target block is reachable: a native replay of the witness entered it."),
    ("unreachable", "none", "pass", "The target block is unreachable: a prover showed that no input reaches it."),
    ("unknown", "none", "open", "Whether the target block is reachable is unknown (budget or an unsupported construct)."),
];

/// The SARIF log of `reports` (each a JSON report of one target). `cwd` is where relative
/// artifact paths are anchored (the `SRCROOT` base).
pub fn sarif(reports: &[Value], cwd: &Path) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|(id, level, _, text)| json!({ "id": id, "name": id, "shortDescription": { "text": text }, "defaultConfiguration": { "level": level } }))
        .collect();
    let results: Vec<Value> = reports.iter().map(|r| result(r, cwd)).collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "apc-llvm",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "originalUriBaseIds": { "SRCROOT": { "uri": dir_uri(cwd) } },
            "results": results,
        }],
    })
}

fn result(r: &Value, cwd: &Path) -> Value {
    let verdict = r["verdict"].as_str().unwrap_or("unknown");
    let rule = RULES.iter().position(|(id, ..)| *id == verdict).unwrap_or(2);
    let (id, level, kind, _) = RULES[rule];
    let target = r["target_spec"].as_str().unwrap_or("?");
    let function = r["function"].as_str().unwrap_or("?");
    let reason = r["reason"].as_str().unwrap_or("");
    let mut text = format!("{target} of {function} is {verdict}");
    if !reason.is_empty() {
        text.push_str(&format!(": {reason}"));
    }
    let in_function = r["target_function"].as_str().unwrap_or(function);
    let logical = json!([{ "name": in_function, "kind": "function" }]);
    let physical = physical_location(r, cwd);
    let mut location = json!({ "logicalLocations": logical });
    if let Some(p) = &physical {
        location["physicalLocation"] = p.clone();
    }
    let mut properties = json!({ "target": target, "function": function, "verdict": verdict, "reason": reason });
    for key in ["engine", "witness", "tests", "invariants", "assumptions", "batch_index"] {
        if !r[key].is_null() {
            properties[key] = r[key].clone();
        }
    }
    let mut out = json!({
        "ruleId": id,
        "ruleIndex": rule,
        "level": level,
        "kind": kind,
        "message": { "text": text },
        "locations": [location],
        "properties": properties,
    });
    // The replayed path: the tool records which target the run entered, not the lines on the
    // way, so the flow is the analysed function's call and the target.
    if verdict == "reachable" {
        if let Some(p) = physical {
            let witness = witness_text(&r["witness"]);
            out["codeFlows"] = json!([{
                "message": { "text": format!("a native replay of the witness ({witness}) entered the target") },
                "threadFlows": [{ "locations": [
                    { "location": { "message": { "text": format!("{function} called with the witness inputs") }, "logicalLocations": [{ "name": function, "kind": "function" }] }, "nestingLevel": 0, "executionOrder": 1 },
                    { "location": { "physicalLocation": p, "message": { "text": "target entered" } }, "nestingLevel": if in_function == function { 0 } else { 1 }, "executionOrder": 2, "importance": "essential" },
                ]}],
            }]);
        }
    }
    out
}

/// `physicalLocation` of a report's `location` (`FILE:LINE`) and `column`.
fn physical_location(r: &Value, cwd: &Path) -> Option<Value> {
    let (file, line) = r["location"].as_str()?.rsplit_once(':')?;
    let line: u64 = line.parse().ok()?;
    let mut region = json!({ "startLine": line });
    if let Some(c) = r["column"].as_u64() {
        region["startColumn"] = c.into();
    }
    let path = Path::new(file);
    let artifact = match path.strip_prefix(cwd) {
        Ok(rel) if path.is_absolute() => json!({ "uri": encode(&rel.to_string_lossy()), "uriBaseId": "SRCROOT" }),
        _ if path.is_absolute() => json!({ "uri": format!("file://{}", encode(file)) }),
        _ => json!({ "uri": encode(file), "uriBaseId": "SRCROOT" }),
    };
    Some(json!({ "artifactLocation": artifact, "region": region }))
}

/// A short form of a JSON witness: `name = value, ...`.
pub fn witness_text(w: &Value) -> String {
    let mut parts: Vec<String> = vec![];
    for i in w["inputs"].as_array().into_iter().flatten() {
        let name = i["name"].as_str().unwrap_or("?");
        let shown = match i["kind"].as_str() {
            Some("null") => "NULL".to_string(),
            Some("function") => format!("&{}", i["function"].as_str().unwrap_or("?")),
            Some("zero") => "0".to_string(),
            Some("buffer") => {
                let bytes: Vec<u8> = i["bytes"].as_array().into_iter().flatten().filter_map(|b| b.as_u64()).map(|b| b as u8).collect();
                let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1).min(64);
                format!("{} ({} bytes)", super::c_string_literal(&bytes[..end]), bytes.len())
            }
            _ => i["c_value"].as_i64().map(|v| v.to_string()).or_else(|| i["value"].as_u64().map(|v| v.to_string())).unwrap_or_else(|| "?".into()),
        };
        parts.push(format!("{name} = {shown}"));
    }
    if let Some(n) = w["nondet"].as_array().filter(|n| !n.is_empty()) {
        let v: Vec<String> = n.iter().map(|x| x.to_string()).collect();
        parts.push(format!("nondet = [{}]", v.join(", ")));
    }
    if parts.is_empty() {
        "no inputs".into()
    } else {
        parts.join(", ")
    }
}

/// `file:///DIR/` of a directory.
fn dir_uri(dir: &Path) -> String {
    let mut s = format!("file://{}", encode(&dir.to_string_lossy()));
    if !s.ends_with('/') {
        s.push('/');
    }
    s
}

/// Percent-encoding of a path for a URI reference (RFC 3986: unreserved characters and `/`
/// stay).
fn encode(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_the_directory_are_relative_to_srcroot() {
        let r = json!({ "verdict": "reachable", "target_spec": "block if.then", "function": "f", "location": "/w/src/a b.c:7", "column": 3, "witness": { "inputs": [{ "name": "x", "kind": "int", "width": 32, "value": 5 }], "nondet": [] } });
        let log = sarif(&[r], Path::new("/w"));
        let res = &log["runs"][0]["results"][0];
        assert_eq!(res["ruleId"], "reachable");
        let loc = &res["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "src/a%20b.c");
        assert_eq!(loc["region"]["startLine"], 7);
        assert_eq!(loc["region"]["startColumn"], 3);
        assert!(res["codeFlows"][0]["message"]["text"].as_str().unwrap().contains("x = 5"));
    }
}
