//! The result of a run, printed for people or as JSON.

pub mod batch;
pub mod ctest;
pub mod emit;
pub mod engines;
pub mod html;
pub mod merge;
pub mod sarif;
pub mod svwitness;

pub use engines::{EngineSummary, Invariant};

use crate::cfg::{Node, Structure};
use crate::ir::Function;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Reachable,
    Unreachable,
    Unknown,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Reachable => "reachable",
            Verdict::Unreachable => "unreachable",
            Verdict::Unknown => "unknown",
        })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LoopReport {
    pub id: u32,
    pub entry: String,
    pub blocks: Vec<String>,
    pub exits: Vec<String>,
    /// Backbones of the induced program P(C, entry); the last node `entry'` is the return to entry.
    /// JSON lists the first [`JSON_BACKBONES`].
    #[serde(serialize_with = "first_backbones")]
    pub backbones: Vec<Vec<String>>,
    pub backbone_count: usize,
    pub nested: Vec<u32>,
    pub truncated: bool,
    /// Path counters κ of the loop's iteration backbones, in backbone order.
    pub counters: Vec<String>,
    /// θ^κ: the value of each carried variable after the iterations (paper notation).
    pub iterated_state: BTreeMap<String, String>,
    /// φ^κ.
    pub looping_condition: Option<String>,
    /// Inductive invariants proved for the variables θ^κ leaves ⋆ (`x⁰`: the value at the
    /// loop's entry).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub function: String,
    /// What was asked (`block if.then`, `call to reach_error`, ...).
    pub target_spec: String,
    /// Where the target is in the source: `FILE:LINE` (debug information permitting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// The column of `location`'s first instruction (SARIF regions and witness waypoints
    /// point at it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The function whose code holds the target (a callee for `FUNC:LABEL` and lines in
    /// callees): what the HTML report totals by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_function: Option<String>,
    /// Functions with a body the load normalised (what a call of the function can run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions_loaded: Option<usize>,
    /// Labels of the target blocks in the analysed (normalised) function.
    pub target: Vec<String>,
    /// A `--line` with code in several blocks: the one chosen and the others with their
    /// columns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_note: Option<String>,
    pub verdict: Verdict,
    /// Why the verdict is what it is, in one sentence.
    pub reason: String,
    pub loops: Vec<LoopReport>,
    /// The program's backbones; JSON lists the first [`JSON_BACKBONES`] (`backbone_count` has
    /// them all: thousands of them made a 15 MB report).
    #[serde(serialize_with = "first_backbones")]
    pub backbones: Vec<Vec<String>>,
    pub backbone_count: usize,
    /// Whether a backbone enumeration bound was hit somewhere.
    pub truncated: bool,
    /// The APC in the paper's notation.
    pub apc: Option<String>,
    /// The SMT-LIB 2 query of the APC.
    pub smtlib: Option<String>,
    pub witness: Option<WitnessReport>,
    /// Files written by `--emit-tests`.
    pub tests: Vec<String>,
    /// Functions without a definition in the bitcode that replays linked a stub for (returning
    /// 0): a witness ran with them, not with the real functions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stubs: Vec<String>,
    /// The `--assume` conditions the verdict is about (only inputs satisfying them count).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
    /// C types of the integer parameters, by name (see `load::ctypes`); in JSON as each
    /// input's `c_type` and `c_value`.
    #[serde(skip)]
    pub param_c_types: BTreeMap<String, crate::ir::CType>,
    /// Sizes of the elements pointer parameters point to, by name (debug information): how
    /// their buffers are shown.
    #[serde(skip)]
    pub param_elem_bytes: BTreeMap<String, u64>,
    /// Why `--emit-tests` wrote nothing for a reaching witness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_error: Option<String>,
    /// The undefined operation the witness relies on (`--check-ub`, see [`crate::replay::ub`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ub: Option<crate::replay::ub::UbFinding>,
    /// What the undefined-behaviour check of the witness found: `none`, `undefined behaviour`,
    /// or why it could not be made (only with `--check-ub`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ub_check: Option<String>,
    pub timings: BTreeMap<String, f64>,
    /// The engine whose finding decided the verdict, if one did.
    pub engine: Option<String>,
    /// What each engine of the portfolio did.
    pub engines: BTreeMap<String, EngineSummary>,
    /// The inductive invariants of an `unreachable` proved by invariants (the `chc` engine):
    /// per block, the formula that holds whenever the block is entered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<Invariant>,
}

