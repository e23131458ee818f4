//! k-induction over the function's steps: a proof of unreachability for
//! targets whose safety is k-inductive, without finding an invariant.
//!
//! The steps are the Horn clauses' edges ([`super::transitions`]): a state is a block (`pc`)
//! and the registers, a step is one edge with its block's instructions, exact where the
//! clauses are and ⋆ elsewhere, so every run of the compiled program is a path of steps.
//! A state is *bad* when its block is a target.
//!
//! * Base case `k`: no path of `k` steps from the entry ends in a bad state. Checked for
//!   `k = 0, 1, 2, …` in one incremental solver; a satisfiable base case ends the search (the
//!   steps reach a target: their memory and calls are ⋆, so that is no run, and no proof).
//! * Step case `k`: no path of `k` steps from *any* state, through `k` states that are not bad
//!   and pairwise different, ends in a bad state.
//!
//! With the base cases `0 … k−1` and the step case `k` unsatisfiable, no run reaches a target:
//! a shortest path of steps to a bad state repeats no state (steps depend on the state and
//! fresh values only, so a repeat could be cut out), so it is either shorter than `k` (a base
//! case) or its last `k + 1` states are a step case.

use super::{Edge, Transitions};
use crate::ir::BlockId;
use std::fmt::Write;

/// Most steps unrolled.
pub const MAX_STEPS: usize = 48;
/// Most bytes of SMT-LIB one step may take (a function too large is not unrolled).
const MAX_STEP_TEXT: usize = 1 << 20;

/// The unrolled queries of one encoding, as SMT-LIB text chunks for an incremental solver.
pub struct Unrolling<'t> {
    t: &'t Transitions,
    targets: Vec<BlockId>,
    /// The edges that are steps (not the targets' queries).
    steps: Vec<&'t Edge>,
}

