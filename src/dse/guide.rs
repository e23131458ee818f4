//! APC-based pruning data for the DSE.
//!
//! The APC is a necessary condition on the inputs of every run that reaches the target. The DSE
//! names its input symbols exactly as the APC does (the nondet stream, parameters, parameter
//! buffers), so for a state with path condition PC, `PC ∧ APC` is necessary for *some extension
//! of this path* to reach the target: when it is unsatisfiable the state is dropped. The APC's
//! path counters κ_b of each top-level loop count that loop's iterations along backbone b; the
//! state knows how many it has done (c_b), so it adds κ_b ≥ c_b while inside the loop and
//! κ_b = c_b once it has left it (a run never re-enters a top-level loop). That is what makes
//! the pruning bite: "k + (ones still to come) > 12" becomes unsatisfiable as soon as too few
//! iterations remain.
//!
//! Everything here is plain data (the APC's expressions, names, block sets), so a `Guide` can be
//! built on one thread and used on the DSE's thread, where the Z3 terms are made: the analysis
//! thread needs no Z3 context for it.

use super::exec::Names;
use super::state::LoopProgress;
use crate::apc::Apc;
use crate::cfg::{Node, Structure};
use crate::expr::{Expr, ExprId, ExprPool};
use crate::ir::{BlockId, Program};
use std::collections::BTreeSet;
use tracing::debug;
use z3::ast::{Bool, BV};

/// Unfolding bound of the APC^K the guide uses (quantifier-free, still necessary).
pub const GUIDE_UNFOLD_K: u32 = 8;
/// Largest full APC (expression nodes) the DSE prunes with (see [`Guide::new`]); the benchmarks'
/// are 34–1462 nodes (9–62 KB of SMT-LIB), HWM's 1829 and MatrIR's 4255 (over 100 KB).
const MAX_FULL_APC_NODES: usize = 1_500;
/// Most expressions the unfolding may add.
const MAX_UNFOLD_NODES: usize = 200_000;

/// One top-level loop whose iterations the DSE counts.
#[derive(Clone, Debug)]
pub struct GuidedLoop {
    pub header: BlockId,
    pub blocks: BTreeSet<BlockId>,
    /// Per iteration backbone: its blocks and the name of its counter κ in the APC (`None` for
    /// infeasible backbones).
    pub backbones: Vec<(BTreeSet<BlockId>, Option<String>)>,
    /// Blocks that appear on some iteration backbone (blocks of nested loops' bodies do not).
    pub on_backbones: BTreeSet<BlockId>,
}

/// Pruning data built from the APC.
#[derive(Clone, Debug)]
pub struct Guide {
    pub names: Names,
    /// The expressions of `apc` and `skeleton`: a copy, translated to Z3 on the DSE's thread.
    pool: ExprPool,
    /// The (unfolded, quantifier-free when possible) APC; `None` when it cannot prune (the
    /// backbone bound was hit, or it is too large).
    apc: Option<ExprId>,
    /// Its scalar skeleton ([`scalar_skeleton`]; `None` when it is the APC itself), the cheap
    /// first pruning query.
    skeleton: Option<ExprId>,
    /// The nondet stream positions each reads (`None`: some read is at a symbolic position).
    pub apc_stream_reads: Option<BTreeSet<u64>>,
    pub skeleton_stream_reads: Option<BTreeSet<u64>>,
    pub loops: Vec<GuidedLoop>,
}

fn symbol_name(pool: &ExprPool, e: ExprId) -> Option<String> {
    match pool.get(e) {
        Expr::Symbol { name, .. } => Some(name.to_string()),
        _ => None,
    }
}

