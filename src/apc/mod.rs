//! The abstract path condition: apc_π for every backbone π (Algorithm 1 of the APC paper), and
//! their disjunction. Loop entries on a path apply the loop's summary (see `summary`).

pub mod unfold;

use crate::cfg::{LoopId, Node, Structure};
use crate::expr::{Expr, ExprId, ExprPool, Printer};
use crate::ir::Program;
use crate::summary::{LoopSummary, SummaryKey};
use crate::symex::{Executor, Inputs, State};
use std::collections::HashMap;
use std::sync::Arc as Rc;
use tracing::debug;

/// Budget (CPU time) of the check that drops the pseudo-targets' backbones
/// ([`ApcBuilder::drop_side_targets_proved_unreachable`]).
const SIDE_TARGET_CHECK: std::time::Duration = std::time::Duration::from_millis(150);

/// The conjunction of the tests along one backbone.
#[derive(Clone, Debug)]
pub struct BackboneApc {
    /// Index into `Structure::backbones`.
    pub backbone: usize,
    /// The target number of the block the backbone ends in (numbers from
    /// `Program::target_names.len()` on are recursion cut sites, see `load::recursion`).
    pub target: Option<u32>,
    pub tests: Vec<ExprId>,
    pub formula: ExprId,
}

/// The APC of a program: a necessary condition on the inputs to reach the target.
#[derive(Clone, Debug)]
pub struct Apc {
    pub formula: ExprId,
    pub backbones: Vec<BackboneApc>,
    pub inputs: Inputs,
    /// Whether `formula` covers every backbone: only then does its unsatisfiability prove the
    /// target unreachable.
    pub complete: bool,
    /// Building ran out of time: `formula` is no APC (see [`ApcBuilder::with_deadline`]).
    pub timed_out: bool,
    /// The summary computed for each loop (first context met), for the report.
    pub summaries: Vec<(LoopId, Rc<LoopSummary>)>,
    /// Preferences for models, never facts (a fill loop's writes inside their object): the
    /// `apc` engine asks with them first and drops them when they leave no model.
    pub hints: Vec<ExprId>,
}

/// Adds a test to a conjunction: ⋆ tests are dropped (sound), conjunctions are split so that a
/// ⋆ in one conjunct does not cost the others. Returns whether a ⋆ test was dropped: the
/// conjunction is then weaker than the path's real condition.
pub fn push_test(pool: &ExprPool, tests: &mut Vec<ExprId>, t: ExprId) -> bool {
    match pool.get(t) {
        Expr::Star(_) => true,
        Expr::Bool(true) => false,
        Expr::And(xs) => {
            let mut dropped = false;
            for &x in xs.clone().iter() {
                dropped |= push_test(pool, tests, x);
            }
            dropped
        }
        _ => {
            if !tests.contains(&t) {
                tests.push(t)
            }
            false
        }
    }
}

/// The result of executing one path.
pub struct PathResult {
    pub state: State,
    pub tests: Vec<ExprId>,
    /// Path counters and auxiliary symbols introduced on the path by loop summaries: existentially
    /// quantified over the path's condition.
    pub fresh: Vec<ExprId>,
    /// Whether some test on the path was ⋆ and dropped: `tests` is then only necessary, not
    /// sufficient, for the path to be taken (an iteration count must not rely on it).
    pub dropped: bool,
}

/// Builds APCs: owns the expression pool, the inputs, and the cache of loop summaries.
pub struct ApcBuilder<'a> {
    pub program: &'a Program,
    pub structure: &'a Structure,
    pub pool: ExprPool,
    pub inputs: Inputs,
    pub(crate) summaries: HashMap<SummaryKey, Rc<LoopSummary>>,
    pub(crate) first_summary: Vec<(LoopId, Rc<LoopSummary>)>,
    pub(crate) next_counter: u32,
    pub(crate) next_aux: u32,
    /// Loop-summary coverage violations met (see `summary`): always empty unless a bug.
    pub(crate) coverage_gaps: Vec<String>,
    /// The region `(start, extent)` each upward fill λ may have written, for the λs of
    /// summaries and of their applications (an outer loop lays them side by side).
    pub(crate) fill_regions: HashMap<ExprId, (ExprId, ExprId)>,
    /// Fill λs noted while the current loop is summarised (moved into its `LoopSummary`).
    pub(crate) new_fills: Vec<ExprId>,
    /// The same for model preferences (`LoopSummary::hints`), and those of the applications
    /// on the backbones (`Apc::hints`).
    pub(crate) new_hints: Vec<ExprId>,
    pub(crate) hints: Vec<ExprId>,
    /// Solver time left for the checks that sharpen summaries.
    pub(crate) check_budget: crate::summary::CheckBudget,
    /// Solver time left for proving loop invariants (`summary::invariant`).
    pub(crate) invariant_budget: crate::summary::CheckBudget,
    /// When building must stop (`--timeout`); past it paths are cut short and the APC is marked
    /// `timed_out`, which forbids any verdict but unknown.
    deadline: Option<std::time::Instant>,
    /// Set by whoever no longer needs the APC: building stops as at the deadline.
    stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    timed_out: bool,
}