/// The inputs of a model and what their native replay did.
#[derive(Clone, Debug, Serialize)]
pub struct WitnessReport {
    pub inputs: Vec<crate::witness::ParamInput>,
    /// `__VERIFIER_nondet_*` results in call order (64-bit; each call keeps its low bits).
    pub nondet: Vec<u64>,
    pub replayed: bool,
    pub reached: bool,
    /// How the replay ended (`exit 0`, `signal 11`, `timeout`).
    pub run: String,
    pub models_tried: u32,
    /// Model values of the path counters: of the model the witness came from, before any
    /// reduction (`reduced`), which may let the loops run fewer times.
    pub counters: BTreeMap<String, u64>,
    /// How the witness was made smaller after it reached the target, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduced: Option<Reduction>,
}

/// What the witness reduction ([`crate::witness::reduce`]) did: the sizes are input bytes and
/// values ([`crate::witness::reduce::size`]) before and after.
#[derive(Clone, Debug, Serialize)]
pub struct Reduction {
    pub size_before: u64,
    pub size_after: u64,
    /// Candidates replayed. (Its time is in the timings: the witness stays the same from run
    /// to run.)
    pub replays: u32,
}

impl WitnessReport {
    /// The report of a replayed witness.
    pub fn replayed(w: &crate::witness::Witness, run: &crate::replay::RunOutcome, models_tried: u32, counters: BTreeMap<String, u64>) -> Self {
        WitnessReport {
            inputs: w.params.clone(),
            nondet: w.nondet.clone(),
            replayed: true,
            reached: run.reached.is_some(),
            run: run.status.clone(),
            models_tried,
            counters,
            reduced: None,
        }
    }
}

fn node_label(f: &Function, n: Node) -> String {
    match n {
        Node::Block(b) => f.label(b).to_string(),
        Node::Back(b) => format!("{}'", f.label(b)),
    }
}

impl Report {
    pub fn new(f: &Function, target_spec: String, s: &Structure) -> Report {
        let path = |nodes: &[Node]| nodes.iter().map(|&n| node_label(f, n)).collect::<Vec<_>>();
        Report {
            function: f.name.clone(),
            target_spec,
            location: None,
            column: None,
            target_function: None,
            functions_loaded: None,
            target: f.target_blocks().into_iter().map(|b| f.label(b).to_string()).collect(),
            target_note: None,
            verdict: Verdict::Unknown,
            reason: String::new(),
            loops: s
                .loops
                .iter()
                .map(|l| LoopReport {
                    id: l.id.0,
                    entry: f.label(l.entry).to_string(),
                    blocks: l.blocks.iter().map(|&b| f.label(b).to_string()).collect(),
                    exits: l.exits.iter().map(|&n| node_label(f, n)).collect(),
                    backbones: l.backbones.iter().map(|b| path(&b.nodes)).collect(),
                    backbone_count: l.backbones.len(),
                    nested: l.nested.iter().map(|n| n.0).collect(),
                    truncated: l.truncated,
                    counters: vec![],
                    iterated_state: BTreeMap::new(),
                    looping_condition: None,
                    invariants: vec![],
                })
                .collect(),
            backbones: s.backbones.iter().map(|b| path(&b.nodes)).collect(),
            backbone_count: s.backbones.len(),
            stubs: vec![],
            assumptions: vec![],
            param_c_types: f.params.iter().filter_map(|p| p.c_type.clone().map(|c| (p.name.clone(), c))).collect(),
            param_elem_bytes: f.params.iter().filter_map(|p| p.pointee_bytes.map(|b| (p.name.clone(), b))).collect(),
            truncated: s.truncated,
            apc: None,
            smtlib: None,
            witness: None,
            tests: vec![],
            timings: BTreeMap::new(),
            engine: None,
            engines: BTreeMap::new(),
            invariants: vec![],
            test_error: None,
            ub: None,
            ub_check: None,
        }
    }