/// Weakens `root` for cheap pruning queries: every read of memory the program wrote (a load
/// from anything but an input array: store chains, the exact fill-loop chains of the loop
/// summaries, their ite over the counter) becomes a fresh constant. Sound: in a quantifier-free
/// formula, a model of the original gives one of the weakened formula (each constant takes the
/// value its read had), so the result is still a necessary condition. Reads under a binder (a
/// τ left by an unfolding that gave up) are kept, as a constant cannot depend on the bound value.
///
/// What the DSE needs from the APC is mostly arithmetic over path counters ("k + the ones still
/// to come > 12"); the written memory made each query cost tens of milliseconds and decided
/// little that the state's own path condition does not.
fn forget_written_memory(pool: &mut ExprPool, root: ExprId) -> ExprId {
    use crate::expr::{children_of as children, Sort, SymbolKind};
    use std::collections::HashMap;
    let mut memo: HashMap<ExprId, (ExprId, bool)> = HashMap::new(); // (new node, mentions a τ)
    let mut fresh = 0u32;
    let mut stack = vec![(root, false)];
    while let Some((e, expanded)) = stack.pop() {
        if memo.contains_key(&e) {
            continue;
        }
        let node = pool.get(e).clone();
        let kids = children(&node);
        if kids.is_empty() {
            let bound = matches!(node, Expr::Symbol { kind: SymbolKind::Tau(_), .. });
            memo.insert(e, (e, bound));
            continue;
        }
        if !expanded {
            stack.push((e, true));
            stack.extend(kids.iter().filter(|k| !memo.contains_key(k)).map(|&k| (k, false)));
            continue;
        }
        let bound = kids.iter().any(|k| memo[k].1);
        let out = match node {
            Expr::Load { array, width, .. } if !bound && !matches!(pool.get(array), Expr::Symbol { .. }) => {
                fresh += 1;
                pool.symbol(&format!("dse.read{fresh}"), Sort::Bv(width), SymbolKind::Aux)
            }
            _ => {
                let new_kids: Vec<ExprId> = kids.iter().map(|k| memo[k].0).collect();
                if new_kids == kids {
                    e
                } else {
                    pool.rebuild(&node, &new_kids)
                }
            }
        };
        memo.insert(e, (out, bound));
    }
    memo[&root].0
}

/// The scalar skeleton of `root`: every atom that quantifies or reads written memory becomes
/// `true` where it occurs positively (`false` under a negation), through `∧`, `∨` and `¬`. A
/// weakening of a necessary condition is necessary, so it prunes soundly; it keeps the bounds on
/// inputs and the counter arithmetic that the quantified parts only add to, and Z3 decides it
/// in well under a millisecond where the full (unfolded) APC of a nested loop over an array can
/// take a second. `None` when nothing is dropped (the full APC is as cheap).
fn scalar_skeleton(pool: &mut ExprPool, root: ExprId) -> Option<ExprId> {
    use crate::expr::children_of as children;
    use std::collections::HashMap;
    // Which subterms quantify or read/write memory that is not an input array.
    let mut hard: HashMap<ExprId, bool> = HashMap::new();
    let mut stack = vec![(root, false)];
    while let Some((e, expanded)) = stack.pop() {
        if hard.contains_key(&e) {
            continue;
        }
        let node = pool.get(e).clone();
        let kids = children(&node);
        if !expanded && !kids.is_empty() {
            stack.push((e, true));
            stack.extend(kids.iter().filter(|k| !hard.contains_key(k)).map(|&k| (k, false)));
            continue;
        }
        let own = match &node {
            Expr::Forall(..) | Expr::Exists(..) | Expr::Store { .. } => true,
            Expr::Load { array, .. } | Expr::Select(array, _) => !matches!(pool.get(*array), Expr::Symbol { .. }),
            _ => false,
        };
        hard.insert(e, own || kids.iter().any(|k| hard[k]));
    }
    if !hard[&root] {
        return None;
    }
    fn weaken(pool: &mut ExprPool, hard: &std::collections::HashMap<ExprId, bool>, e: ExprId, positive: bool) -> ExprId {
        if !hard.get(&e).copied().unwrap_or(true) {
            return e;
        }
        match pool.get(e).clone() {
            Expr::And(items) => {
                let kids: Vec<ExprId> = items.iter().map(|&k| weaken(pool, hard, k, positive)).collect();
                pool.and(kids)
            }
            Expr::Or(items) => {
                let kids: Vec<ExprId> = items.iter().map(|&k| weaken(pool, hard, k, positive)).collect();
                pool.or(kids)
            }
            Expr::Not(a) => {
                let k = weaken(pool, hard, a, !positive);
                pool.not(k)
            }
            _ => pool.bool(positive),
        }
    }
    Some(weaken(pool, &hard, root, true))
}