impl<'a> ApcBuilder<'a> {
    pub fn new(program: &'a Program, structure: &'a Structure) -> Self {
        ApcBuilder {
            program,
            structure,
            pool: ExprPool::new(),
            inputs: Inputs::default(),
            summaries: HashMap::new(),
            first_summary: vec![],
            next_counter: 0,
            next_aux: 0,
            coverage_gaps: vec![],
            fill_regions: HashMap::new(),
            new_fills: vec![],
            new_hints: vec![],
            hints: vec![],
            check_budget: Default::default(),
            invariant_budget: crate::summary::invariant::budget_within(None),
            deadline: None,
            stop: None,
            timed_out: false,
        }
    }

    /// Stops building at `deadline`: the APC is then incomplete (`Apc::timed_out`).
    pub fn with_deadline(mut self, deadline: std::time::Instant) -> Self {
        self.deadline = Some(deadline);
        self.invariant_budget = crate::summary::invariant::budget_within(Some(deadline.saturating_duration_since(std::time::Instant::now())));
        self
    }

    /// Stops building once `stop` is set (the APC is then incomplete, as at the deadline).
    pub fn with_stop(mut self, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    pub(crate) fn out_of_time(&mut self) -> bool {
        let stopped = || self.stop.as_ref().is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
        if !self.timed_out && (self.deadline.is_some_and(|d| std::time::Instant::now() >= d) || stopped()) {
            self.timed_out = true;
        }
        self.timed_out
    }

    pub fn executor(&mut self) -> Executor<'_> {
        Executor::new(self.program, &mut self.pool, &mut self.inputs)
    }

    /// Executes `nodes` from state `st` (Algorithm 1). When `iteration` is set, the path is an
    /// iteration of a loop: its first node's phi nodes are the loop variables already in `st`,
    /// and the final `Back(v)` node evaluates v's phi nodes for the next iteration.
    pub fn execute_path(&mut self, nodes: &[Node], entries: &[(usize, LoopId)], mut st: State, iteration: bool) -> PathResult {
        let mut tests = vec![];
        let mut fresh = vec![];
        let mut dropped = false;
        for (pos, &node) in nodes.iter().enumerate() {
            if self.out_of_time() {
                // A path cut short: what it computed is no iteration's effect and no complete
                // condition; the whole APC is marked and yields no verdict.
                break;
            }
            let b = node.block();
            if !(iteration && pos == 0) {
                let pred = pos.checked_sub(1).map(|p| nodes[p].block());
                self.executor().exec_phis(&mut st, b, pred);
            }
            // The target is reached on entering its block; Back(v) ends an iteration.
            if pos + 1 == nodes.len() || matches!(node, Node::Back(_)) {
                break;
            }
            if let Some(&(_, loop_id)) = entries.iter().find(|(p, _)| *p == pos) {
                // A path that leaves the loop into a store's clobber site from inside it left
                // at a bounds test, which no iteration condition holds (`Executor::edge_tests`
                // leaves it out): the loop may end before its closed-form count.
                let leaves_at_a_bounds_test = match nodes {
                    [.., last_in_loop, end] => self.program.is_clobber_site(end.block()) && self.structure.get(loop_id).blocks.contains(&last_in_loop.block()),
                    _ => false,
                };
                let (loop_tests, loop_fresh) = self.apply_loop(loop_id, &mut st, !leaves_at_a_bounds_test);
                for t in loop_tests {
                    dropped |= push_test(&self.pool, &mut tests, t);
                }
                fresh.extend(loop_fresh);
            }
            let body_tests = self.executor().exec_body(&mut st, b);
            for t in body_tests {
                dropped |= push_test(&self.pool, &mut tests, t);
            }
            let next = nodes[pos + 1].block();
            let edge = self.executor().edge_tests(&mut st, b, next);
            for t in edge {
                dropped |= push_test(&self.pool, &mut tests, t);
            }
        }
        PathResult { state: st, tests, fresh, dropped }
    }

