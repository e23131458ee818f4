//! The `chc` engine: the function as constrained Horn clauses ([`crate::chc`]), solved by Z3's
//! Horn engine (Spacer). A solution is a set of inductive invariants that exclude every
//! target: a proof of unreachability that needs no loop summary. When Spacer finds the query
//! derivable instead, that is a run of the over-approximation only: the shortest path of the
//! clauses' steps into a target (bounded model checking, [`crate::chc::kinduction`]) gives
//! inputs, and only a native replay of them that enters the target makes a witness.
//!
//! The `k-induction` engine unrolls the same clauses as steps: a proof when the targets'
//! unreachability is k-inductive, with no invariant to find; a failing base case is such a
//! path, replayed the same way.

use super::{Context, Engine, EngineKind, EngineResult, Finding, Invariant};
use crate::ir::Program;
use crate::chc::{HornProblem, Theory};
use crate::solve::{check_horn, HornAnswer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct ChcEngine {
    pub program: Arc<Program>,
}

impl Engine for ChcEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Chc
    }

    fn run(self: Box<Self>, cx: &Context) -> EngineResult {
        let f = &self.program.function;
        // Both encodings at once: a solution of either is a proof.
        let problems: Vec<(Theory, HornProblem)> = [Theory::Integers, Theory::BitVectors].into_iter().filter_map(|t| crate::chc::encode(f, t, &|| cx.out_of_time()).map(|p| (t, p))).collect();
        if problems.is_empty() {
            return EngineResult::new(Finding::Unknown("not encoded as Horn clauses: no target block, or too many blocks and registers".into()));
        }
        for (t, p) in &problems {
            tracing::debug!(theory = ?t, smtlib = %p.smtlib, "Horn clauses");
        }
        let t0 = Instant::now();
        let budget = cx.left().saturating_sub(Duration::from_millis(100));
        let stop = AtomicBool::new(false);
        let (tx, rx) = std::sync::mpsc::channel::<(Theory, HornAnswer)>();
        let mut answers: Vec<(Theory, HornAnswer)> = vec![];
        std::thread::scope(|scope| {
            for (t, p) in &problems {
                let (tx, stop) = (tx.clone(), &stop);
                scope.spawn(move || {
                    let _ = tx.send((*t, check_horn(&p.smtlib, budget, stop)));
                });
            }
            drop(tx);
            while answers.len() < problems.len() {
                if cx.cancelled() {
                    stop.store(true, Ordering::SeqCst);
                }
                match rx.recv_timeout(Duration::from_millis(5)) {
                    Ok(a) => {
                        if matches!(a.1, HornAnswer::Solved(_)) {
                            stop.store(true, Ordering::SeqCst);
                        }
                        answers.push(a);
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
        });
        let mut out = EngineResult::new(Finding::Unknown(String::new()));
        out.timings.insert("solve_chc".into(), t0.elapsed().as_secs_f64());
        out.stats.insert("predicates".into(), problems[0].1.predicates.iter().flatten().count() as u64);
        out.stats.insert("registers".into(), problems[0].1.registers.len() as u64);
        let solved = answers.iter().find_map(|(t, a)| match a {
            HornAnswer::Solved(model) => Some((*t, model)),
            _ => None,
        });
        out.finding = match solved {
            Some((theory, model)) => {
                tracing::debug!(%model, ?theory, "Horn solution");
                let problem = &problems.iter().find(|(t, _)| *t == theory).expect("solved one of them").1;
                let over = match theory {
                    Theory::Integers => "over the integers modulo 2^w",
                    Theory::BitVectors => "over bit-vectors",
                };
                out.invariants = readable_invariants(model, f, problem);
                Finding::Unreachable(format!(
                    "the function's Horn clauses ({over}) have a solution (Z3 Spacer): inductive invariants{} exclude every target",
                    if out.invariants.is_empty() { String::new() } else { format!(" of {} block(s)", out.invariants.len()) }
                ))
            }
            None if answers.iter().all(|(_, a)| matches!(a, HornAnswer::Refuted)) && !answers.is_empty() => {
                // A counterexample of the clauses: the shortest path of their steps into a
                // target (bounded model checking), its inputs replayed like any model.
                let replayed = counterexample(f, cx).and_then(|(steps, inputs)| {
                    out.stats.insert("counterexample_steps".into(), steps as u64);
                    replay_path(f, &inputs, cx)
                });
                replayed.unwrap_or_else(|| {
                    Finding::Unknown("the Horn clauses reach a target (their memory and calls are unknown), and no path of their steps replayed into it".into())
                })
            }
            None => Finding::Unknown(format!(
                "Horn clauses: {}",
                answers
                    .iter()
                    .map(|(t, a)| format!(
                        "{}: {}",
                        if *t == Theory::Integers { "integers" } else { "bit-vectors" },
                        match a {
                            HornAnswer::Unknown(why) => why.as_str(),
                            _ => "a target is reached in the clauses",
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        };
        out
    }
}

pub struct KInductionEngine {
    pub program: Arc<Program>,
}

impl Engine for KInductionEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::KInduction
    }

    fn run(self: Box<Self>, cx: &Context) -> EngineResult {
        use crate::chc::kinduction::{search, KInductionAnswer, Unrolling};
        let Some(t) = crate::chc::transitions(&self.program.function, Theory::BitVectors, &|| cx.out_of_time()) else {
            return EngineResult::new(Finding::Unknown("not encoded as steps: no target block, or too many blocks and registers".into()));
        };
        let t0 = Instant::now();
        let budget = cx.left().saturating_sub(Duration::from_millis(100));
        let answer = crate::solve::in_worker("z3-kinduction", budget, &cx.cancel, move |stopped| match Unrolling::new(&t) {
            Some(u) => search(&u, stopped),
            None => KInductionAnswer::Unknown("a step of the function is too large to unroll".into()),
        });
        let mut out = EngineResult::new(Finding::Unknown(String::new()));
        out.timings.insert("solve_k_induction".into(), t0.elapsed().as_secs_f64());
        out.finding = match answer {
            Ok(KInductionAnswer::Proved { k }) => {
                out.stats.insert("k".into(), k as u64);
                Finding::Unreachable(format!(
                    "k-induction over the function's steps (bit-vectors, k = {k}): no path of fewer than {k} steps from the entry enters a target, and no {k} different steps outside the targets lead into one"
                ))
            }
            Ok(KInductionAnswer::BaseFails { steps, inputs }) => {
                // The path's inputs, replayed like any model: a run that enters the target is
                // a witness; any other answer leaves the verdict open.
                replay_path(&self.program.function, &inputs, cx).unwrap_or_else(|| {
                    Finding::Unknown(format!(
                        "k-induction: a path of {steps} steps enters a target in the steps' over-approximation (memory and calls unknown), and its inputs did not replay into it, so no proof"
                    ))
                })
            }
            Ok(KInductionAnswer::Unknown(why)) | Err(why) => Finding::Unknown(format!("k-induction: {why}")),
        };
        out
    }
}

/// Most steps of a counterexample path searched for after Spacer found the query derivable.
const COUNTEREXAMPLE_STEPS: usize = 256;

/// The shortest path of the function's steps into a target, if one is found within
/// [`COUNTEREXAMPLE_STEPS`] and the time left.
fn counterexample(f: &crate::ir::Function, cx: &Context) -> Option<(usize, crate::chc::kinduction::PathInputs)> {
    let t = crate::chc::transitions(f, Theory::BitVectors, &|| cx.out_of_time())?;
    let budget = cx.left().saturating_sub(Duration::from_millis(300));
    crate::solve::in_worker("z3-bmc", budget, &cx.cancel, move |stopped| {
        let u = crate::chc::kinduction::Unrolling::new(&t)?;
        crate::chc::kinduction::shortest_path(&u, COUNTEREXAMPLE_STEPS, stopped).ok().flatten()
    })
    .ok()
    .flatten()
}

/// A native run of a path's inputs: the finding when it entered the target.
fn replay_path(f: &crate::ir::Function, inputs: &crate::chc::kinduction::PathInputs, cx: &Context) -> Option<Finding> {
    // The path's pointers as it has them (0 is NULL), then, in case a 0 was only the model's
    // default for an address the steps never used, as buffers.
    let with_nulls = witness_of(f, inputs, true);
    let buffers = witness_of(f, inputs, false);
    let tries = if with_nulls == buffers { vec![buffers] } else { vec![with_nulls, buffers] };
    for w in tries {
        if let Ok(Some(run)) = cx.replay(&w) {
            if run.reached.is_some() {
                let report = crate::report::WitnessReport::replayed(&w, &run, 1, Default::default());
                return Some(Finding::Reached { witness: w, run, report });
            }
        }
    }
    None
}

/// The inputs of a path of steps as a witness: integer parameters as the path's entry state
/// has them, pointer parameters zero-filled buffers (memory is ⋆ to the steps), the nondet
/// results in call order.
fn witness_of(f: &crate::ir::Function, inputs: &crate::chc::kinduction::PathInputs, nulls: bool) -> crate::witness::Witness {
    use crate::ir::Ty;
    use crate::witness::{ParamInput, Witness, BUFFER_SLACK};
    let params = f
        .params
        .iter()
        .map(|p| match &p.ty {
            Ty::Int(w) => {
                let value = inputs.registers.iter().find(|(v, _)| *v == p.value).map_or(0, |(_, x)| *x);
                ParamInput::Int { name: p.name.clone(), width: *w, value: crate::expr::mask(*w, value) }
            }
            // The Horn clauses see a pointer parameter as its address: 0 is NULL.
            Ty::Ptr if nulls && p.buffer_bytes.is_none() && inputs.registers.iter().any(|(v, x)| *v == p.value && *x == 0) => ParamInput::Null { name: p.name.clone() },
            Ty::Ptr => {
                let size = p.front_bytes + p.buffer_bytes.unwrap_or(crate::dse::PARAM_BUFFER_BYTES);
                let mut bytes = vec![0u8; size as usize];
                if p.buffer_bytes.is_none() {
                    bytes.extend(std::iter::repeat_n(0, BUFFER_SLACK));
                }
                ParamInput::Buffer { name: p.name.clone(), bytes, pointees: vec![], front: p.front_bytes }
            }
            other => ParamInput::Zero { name: p.name.clone(), c_type: other.to_string() },
        })
        .collect();
    Witness { params, nondet: inputs.nondet.clone() }
}

/// The non-trivial invariants of the model (Z3 prints each predicate as `P3 -> {\n body\n}`,
/// its arguments as `(:var k)`), per block label, with the registers' names.
fn readable_invariants(model: &str, f: &crate::ir::Function, problem: &crate::chc::HornProblem) -> Vec<Invariant> {
    let mut out = vec![];
    let mut lines = model.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.trim().strip_suffix("-> {").map(str::trim) else { continue };
        let mut body = String::new();
        for l in lines.by_ref() {
            if l.trim() == "}" {
                break;
            }
            body.push_str(l.trim());
            body.push(' ');
        }
        let mut body = body.trim().to_string();
        let Some(block) = problem.predicates.iter().position(|p| p.as_deref() == Some(name)) else { continue };
        if body.is_empty() || body == "true" || f.blocks[block].target.is_some() {
            continue;
        }
        for (k, r) in problem.registers.iter().enumerate() {
            body = body.replace(&format!("(:var {k})"), r);
        }
        let body = without_ranges(&body);
        if body.is_empty() || body == "true" {
            continue;
        }
        out.push(Invariant { block: f.blocks[block].label.clone(), formula: body });
    }
    out
}

/// `body` without the range facts every integer register has (`(<= 0 x)`, `(not (<= 2^w x))`,
/// `(< x 2^w)`): only what the loop keeps.
fn without_ranges(body: &str) -> String {
    let Some(inner) = body.strip_prefix("(and ").and_then(|b| b.strip_suffix(')')) else { return body.to_string() };
    let mut parts = vec![];
    let (mut depth, mut start) = (0i32, None);
    for (i, ch) in inner.char_indices() {
        match ch {
            '(' => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            ')' => {
                depth -= 1;
                if depth == 0 {
                    if let Some(s) = start.take() {
                        parts.push(&inner[s..=i]);
                    }
                }
            }
            _ => {}
        }
    }
    let is_range = |p: &str| {
        let words: Vec<&str> = p.split(|c: char| c == '(' || c == ')' || c.is_whitespace()).filter(|w| !w.is_empty()).collect();
        let power_of_two = |w: &str| w.parse::<u128>().is_ok_and(|n| n.is_power_of_two() && n >= 256);
        matches!(words.as_slice(), ["<=", "0", _]) || matches!(words.as_slice(), ["not", "<=", m, _] if power_of_two(m)) || matches!(words.as_slice(), ["<", _, m] if power_of_two(m))
    };
    let kept: Vec<&str> = parts.into_iter().filter(|p| !is_range(p)).collect();
    match kept.len() {
        0 => String::new(),
        1 => kept[0].to_string(),
        _ => format!("(and {})", kept.join(" ")),
    }
}

#[cfg(test)]
mod tests {
    use super::without_ranges;

    #[test]
    fn range_facts_are_left_out_of_the_printed_invariants() {
        assert_eq!(without_ranges("(and (<= (+ x (* (- 1) y)) 0) (<= 0 x) (not (<= 4294967296 y)) (not (<= n x)))"), "(and (<= (+ x (* (- 1) y)) 0) (not (<= n x)))");
        assert_eq!(without_ranges("(and (<= 0 x) (not (<= 256 x)))"), "");
        assert_eq!(without_ranges("(bvsle n i)"), "(bvsle n i)");
    }
}
