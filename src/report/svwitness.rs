//! SV-COMP verification witnesses, format 2.0 (`--witness FILE`, YAML): a `violation_sequence`
//! for a reachable target of `main`, an `invariant_set` for an unreachable one.
//!
//! Built from the JSON report. The replay records which target a run entered, not the path to
//! it, so a violation witness has the `target` waypoint only; a correctness witness states the
//! proved fact as a location invariant (`0` at the target: the statement never runs).

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The witness of a report, as YAML; `Err` says why there is none (the verdict is unknown, the
/// function is not `main`, the target has no source line).
pub fn witness(report: &Value, inputs: &[&Path]) -> Result<String, String> {
    let function = report["function"].as_str().unwrap_or("?");
    let verdict = report["verdict"].as_str().unwrap_or("unknown");
    let (file, line) = report["location"]
        .as_str()
        .and_then(|l| l.rsplit_once(':'))
        .and_then(|(f, l)| Some((f.to_string(), l.parse::<u64>().ok()?)))
        .ok_or("the target has no source line (compile with -g)")?;
    // The file as the task names it (an input as given), not as the debug information does.
    let same = |a: &Path, b: &Path| a.canonicalize().ok().is_some_and(|a| b.canonicalize().ok() == Some(a));
    let file_name = inputs.iter().find(|i| same(i, Path::new(&file))).map_or(file.clone(), |i| i.to_string_lossy().into_owned());
    let mut location = json!({ "file_name": file_name, "line": line });
    if let Some(c) = report["column"].as_u64() {
        location["column"] = c.into();
    }
    location["function"] = report["target_function"].as_str().unwrap_or(function).into();
    let (entry_type, content) = match verdict {
        "reachable" if function == "main" => (
            "violation_sequence",
            json!([{ "segment": [{ "waypoint": { "type": "target", "action": "follow", "location": location } }] }]),
        ),
        "reachable" => return Err(format!("a violation witness needs a program analysed from main (--function {function})")),
        "unreachable" => (
            "invariant_set",
            json!([{ "invariant": { "type": "location_invariant", "location": location, "value": "0", "format": "c_expression" } }]),
        ),
        _ => return Err("the verdict is unknown".into()),
    };
    let spec = match report["target_spec"].as_str().and_then(|t| t.strip_prefix("call to ")) {
        Some(callee) => format!("CHECK( init({function}()), LTL(G ! call({callee}())) )"),
        None => format!("CHECK( init({function}()), LTL(G ! reach({file}:{line})) )"),
    };
    let mut hashes = serde_json::Map::new();
    let mut files = vec![];
    for i in inputs {
        let bytes = std::fs::read(i).map_err(|e| format!("{}: {e}", i.display()))?;
        let name = i.to_string_lossy().into_owned();
        hashes.insert(name.clone(), format!("{:x}", Sha256::digest(&bytes)).into());
        files.push(name);
    }
    let seconds = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()));
    let body = json!([{
        "entry_type": entry_type,
        "metadata": {
            "format_version": "2.0",
            "uuid": "",
            "creation_time": super::emit::iso8601(seconds),
            "producer": { "name": "apc-llvm", "version": env!("CARGO_PKG_VERSION") },
            "task": {
                "input_files": files,
                "input_file_hashes": hashes,
                "specification": spec,
                "data_model": "LP64",
                "language": "C",
            },
        },
        "content": content,
    }]);
    let mut body = body;
    // The same witness of the same task gets the same identifier.
    body[0]["metadata"]["uuid"] = uuid_of(body.to_string().as_bytes()).into();
    let mut out = String::new();
    yaml(&body, 0, &mut out);
    Ok(out)
}

/// A version-4-shaped UUID from a digest of `bytes`.
fn uuid_of(bytes: &[u8]) -> String {
    let mut h: [u8; 32] = Sha256::digest(bytes).into();
    h[6] = (h[6] & 0x0f) | 0x40;
    h[8] = (h[8] & 0x3f) | 0x80;
    let x: String = h[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &x[..8], &x[8..12], &x[12..16], &x[16..20], &x[20..32])
}


/// Block-style YAML of a JSON value; strings double-quoted (JSON's escapes are YAML's).
fn yaml(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Array(items) => {
            for item in items {
                out.push_str(&pad);
                out.push_str("- ");
                if item.is_object() || item.is_array() {
                    // The first key goes on the dash's line.
                    let mut inner = String::new();
                    yaml(item, indent + 2, &mut inner);
                    out.push_str(inner.trim_start());
                } else {
                    out.push_str(&scalar(item));
                    out.push('\n');
                }
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                out.push_str(&pad);
                out.push_str(&scalar(&Value::String(k.clone())));
                match item {
                    Value::Array(a) if !a.is_empty() => {
                        out.push_str(":\n");
                        yaml(item, indent + 2, out);
                    }
                    Value::Object(m) if !m.is_empty() => {
                        out.push_str(":\n");
                        yaml(item, indent + 2, out);
                    }
                    _ => {
                        out.push_str(": ");
                        out.push_str(&scalar(item));
                        out.push('\n');
                    }
                }
            }
        }
        _ => {
            out.push_str(&pad);
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Array(a) if a.is_empty() => "[]".into(),
        Value::Object(m) if m.is_empty() => "{}".into(),
        // Plain keys read better; anything YAML might take for another type is quoted.
        Value::String(s) if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !s.starts_with(|c: char| c.is_ascii_digit()) && !["true", "false", "null", "yes", "no", "on", "off", "y", "n"].contains(&s.to_ascii_lowercase().as_str()) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_identifiers_have_their_formats() {
        assert_eq!(super::super::emit::iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::super::emit::iso8601(1_709_251_199), "2024-02-29T23:59:59Z");
        let u = uuid_of(b"x");
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
    }

    #[test]
    fn yaml_nests_lists_and_maps() {
        let mut out = String::new();
        yaml(&json!([{ "a": 1, "b": [{ "c": "x y" }], "d": {} }]), 0, &mut out);
        assert_eq!(out, "- a: 1\n  b:\n    - c: \"x y\"\n  d: {}\n");
    }
}