    /// The backbones into pseudo-targets (ids from `Program::target_names.len()` on: stores
    /// that may leave their object, see `load::bounds`, and recursion cut sites), when one
    /// quick check proves them all unsatisfiable: their formulas become `false`. Why: they are
    /// in the APC so that no proof overlooks them, but as disjuncts they make the real target's
    /// query harder (a fill loop's array bound: wp_hello's model took more than 20 s instead of
    /// 1 s), and they are usually decided at once (an index the loop's own test bounds). Sound:
    /// a disjunct with no model changes no model of the disjunction.
    fn drop_side_targets_proved_unreachable(&mut self, backbones: &mut [BackboneApc], truncated: bool) {
        let real = self.program.target_names.len() as u32;
        let side: Vec<usize> = (0..backbones.len()).filter(|&i| backbones[i].target.is_some_and(|t| t >= real)).collect();
        if side.is_empty() || truncated || self.out_of_time() {
            return;
        }
        let query = self.pool.or(side.iter().map(|&i| backbones[i].formula));
        if self.pool.as_bool(query) == Some(false) {
            return;
        }
        // First its quantifier-free weakening, quick and already a proof when unsat: an index
        // the loop's own test bounds needs no quantified iteration condition.
        let weak = crate::expr::without_quantifiers(&mut self.pool, query);
        let unsat = |pool: &ExprPool, q: ExprId, budget| {
            let answer = crate::solve::check(pool, q, budget, |_| ());
            debug!(side = side.len(), outcome = ?answer.outcome.is_definite(), seconds = answer.seconds, "side targets checked");
            matches!(answer.outcome, crate::solve::Outcome::Unsat)
        };
        if (weak != query && unsat(&self.pool, weak, SIDE_TARGET_CHECK / 3)) || unsat(&self.pool, query, SIDE_TARGET_CHECK) {
            let f = self.pool.ff();
            for i in side {
                backbones[i].formula = f;
            }
        }
    }

    /// Builds the APC: the disjunction of apc_π over all backbones of the function.
    pub fn build(self) -> (Apc, ExprPool) {
        let (apc, pool, _) = self.build_checked();
        (apc, pool)
    }

    /// [`ApcBuilder::build`], also returning the loop-summary coverage violations met (a value
    /// the loop changes that neither a rule nor ⋆ covers); tests assert there are none.
    pub fn build_checked(mut self) -> (Apc, ExprPool, Vec<String>) {
        let mut backbones = vec![];
        let structure = self.structure;
        for (i, bb) in structure.backbones.iter().enumerate() {
            if self.out_of_time() {
                break;
            }
            let st = self.executor().initial_state();
            let r = self.execute_path(&bb.nodes, &bb.entries, st, false);
            // Counters stay free: the whole APC is existentially closed by satisfiability.
            let formula = self.pool.and(r.tests.iter().copied());
            debug!(backbone = i, apc = %Printer::new(&self.pool).print(formula), "apc of backbone");
            let target = match bb.nodes.last() {
                Some(crate::cfg::Node::Block(b)) => self.program.function.block(*b).target,
                _ => None,
            };
            backbones.push(BackboneApc { backbone: i, target, tests: r.tests, formula });
        }
        self.drop_side_targets_proved_unreachable(&mut backbones, structure.truncated);
        let any = self.pool.or(backbones.iter().map(|b| b.formula));
        // Facts of every native run (object address ranges) that the path conditions rely on.
        let axioms: Vec<ExprId> = self
            .inputs
            .axioms
            .iter()
            .copied()
            .filter(|&a| {
                let syms: Vec<ExprId> = crate::expr::children_of(self.pool.get(a)).into_iter().filter(|&c| self.pool.as_const(c).is_none()).collect();
                crate::expr::mentions(&self.pool, any, &syms)
            })
            .collect();
        let formula = self.pool.and(axioms.into_iter().chain([any]));
        let timed_out = self.timed_out;
        let apc = Apc {
            formula,
            backbones,
            inputs: self.inputs,
            complete: !structure.truncated && !timed_out,
            timed_out,
            summaries: self.first_summary,
            hints: self.hints,
        };
        (apc, self.pool, self.coverage_gaps)
    }
}

/// Builds the APC of `program` along the backbones of `structure`.
pub fn build(program: &Program, structure: &Structure) -> (Apc, ExprPool) {
    ApcBuilder::new(program, structure).build()
}