impl<'t> Unrolling<'t> {
    /// `None` when there is nothing to unroll (no target) or a step would be too large.
    pub fn new(t: &'t Transitions) -> Option<Unrolling<'t>> {
        let targets: Vec<BlockId> = t.edges.iter().filter(|e| e.to.is_none()).map(|e| e.from).collect();
        if targets.is_empty() {
            return None;
        }
        let steps: Vec<&Edge> = t.edges.iter().filter(|e| e.to.is_some()).collect();
        let u = Unrolling { t, targets, steps };
        (u.transition(0).len() <= MAX_STEP_TEXT).then_some(u)
    }

    fn pc(&self, b: BlockId) -> String {
        self.t.theory.lit(b.0 as u64, 32)
    }

    /// Declarations of states `0 ..= n`: every chunk of text given to Z3 declares the
    /// constants it uses (a chunk is parsed on its own; the same name and sort in two chunks is
    /// one constant).
    pub fn states(&self, n: usize) -> String {
        (0..=n).map(|i| self.state(i)).collect()
    }

    /// Declarations of state `i`: its block `pc{i}` and registers `S{i}_{k}`.
    pub fn state(&self, i: usize) -> String {
        let mut out = format!("(declare-const pc{i} {})\n", self.t.theory.sort(32));
        for (k, (_, w)) in self.t.state.iter().enumerate() {
            let _ = writeln!(out, "(declare-const S{i}_{k} {})", self.t.theory.sort(*w));
        }
        out
    }

    /// State 0 is the entry.
    pub fn init(&self) -> String {
        format!("(assert (= pc0 {}))\n", self.pc(self.t.entry))
    }

    /// `(or (= pc{i} t) …)`: state `i` is in a target block.
    pub fn bad(&self, i: usize) -> String {
        let alts: Vec<String> = self.targets.iter().map(|t| format!("(= pc{i} {})", self.pc(*t))).collect();
        if alts.len() == 1 { alts[0].clone() } else { format!("(or {})", alts.join(" ")) }
    }

    /// The step from state `i` to state `i + 1` (declarations of its locals, and the assertion);
    /// states `i` and `i + 1` must be declared.
    pub fn transition(&self, i: usize) -> String {
        let mut decls = std::collections::BTreeSet::new();
        let mut alts = vec![];
        for edge in &self.steps {
            let rename = |tok: &str| -> Option<String> {
                let (kind, num) = tok.split_at(1);
                if num.is_empty() || !num.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                match kind {
                    "s" => Some(format!("S{i}_{num}")),
                    "n" => Some(format!("S{}_{num}", i + 1)),
                    // Per block, not per edge: the edges leaving a block share its
                    // instructions, and a path's values of them are found by its blocks.
                    "l" | "f" => Some(format!("E{i}_{}_{tok}", edge.from.0)),
                    _ => None,
                }
            };
            for (name, w) in &edge.clause.vars {
                if name.starts_with(['l', 'f']) {
                    decls.insert(format!("(declare-const {} {})\n", rename(name).unwrap_or_else(|| name.clone()), self.t.theory.sort(*w)));
                }
            }
            let to = edge.to.expect("steps have a successor");
            let mut parts = vec![format!("(= pc{i} {})", self.pc(edge.from)), format!("(= pc{} {})", i + 1, self.pc(to))];
            parts.extend(edge.clause.body.iter().map(|b| rename_symbols(b, &rename)));
            alts.push(format!("(and {})", parts.join(" ")));
        }
        let step = match alts.len() {
            0 => "false".to_string(),
            1 => alts.pop().unwrap_or_default(),
            _ => format!("(or {})", alts.join(" ")),
        };
        format!("{}(assert {step})\n", decls.into_iter().collect::<String>())
    }

    /// States `i` and `j` differ (block or a register).
    pub fn distinct(&self, i: usize, j: usize) -> String {
        let mut alts = vec![format!("(distinct pc{i} pc{j})")];
        alts.extend((0..self.t.state.len()).map(|k| format!("(distinct S{i}_{k} S{j}_{k})")));
        format!("(or {})", alts.join(" "))
    }

    /// The inputs of a path in `model` of the base case with states `0 ..= k`: the registers of
    /// state 0 (the parameters among them), and the nondet calls' results along the path.
    fn inputs(&self, model: &z3::Model, k: usize) -> PathInputs {
        use z3::ast::BV;
        let value = |name: &str, w: u32| model.eval(&BV::new_const(name, w), true).and_then(|v| v.as_u64()).unwrap_or(0);
        let registers = self.t.state.iter().enumerate().map(|(j, (v, w))| (*v, value(&format!("S0_{j}"), *w))).collect();
        let mut nondet = vec![];
        for i in 0..k {
            let pc = value(&format!("pc{i}"), 32);
            let Some(edge) = self.steps.iter().find(|e| e.from.0 as u64 == pc) else { break };
            nondet.extend(edge.nondet.iter().map(|(name, w)| value(&format!("E{i}_{}_{name}", edge.from.0), *w)));
        }
        PathInputs { registers, nondet }
    }
}

/// The inputs of a path of steps into a target: candidate inputs for a native replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathInputs {
    /// The registers at the entry (the parameters among them), with their values.
    pub registers: Vec<(crate::ir::ValueId, u64)>,
    /// The results of the `__VERIFIER_nondet_*` calls along the path, in order.
    pub nondet: Vec<u64>,
}

/// `text` with every symbol that `rename` maps replaced (symbols: runs of letters, digits, `_`
/// and `#`, so bit-vector literals such as `#x0f` and operators stay whole).
fn rename_symbols(text: &str, rename: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut tok = String::new();
    let flush = |tok: &mut String, out: &mut String| {
        if !tok.is_empty() {
            match rename(tok) {
                Some(r) => out.push_str(&r),
                None => out.push_str(tok),
            }
            tok.clear();
        }
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '#' {
            tok.push(c);
        } else {
            flush(&mut tok, &mut out);
            out.push(c);
        }
    }
    flush(&mut tok, &mut out);
    out
}

/// How a k-induction search ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KInductionAnswer {
    /// No run reaches a target: base cases below `k` and the step case `k` are unsatisfiable.
    Proved { k: usize },
    /// A path of `steps` steps from the entry reaches a target (in the steps'
    /// over-approximation: a run only when a replay of its `inputs` says so).
    BaseFails { steps: usize, inputs: PathInputs },
    /// Neither within [`MAX_STEPS`], the time, or the solver's answers: why.
    Unknown(String),
}

/// The base cases, one more step at a time, in one incremental solver.
struct BaseCases<'u, 't> {
    u: &'u Unrolling<'t>,
    solver: z3::Solver,
    /// Steps asserted so far.
    k: usize,
}

