//! The `chc` engine: the function as constrained Horn clauses ([`crate::chc`]), solved by Z3's
//! Horn engine (Spacer). A solution is a set of inductive invariants that exclude every
//! target: a proof of unreachability that needs no loop summary. It never finds witnesses (a
//! derivation of the query is a run of the over-approximation only).

use super::{Context, Engine, EngineKind, EngineResult, Finding};
use crate::ir::Program;
use crate::solve::{check_horn, HornAnswer};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct ChcEngine {
    pub program: Arc<Program>,
}

/// Invariants shown in a reason, at most.
const SHOWN: usize = 4;

impl Engine for ChcEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Chc
    }

    fn run(self: Box<Self>, cx: &Context) -> EngineResult {
        let f = &self.program.function;
        let Some(problem) = crate::chc::encode(f) else {
            return EngineResult::new(Finding::Unknown("no target block to encode".into()));
        };
        tracing::debug!(smtlib = %problem.smtlib, "Horn clauses");
        let t = Instant::now();
        let budget = cx.left().saturating_sub(Duration::from_millis(100));
        let answer = check_horn(&problem.smtlib, budget, cx.cancel);
        let mut out = EngineResult::new(Finding::Unknown(String::new()));
        out.timings.insert("solve_chc".into(), t.elapsed().as_secs_f64());
        out.stats.insert("predicates".into(), problem.predicates.iter().flatten().count() as u64);
        out.stats.insert("registers".into(), problem.registers.len() as u64);
        out.finding = match answer {
            HornAnswer::Solved(model) => {
                tracing::debug!(%model, "Horn solution");
                let invariants = readable_invariants(&model, f, &problem);
                Finding::Unreachable(if invariants.is_empty() {
                    "the function's Horn clauses have a solution (Z3 Spacer): no target block is entered".into()
                } else {
                    format!("the function's Horn clauses have a solution (Z3 Spacer), with the inductive invariants {}", invariants.join("; "))
                })
            }
            HornAnswer::Refuted => Finding::Unknown("the Horn clauses reach a target (their memory and calls are unknown, so no run follows from it)".into()),
            HornAnswer::Unknown(why) => Finding::Unknown(format!("Horn clauses: {why}")),
        };
        out
    }
}

/// The non-trivial invariants of the model (Z3 prints each predicate as `P3 -> {\n body\n}`,
/// its arguments as `(:var k)`), per block label, with the registers' names.
fn readable_invariants(model: &str, f: &crate::ir::Function, problem: &crate::chc::HornProblem) -> Vec<String> {
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
        out.push(format!("{}: {}", f.blocks[block].label, body));
        if out.len() == SHOWN {
            break;
        }
    }
    out
}