/// The positions of the nondet stream `stream` that `root` reads (`None`: a read at a position
/// that is not a constant). A position the formula does not read need not be tied to the
/// path's value for it: the tie only constrains a stream cell nothing else mentions.
fn stream_reads(pool: &ExprPool, root: ExprId, stream: Option<ExprId>) -> Option<BTreeSet<u64>> {
    let mut out = BTreeSet::new();
    let Some(stream) = stream else { return Some(out) };
    let mut constant = true;
    crate::expr::visit(pool, root, |_, node| {
        if let Expr::Select(a, i) = node {
            if *a == stream {
                match pool.as_const(*i) {
                    Some(k) => {
                        out.insert(k);
                    }
                    None => constant = false,
                }
            }
        }
        constant
    });
    constant.then_some(out)
}

/// Nodes of the DAG under `root`.
fn dag_size(pool: &ExprPool, root: ExprId) -> usize {
    let mut n = 0;
    crate::expr::visit(pool, root, |_, _| {
        n += 1;
        true
    });
    n
}

impl Guide {
    /// Builds the guide from the APC of `program` (as `analysis::run` computes it). Returns
    /// `None` when the APC cannot serve (building timed out).
    pub fn new(program: &Program, structure: &Structure, apc: &Apc, pool: &ExprPool) -> Option<Guide> {
        if apc.timed_out {
            return None;
        }
        let mut names = Names::defaults(program);
        if let Some(s) = apc.inputs.nondet_stream.and_then(|s| symbol_name(pool, s)) {
            names.stream = s;
        }
        for (k, p) in program.function.params.iter().enumerate() {
            let sym = match &p.ty {
                crate::ir::Ty::Int(_) => apc.inputs.param_input(&p.name).and_then(|s| symbol_name(pool, s)),
                crate::ir::Ty::Ptr => apc.inputs.param_buffer_object(&p.name).and_then(|o| symbol_name(pool, o.initial)),
                _ => None,
            };
            if let Some(s) = sym {
                names.params[k] = s;
            }
        }
        let mut pool = pool.clone();
        let skeleton = scalar_skeleton(&mut pool, apc.formula);
        let formula = crate::apc::unfold::unfold_within(&mut pool, apc.formula, GUIDE_UNFOLD_K, false, MAX_UNFOLD_NODES).unwrap_or(apc.formula);
        let formula = forget_written_memory(&mut pool, formula);
        // With the backbone bound hit, the APC covers only the enumerated backbones: no longer a
        // necessary condition, so it must not prune (a pruned state might reach the target
        // along a backbone the bound left out).
        let apc_formula = (!structure.truncated).then_some(formula);
        let skeleton = skeleton.filter(|&s| !structure.truncated && pool.as_bool(s) != Some(true));
        // A full APC this large (nested loops over an array unfolded) costs seconds per query
        // and, measured on MatrIR, prunes nothing its skeleton does not: the skeleton alone.
        let apc_nodes = dag_size(&pool, formula);
        let apc_formula = if apc_nodes > MAX_FULL_APC_NODES && skeleton.is_some() {
            debug!(nodes = apc_nodes, "the full APC is too large to prune with; its skeleton prunes");
            None
        } else {
            apc_formula
        };
        let stream = apc.inputs.nondet_stream;
        let apc_stream_reads = stream_reads(&pool, formula, stream);
        let skeleton_stream_reads = skeleton.and_then(|s| stream_reads(&pool, s, stream));

        // Top-level loops: the loops entered on the top-level backbones.
        let top: BTreeSet<_> = structure.backbones.iter().flat_map(|b| b.entries.iter().map(|(_, l)| *l)).collect();
        let mut loops = vec![];
        for id in top {
            let l = structure.get(id);
            let Some((_, summary)) = apc.summaries.iter().find(|(lid, _)| *lid == id) else { continue };
            let backbones: Vec<(BTreeSet<BlockId>, Option<String>)> = l
                .backbones
                .iter()
                .enumerate()
                .map(|(i, bb)| {
                    let blocks = bb.nodes.iter().filter_map(|n| if let Node::Block(b) = n { Some(*b) } else { None }).collect();
                    let counter = summary.backbone_counters.get(i).copied().flatten().and_then(|c| symbol_name(&pool, c));
                    (blocks, counter)
                })
                .collect();
            let on_backbones = backbones.iter().flat_map(|(b, _)| b.iter().copied()).collect();
            loops.push(GuidedLoop { header: l.entry, blocks: l.blocks.clone(), backbones, on_backbones });
        }
        // A loop on a top-level backbone may sit inside another one's blocks: the backbone
        // passes it after the outer loop's summary, so its counters count only its last
        // execution (the one in the outer loop's final, partial iteration), not every execution
        // a path makes. The engine cannot tell those apart while running: no constraint.
        let all: Vec<(BlockId, BTreeSet<BlockId>)> = loops.iter().map(|l: &GuidedLoop| (l.header, l.blocks.clone())).collect();
        loops.retain(|l| !all.iter().any(|(h, bs)| *h != l.header && bs.contains(&l.header)));
        let quantified = apc_formula.is_some_and(|f| crate::expr::quantified(&pool, f));
        debug!(loops = loops.len(), quantified, apc_nodes, skeleton_nodes = skeleton.map_or(0, |s| dag_size(&pool, s)), "DSE guide built");
        Some(Guide { names, pool, apc: apc_formula, skeleton, apc_stream_reads, skeleton_stream_reads, loops })
    }