impl<'u, 't> BaseCases<'u, 't> {
    fn new(u: &'u Unrolling<'t>) -> Self {
        let solver = z3::Solver::new();
        solver.from_string(format!("{}{}", u.state(0), u.init()));
        BaseCases { u, solver, k: 0 }
    }

    /// Whether a path of the current number of steps from the entry ends in a target: its
    /// inputs if so, `Err` with Z3's reason when it cannot tell.
    fn check(&self) -> Result<Option<PathInputs>, String> {
        let (u, k) = (self.u, self.k);
        self.solver.push();
        self.solver.from_string(format!("{}(assert {})\n", u.state(k), u.bad(k)));
        let b = self.solver.check();
        // The model before the pop (it belongs to the check).
        let model = (b == z3::SatResult::Sat).then(|| self.solver.get_model()).flatten();
        self.solver.pop(1);
        match b {
            z3::SatResult::Sat => {
                tracing::debug!(k, model = %model.as_ref().map(|m| m.to_string()).unwrap_or_default(), "k-induction: a base case reaches a target");
                Ok(Some(model.map(|m| u.inputs(&m, k)).unwrap_or(PathInputs { registers: vec![], nondet: vec![] })))
            }
            z3::SatResult::Unknown => Err(format!("base case {k}: {}", self.solver.get_reason_unknown().unwrap_or_else(|| "unknown".into()))),
            z3::SatResult::Unsat => Ok(None),
        }
    }

    /// One more step.
    fn extend(&mut self) {
        self.solver.from_string(format!("{}{}", self.u.states(self.k + 1), self.u.transition(self.k)));
        self.k += 1;
    }
}

/// Runs the k-induction search on the calling thread's Z3 context; `stopped` is asked between
/// checks (an interrupted check answers unknown).
pub fn search(u: &Unrolling, stopped: &dyn Fn() -> bool) -> KInductionAnswer {
    let mut base = BaseCases::new(u);
    let step = z3::Solver::new();
    for k in 0..=MAX_STEPS {
        if stopped() {
            return KInductionAnswer::Unknown("stopped".into());
        }
        // Base case k: a path of k steps from the entry into a target.
        match base.check() {
            Ok(Some(inputs)) => return KInductionAnswer::BaseFails { steps: k, inputs },
            Err(why) => return KInductionAnswer::Unknown(why),
            Ok(None) => {}
        }
        // Step case k + 1: k + 1 good, different states, then a bad one.
        let n = k + 1;
        let mut chunk = format!("{}{}(assert (not {}))\n", u.states(n), u.transition(k), u.bad(k));
        for j in 0..n {
            let _ = writeln!(chunk, "(assert {})", u.distinct(j, n));
        }
        step.from_string(chunk);
        step.push();
        step.from_string(format!("{}(assert {})\n", u.state(n), u.bad(n)));
        let s = step.check();
        step.pop(1);
        match s {
            z3::SatResult::Unsat => return KInductionAnswer::Proved { k: n },
            z3::SatResult::Unknown => return KInductionAnswer::Unknown(format!("step case {n}: {}", step.get_reason_unknown().unwrap_or_else(|| "unknown".into()))),
            z3::SatResult::Sat => {}
        }
        base.extend();
    }
    KInductionAnswer::Unknown(format!("not {MAX_STEPS}-inductive"))
}

/// The shortest path of at most `max_steps` steps from the entry into a target, by bounded
/// model checking of the steps (the base cases alone): its length and inputs. `Err` when Z3
/// could not tell or `stopped` held; `Ok(None)` when there is none that short.
pub fn shortest_path(u: &Unrolling, max_steps: usize, stopped: &dyn Fn() -> bool) -> Result<Option<(usize, PathInputs)>, String> {
    let mut base = BaseCases::new(u);
    for k in 0..=max_steps {
        if stopped() {
            return Err("stopped".into());
        }
        if let Some(inputs) = base.check()? {
            return Ok(Some((k, inputs)));
        }
        base.extend();
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_renamed_whole() {
        let r = |t: &str| (t == "s1" || t == "l12").then(|| format!("<{t}>"));
        assert_eq!(rename_symbols("(= n1 (bvadd s1 #x01 l12 s12))", &r), "(= n1 (bvadd <s1> #x01 <l12> s12))");
        assert_eq!(rename_symbols("(_ bv1 32)", &r), "(_ bv1 32)");
    }
}