    /// A report that knows only what was asked (the analysis stopped before the function's
    /// structure was known).
    pub fn bare(function: &str, target_spec: String) -> Report {
        Report {
            function: function.to_string(),
            target_spec,
            location: None,
            column: None,
            target_function: None,
            functions_loaded: None,
            target: vec![],
            target_note: None,
            verdict: Verdict::Unknown,
            reason: String::new(),
            loops: vec![],
            backbones: vec![],
            backbone_count: 0,
            stubs: vec![],
            assumptions: vec![],
            param_c_types: BTreeMap::new(),
            param_elem_bytes: BTreeMap::new(),
            truncated: false,
            apc: None,
            smtlib: None,
            witness: None,
            tests: vec![],
            timings: BTreeMap::new(),
            engine: None,
            engines: BTreeMap::new(),
            invariants: vec![],
            test_error: None,
            ub: None,
            ub_check: None,
        }
    }

    /// The JSON report. Integer inputs whose C type is known (debug information) also carry
    /// `c_type` and `c_value`, the value as that type reads it (`value` holds the bits).
    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(self).expect("reports serialise");
        if let Some(inputs) = v.pointer_mut("/witness/inputs").and_then(|i| i.as_array_mut()) {
            for input in inputs {
                let (Some(name), Some(width), Some(bits)) = (
                    input["name"].as_str().map(str::to_string),
                    input["width"].as_u64(),
                    input["value"].as_u64(),
                ) else {
                    continue;
                };
                if let Some(c) = self.param_c_types.get(&name) {
                    input["c_type"] = c.name.clone().into();
                    input["c_value"] = if c.signed { crate::expr::to_signed(width as u32, bits).into() } else { bits.into() };
                }
            }
        }
        serde_json::to_string_pretty(&v).expect("reports serialise")
    }

    /// How the human report shows integer input `name` of `width` bits holding `bits`: as its C
    /// type reads it, with the type's name; else signed, with the width.
    fn show_int(&self, name: &str, width: u32, bits: u64) -> String {
        match self.param_c_types.get(name) {
            Some(c) if c.signed => format!("{} ({})", crate::expr::to_signed(width, bits), c.name),
            Some(c) => format!("{bits} ({})", c.name),
            None => format!("{} (i{width})", crate::expr::to_signed(width, bits)),
        }
    }

    /// The human report, compact: see [`Report::to_text_detailed`].
    pub fn to_text(&self) -> String {
        self.to_text_detailed(false)
    }

    /// The human report. It leads with what a user acts on (verdict, reason, witness); then the
    /// program's structure, summarised (counts and the first few loops and backbones, the APC
    /// only when short) unless `detailed` (`-v`), which prints every loop with θ^κ and φ^κ,
    /// every backbone and the APC: a function with thousands of backbones once gave a
    /// 4,000-line report.
    pub fn to_text_detailed(&self, detailed: bool) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "verdict: {}", self.verdict);
        if !self.reason.is_empty() {
            let _ = writeln!(out, "reason:  {}", self.reason);
        }
        if let Some(e) = &self.engine {
            let _ = writeln!(out, "engine:  {e}");
        }
        if !self.invariants.is_empty() {
            let _ = writeln!(out, "invariants:");
            for i in &self.invariants {
                let _ = writeln!(out, "  {}: {}", i.block, i.formula);
            }
        }
        if !self.assumptions.is_empty() {
            let _ = writeln!(out, "assuming: {}", self.assumptions.join("; "));
        }
        if let Some(w) = &self.witness {
            let _ = writeln!(out, "\nwitness (model {}, replay: {}):", w.models_tried, w.run);
            if let Some(r) = &w.reduced {
                let _ = writeln!(out, "  (reduced from {} to {} input bytes and values in {} replays)", r.size_before, r.size_after, r.replays);
            }
            for i in &w.inputs {
                match i {
                    crate::witness::ParamInput::Int { name, width, value } => {
                        let _ = writeln!(out, "  {name} = {}", self.show_int(name, *width, *value));
                    }
                    crate::witness::ParamInput::Buffer { name, bytes, pointees, front } => {
                        let front = (*front as usize).min(bytes.len());
                        if front > 0 {
                            let _ = writeln!(out, "  {name}[-{front}..-1] = {}", show_bytes(&bytes[..front]));
                        }
                        let _ = writeln!(out, "  {name} = {}", show_buffer(&bytes[front..], self.param_c_types.get(name), self.param_elem_bytes.get(name).copied()));
                        show_pointees(&mut out, name, pointees, front as i64);
                    }
                    crate::witness::ParamInput::Zero { name, c_type } => {
                        let _ = writeln!(out, "  {name} = 0 ({c_type})");
                    }
                    crate::witness::ParamInput::Null { name } => {
                        let _ = writeln!(out, "  {name} = NULL");
                    }
                    crate::witness::ParamInput::Function { name, function } => {
                        let _ = writeln!(out, "  {name} = &{function}");
                    }
                }
            }
            if !w.nondet.is_empty() {
                let v: Vec<String> = w.nondet.iter().map(|x| x.to_string()).collect();
                let _ = writeln!(out, "  nondet = [{}]", v.join(", "));
            }
        }
        if let Some(u) = &self.ub {
            let _ = writeln!(out, "undefined behaviour: {} at {} ({}: {})", u.operation, u.location, u.sanitizer, u.message);
        } else if let Some(c) = &self.ub_check {
            let _ = writeln!(out, "undefined behaviour: {c}");
        }
        if !self.stubs.is_empty() {
            let _ = writeln!(out, "replay stubs: {} (no definition in the bitcode; they return 0 in replays)", self.stubs.join(", "));
        }
        if !self.tests.is_empty() {
            let _ = writeln!(out, "\nregression test written: {}", self.tests.join(", "));
        }
        let _ = writeln!(out, "\nfunction: {}", self.function);
        let _ = writeln!(out, "target:   {} (blocks: {})", self.target_spec, self.target.join(", "));
        if let Some(l) = &self.location {
            let _ = writeln!(out, "at:       {l}");
        }
        if let Some(n) = &self.target_note {
            let _ = writeln!(out, "          {n}");
        }
        let _ = writeln!(out, "\nloops ({}):", self.loops.len());
        let loops_shown = if detailed { self.loops.len() } else { SHOWN.min(self.loops.len()) };
        for l in &self.loops[..loops_shown] {
            let nested = if l.nested.is_empty() {
                String::new()
            } else {
                format!(", nested: {}", l.nested.iter().map(|n| format!("L{n}")).collect::<Vec<_>>().join(", "))
            };
            if !detailed {
                let _ = writeln!(out, "  L{} entry {}: {} blocks, {} iteration backbone(s){nested}", l.id, l.entry, l.blocks.len(), l.backbones.len());
                continue;
            }
            let _ = writeln!(out, "  L{} entry {}", l.id, l.entry);
            let _ = writeln!(out, "     blocks: {}", l.blocks.join(", "));
            let _ = writeln!(out, "     exits:  {}", if l.exits.is_empty() { "-".into() } else { l.exits.join(", ") });
            if !nested.is_empty() {
                let _ = writeln!(out, "     {}", nested.trim_start_matches(", "));
            }
            let _ = writeln!(out, "     iterations (backbones of P(C, {})): {}", l.entry, l.backbones.len());
            for (k, b) in l.backbones.iter().enumerate() {
                let counter = l.counters.get(k).map(|c| format!("{c}: ")).unwrap_or_default();
                let _ = writeln!(out, "       {counter}{}", b.join(" → "));
            }
            for (var, value) in &l.iterated_state {
                let _ = writeln!(out, "     θ^κ({var}) = {value}");
            }
            if let Some(phi) = &l.looping_condition {
                let _ = writeln!(out, "     φ^κ = {phi}");
            }
            for inv in &l.invariants {
                let _ = writeln!(out, "     invariant: {inv}");
            }
        }
        if loops_shown < self.loops.len() {
            let _ = writeln!(out, "  … {} more (-v lists every loop with θ^κ and φ^κ)", self.loops.len() - loops_shown);
        }
        let _ = writeln!(out, "\nbackbones ({}){}:", self.backbones.len(), if self.truncated { " [bound hit: list incomplete]" } else { "" });
        let backbones_shown = if detailed { self.backbones.len() } else { SHOWN.min(self.backbones.len()) };
        for b in &self.backbones[..backbones_shown] {
            let _ = writeln!(out, "  {}", b.join(" → "));
        }
        if backbones_shown < self.backbones.len() {
            let _ = writeln!(out, "  … {} more (-v lists them all)", self.backbones.len() - backbones_shown);
        }
        if let Some(apc) = &self.apc {
            if detailed || apc.chars().count() <= SHORT_APC {
                let _ = writeln!(out, "\nAPC:\n  {apc}");
            } else {
                let _ = writeln!(out, "\nAPC: {} characters (-v prints it)", apc.chars().count());
            }
        }
        if self.engines.len() > 1 {
            let _ = writeln!(out, "\nengines:");
            for (name, e) in &self.engines {
                let stats: Vec<String> = e.stats.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let _ = writeln!(
                    out,
                    "  {name}: {} after {:.3}s{}{}",
                    e.outcome,
                    e.seconds,
                    if e.reason.is_empty() || e.outcome == "reachable" { String::new() } else { format!(" ({})", e.reason) },
                    if stats.is_empty() { String::new() } else { format!(" [{}]", stats.join(", ")) }
                );
            }
        }
        if !self.timings.is_empty() {
            let t: Vec<String> = self.timings.iter().map(|(k, v)| format!("{k} {v:.3}s")).collect();
            let _ = writeln!(out, "timings: {}", t.join(", "));
        }
        out
    }
}