    /// The APC as one Z3 formula of the calling thread's context.
    pub fn apc_formula(&self) -> Option<Bool> {
        self.apc.map(|f| crate::solve::to_z3(&self.pool, f))
    }

    /// The APC's scalar skeleton as one Z3 formula of the calling thread's context.
    pub fn skeleton_formula(&self) -> Option<Bool> {
        self.skeleton.map(|f| crate::solve::to_z3(&self.pool, f))
    }

    pub fn initial_progress(&self) -> Vec<LoopProgress> {
        self.loops
            .iter()
            .map(|l| LoopProgress { counts: vec![0; l.backbones.len()], visited: vec![], inside: false, exited: false, unreliable: false })
            .collect()
    }

    /// Updates the iteration counts for the edge `from → to`.
    pub fn on_edge(&self, progress: &mut [LoopProgress], to: BlockId) {
        for (l, p) in self.loops.iter().zip(progress.iter_mut()) {
            if p.unreliable {
                continue;
            }
            if to == l.header {
                if p.inside {
                    // An iteration ended: which backbone did it follow?
                    let seen: BTreeSet<BlockId> = p.visited.iter().copied().filter(|b| l.on_backbones.contains(b)).collect();
                    let matching: Vec<usize> = l.backbones.iter().enumerate().filter(|(_, (bs, _))| *bs == seen).map(|(i, _)| i).collect();
                    match matching.as_slice() {
                        [i] => p.counts[*i] += 1,
                        _ => p.unreliable = true,
                    }
                } else if p.exited {
                    p.unreliable = true;
                }
                p.inside = true;
                p.visited.clear();
                p.visited.push(to);
            } else if p.inside {
                if l.blocks.contains(&to) {
                    // Back at a block of this iteration: a nested loop went round. Its earlier
                    // rounds are not on the outer backbone, only the acyclic path is.
                    if let Some(pos) = p.visited.iter().position(|b| *b == to) {
                        p.visited.truncate(pos);
                    }
                    p.visited.push(to);
                } else {
                    p.inside = false;
                    p.exited = true;
                    p.visited.clear();
                }
            }
        }
    }