/// Most backbones one JSON list holds.
pub const JSON_BACKBONES: usize = 256;

fn first_backbones<S: serde::Serializer>(b: &[Vec<String>], ser: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = ser.serialize_seq(Some(b.len().min(JSON_BACKBONES)))?;
    for p in b.iter().take(JSON_BACKBONES) {
        seq.serialize_element(p)?;
    }
    seq.end()
}

/// Loops and backbones listed by the compact human report.
const SHOWN: usize = 5;
/// Longest APC (characters) the compact human report prints.
const SHORT_APC: usize = 400;

/// Most bytes of one buffer the human report prints (JSON has them all).
const SHOWN_BYTES: usize = 64;

/// `[b0, b1, …] (N bytes)`, trailing zeros omitted, at most [`SHOWN_BYTES`] shown.
fn show_bytes(bytes: &[u8]) -> String {
    let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1);
    let mut shown: Vec<String> = bytes[..end.min(SHOWN_BYTES)].iter().map(|b| b.to_string()).collect();
    if end > SHOWN_BYTES {
        shown.push(format!("… {} more", end - SHOWN_BYTES));
    }
    format!("[{}] ({} bytes)", shown.join(", "), bytes.len())
}

/// A buffer as its C element type reads it: characters as a C string literal (escapes for the
/// rest), other bytes in hex, wider integers as their type's values; trailing zeros omitted, at
/// most [`SHOWN_BYTES`] bytes shown, the size last. Without a type (no `-g`, a struct field),
/// mostly printable bytes are shown as a string, others in hex.
fn show_buffer(bytes: &[u8], c_type: Option<&crate::ir::CType>, elem_bytes: Option<u64>) -> String {
    let end = bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1);
    let cut = end.min(SHOWN_BYTES);
    let more = if end > SHOWN_BYTES { format!(" … {} more bytes", end - SHOWN_BYTES) } else { String::new() };
    let elem = elem_bytes.unwrap_or(1);
    if let (Some(c), 2 | 4 | 8) = (c_type, elem) {
        let e = elem as usize;
        let count = bytes.len() / e;
        let shown_elems = end.div_ceil(e).min(SHOWN_BYTES / e).min(count);
        let values: Vec<String> = (0..shown_elems)
            .map(|k| {
                let mut v = 0u64;
                for (j, b) in bytes[k * e..(k + 1) * e].iter().enumerate() {
                    v |= (*b as u64) << (8 * j);
                }
                if c.signed { crate::expr::to_signed(8 * e as u32, v).to_string() } else { v.to_string() }
            })
            .collect();
        let more = if end.div_ceil(e) > shown_elems { format!(", … {} more", end.div_ceil(e) - shown_elems) } else { String::new() };
        return format!("{{{}{more}}} ({}[{count}])", values.join(", "), c.name);
    }
    let printable = bytes[..cut].iter().filter(|b| b.is_ascii_graphic() || **b == b' ').count();
    let chars = match c_type {
        Some(c) => c.name.contains("char"),
        None => elem == 1 && cut > 0 && printable * 2 >= cut,
    };
    if chars {
        format!("{}{more} ({} bytes)", c_string_literal(&bytes[..cut]), bytes.len())
    } else {
        let hex: Vec<String> = bytes[..cut].iter().map(|b| format!("0x{b:02x}")).collect();
        format!("{{{}}}{more} ({} bytes)", hex.join(", "), bytes.len())
    }
}