    /// The counter constraints of a state: κ_b ≥ c_b inside a loop, κ_b = c_b after it.
    pub fn counter_constraints(&self, progress: &[LoopProgress]) -> Vec<Bool> {
        let mut out = vec![];
        for (l, p) in self.loops.iter().zip(progress) {
            if p.unreliable || !(p.inside || p.exited) {
                continue;
            }
            for ((_, name), &c) in l.backbones.iter().zip(&p.counts) {
                let Some(name) = name else { continue };
                let k = BV::new_const(name.as_str(), 64);
                let c = BV::from_u64(c, 64);
                out.push(if p.exited { k.eq(&c) } else { k.bvuge(&c) });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{Sort, SymbolKind};
    use crate::ir::IntPredicate;

    /// `x > 5 ∧ ∀τ. P(τ)`, `¬∀τ. P(τ) ∧ y < 3`, `¬(x > 5 ∧ ∀τ. P(τ))`: the quantified atom
    /// becomes `true` where it occurs positively and `false` under a negation (so `¬∀` becomes
    /// `true`), and the skeleton is implied by the formula.
    #[test]
    fn the_skeleton_drops_quantified_atoms_by_polarity() {
        let mut pool = ExprPool::new();
        let x = pool.symbol("x", Sort::Bv(32), SymbolKind::Input);
        let y = pool.symbol("y", Sort::Bv(32), SymbolKind::Input);
        let tau = pool.symbol("tau", Sort::Bv(32), SymbolKind::Tau(1));
        let five = pool.bv(32, 5);
        let three = pool.bv(32, 3);
        let body = pool.cmp(IntPredicate::Slt, tau, x);
        let q = pool.forall(vec![tau], body);
        let x5 = pool.cmp(IntPredicate::Sgt, x, five);
        let f1 = pool.and([x5, q]);
        assert_eq!(scalar_skeleton(&mut pool, f1), Some(x5));
        let nq = pool.not(q);
        let y3 = pool.cmp(IntPredicate::Slt, y, three);
        let f2 = pool.and([nq, y3]);
        assert_eq!(scalar_skeleton(&mut pool, f2), Some(y3));
        let f3 = pool.not(f1);
        let tt = pool.tt();
        assert_eq!(scalar_skeleton(&mut pool, f3), Some(tt), "¬(x > 5 ∧ ∀) is ¬(x > 5) ∨ ¬∀, and ¬∀ weakens to true");
        assert_eq!(scalar_skeleton(&mut pool, x5), None, "nothing to drop");
    }

    /// Constant stream positions are listed; a read at a symbolic position means "any".
    #[test]
    fn stream_reads_lists_constant_positions() {
        let mut pool = ExprPool::new();
        let stream = pool.symbol("nondet", Sort::Array { index: 64, elem: 64 }, SymbolKind::Input);
        let k0 = pool.bv(64, 0);
        let k3 = pool.bv(64, 3);
        let a = pool.select(stream, k0);
        let b = pool.select(stream, k3);
        let f = pool.cmp(IntPredicate::Ult, a, b);
        assert_eq!(stream_reads(&pool, f, Some(stream)), Some(BTreeSet::from([0, 3])));
        let i = pool.symbol("i", Sort::Bv(64), SymbolKind::Input);
        let c = pool.select(stream, i);
        let g = pool.cmp(IntPredicate::Ult, a, c);
        assert_eq!(stream_reads(&pool, g, Some(stream)), None);
    }
}