/// `bytes` as a C string literal: printable ASCII as is, the usual escapes, `\xNN` for the
/// rest (the literal is split where a hex digit follows one, as C would read it on).
pub fn c_string_literal(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    let mut after_hex = false;
    for &b in bytes {
        let plain = b.is_ascii_graphic() || b == b' ';
        if after_hex && plain && b.is_ascii_hexdigit() {
            out.push_str("\" \"");
        }
        after_hex = false;
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            _ if plain => out.push(b as char),
            _ => {
                out.push_str(&format!("\\x{b:02x}"));
                after_hex = true;
            }
        }
    }
    out.push('"');
    out
}

/// `*(name + o) = [...]` for every pointer slot of a buffer, recursively.
/// `shift`: bytes of the buffer in front of its address (offsets are shown from the address).
fn show_pointees(out: &mut String, name: &str, pointees: &[crate::witness::Pointee], shift: i64) {
    for p in pointees {
        let inner = format!("*({name} + {})", p.offset as i64 - shift);
        let shown = match &p.holds {
            Some(crate::witness::SlotValue::Null) => "NULL".to_string(),
            Some(crate::witness::SlotValue::Function(f)) => format!("&{f}"),
            None => show_buffer(&p.bytes, None, None),
        };
        let _ = writeln!(out, "  {inner} = {shown}");
        show_pointees(out, &inner, &p.pointees, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::CType;

    #[test]
    fn buffers_are_shown_as_their_element_type_reads_them() {
        let char_t = CType { name: "const char".into(), signed: true };
        let mut text = b"4711".to_vec();
        text.resize(68, 0);
        assert_eq!(show_buffer(&text, Some(&char_t), Some(1)), "\"4711\" (68 bytes)");
        // Escapes; a hex escape followed by a hex digit ends the literal piece.
        assert_eq!(c_string_literal(b"KV\x02a\"\\\n"), "\"KV\\x02\" \"a\\\"\\\\\\n\"");
        let byte_t = CType { name: "uint8_t".into(), signed: false };
        assert_eq!(show_buffer(&[0xff, 0x10, 0, 0], Some(&byte_t), Some(1)), "{0xff, 0x10} (4 bytes)");
        let int_t = CType { name: "int".into(), signed: true };
        let ints: Vec<u8> = [77i32, -1, 0, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(show_buffer(&ints, Some(&int_t), Some(4)), "{77, -1} (int[4])");
        // Without a type: mostly printable bytes as a string, others in hex.
        assert_eq!(show_buffer(b"ab\x01\0", None, None), "\"ab\\x01\" (4 bytes)");
        assert_eq!(show_buffer(&[1, 2, 200], None, None), "{0x01, 0x02, 0xc8} (3 bytes)");
    }
}
