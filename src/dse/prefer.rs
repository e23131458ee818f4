//! Which side of a two-way branch the search prefers: the frontier's `matched` key.
//!
//! Targets behind loops over input data usually need rare events, which the static distance
//! works against (the side that skips the event leaves the loop sooner):
//! - **Equalities**: a byte that matches the next character of a keyword, an element equal to
//!   the value that counts. The equal side is preferred.
//! - **Counting**: `if (A[j] > 10 && A[j] < 100) ++k;` inside a loop, and later, on the way to
//!   the target, `if (k > 15)`. The guard wants `k` large, so the side of each branch from which
//!   an increment of `k` can still be reached within the same iteration (and not from the other
//!   side) is preferred. Induction variables are left out: a guard in the header of a loop that
//!   contains the increment is the loop's own exit test, and wanting the loop left says nothing
//!   about which branch of its body to take.
//!
//! Only the order of the search depends on this; every side is still explored.

use crate::ir::{BinOp, BlockId, CastOp, Function, InstKind, IntPredicate, Operand, Terminator, ValueId};
use std::collections::{BTreeSet, HashMap, VecDeque};

/// Functions larger than this get only the equality preference (the counting analysis walks
/// the CFG once per guard and branch).
const MAX_BLOCKS: usize = 2_000;

/// The preferred successor of each branch block.
pub struct Preferences {
    /// Preferred side, or, for a condition that is a phi of the branch block (clang's `a && b`),
    /// per predecessor the side its incoming value prefers.
    by_block: HashMap<BlockId, Pref>,
}

enum Pref {
    Side(BlockId),
    ByPred(Vec<(BlockId, BlockId)>),
}

impl Preferences {
    /// `dist`: the static distance of each block to the nearest target (`u32::MAX`: none).
    pub fn new(f: &Function, dist: &[u32]) -> Self {
        let defs = Defs::new(f);
        let headers = loop_headers(f);
        let (good, bad) = if f.blocks.len() <= MAX_BLOCKS { counting_blocks(f, &defs, dist, &headers) } else { Default::default() };
        let mut by_block = HashMap::new();
        for b in &f.blocks {
            let Terminator::Branch { cond: Operand::Value(c), then_bb, else_bb } = &b.term else { continue };
            if then_bb == else_bb {
                continue;
            }
            // Equalities first (also through a phi condition).
            if let Some(i) = defs.inst(f, *c) {
                if let InstKind::Phi { incoming } = &i.kind {
                    if defs.block_of(*c) == Some(b.id) {
                        let per: Vec<(BlockId, BlockId)> = incoming
                            .iter()
                            .filter_map(|(p, o)| match o {
                                Operand::Value(v) => equal_side(f, &defs, *v, *then_bb, *else_bb).map(|s| (*p, s)),
                                _ => None,
                            })
                            .collect();
                        if !per.is_empty() {
                            by_block.insert(b.id, Pref::ByPred(per));
                            continue;
                        }
                    }
                }
            }
            if let Some(s) = equal_side(f, &defs, *c, *then_bb, *else_bb) {
                by_block.insert(b.id, Pref::Side(s));
                continue;
            }
            if good.is_empty() && bad.is_empty() {
                continue;
            }
            // A branch that decides whether a loop goes on is left alone: going round once more
            // can always reach another step, and preferring that would follow an unbounded
            // loop forever.
            if reaches(f, *then_bb, b.id) != reaches(f, *else_bb, b.id) {
                continue;
            }
            let toward = |set: &BTreeSet<BlockId>| {
                let t = reaches_within_iteration(f, *then_bb, b.id, &headers, set);
                let e = reaches_within_iteration(f, *else_bb, b.id, &headers, set);
                (t != e).then_some(if t { *then_bb } else { *else_bb })
            };
            let other = |s: BlockId| if s == *then_bb { *else_bb } else { *then_bb };
            if let Some(s) = toward(&good).or_else(|| toward(&bad).map(other)) {
                by_block.insert(b.id, Pref::Side(s));
            }
        }
        Preferences { by_block }
    }

    /// The side of `b`'s branch the search prefers, entered from `prev`.
    pub fn preferred(&self, b: BlockId, prev: Option<BlockId>) -> Option<BlockId> {
        match self.by_block.get(&b)? {
            Pref::Side(s) => Some(*s),
            Pref::ByPred(per) => {
                let p = prev?;
                per.iter().find(|(from, _)| *from == p).map(|(_, s)| *s)
            }
        }
    }
}

/// Where each SSA value is defined.
struct Defs {
    at: Vec<Option<(BlockId, usize)>>,
}

impl Defs {
    fn new(f: &Function) -> Self {
        let mut at = vec![None; f.value_types.len()];
        for b in &f.blocks {
            for (k, i) in b.insts.iter().enumerate() {
                if let Some(v) = i.result {
                    if let Some(slot) = at.get_mut(v.0 as usize) {
                        *slot = Some((b.id, k));
                    }
                }
            }
        }
        Defs { at }
    }
    fn inst<'f>(&self, f: &'f Function, v: ValueId) -> Option<&'f crate::ir::Inst> {
        let (b, k) = (*self.at.get(v.0 as usize)?)?;
        f.block(b).insts.get(k)
    }
    fn block_of(&self, v: ValueId) -> Option<BlockId> {
        self.at.get(v.0 as usize).copied().flatten().map(|(b, _)| b)
    }
}

/// The successor taken when the condition `c`, an integer equality, holds.
fn equal_side(f: &Function, defs: &Defs, c: ValueId, then_bb: BlockId, else_bb: BlockId) -> Option<BlockId> {
    match &defs.inst(f, c)?.kind {
        InstKind::ICmp { pred: IntPredicate::Eq, .. } => Some(then_bb),
        InstKind::ICmp { pred: IntPredicate::Ne, .. } => Some(else_bb),
        _ => None,
    }
}

/// Blocks of a CFG cycle's entry (targets of DFS back edges).
fn loop_headers(f: &Function) -> BTreeSet<BlockId> {
    let n = f.blocks.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on the stack, 2 done
    let mut headers = BTreeSet::new();
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    if n == 0 {
        return headers;
    }
    state[0] = 1;
    while let Some((b, k)) = stack.pop() {
        let succs = f.blocks[b].term.successors();
        if let Some(s) = succs.get(k) {
            stack.push((b, k + 1));
            let s = s.index();
            match state.get(s) {
                Some(0) => {
                    state[s] = 1;
                    stack.push((s, 0));
                }
                Some(1) => {
                    headers.insert(BlockId(s as u32));
                }
                _ => {}
            }
        } else {
            state[b] = 2;
        }
    }
    headers
}

/// Whether `from` reaches a block of `good` without passing `branch` or entering a loop
/// header (a header is checked but not passed: the next iteration is not this one).
fn reaches_within_iteration(f: &Function, from: BlockId, branch: BlockId, headers: &BTreeSet<BlockId>, good: &BTreeSet<BlockId>) -> bool {
    walk(f, from, |b| good.contains(&b), |b| b != branch && !headers.contains(&b))
}

/// Breadth-first from `from`: whether a block with `hit` is found, going on only from blocks
/// that `pass`.
fn walk(f: &Function, from: BlockId, hit: impl Fn(BlockId) -> bool, pass: impl Fn(BlockId) -> bool) -> bool {
    let mut seen = BTreeSet::from([from]);
    let mut work = VecDeque::from([from]);
    while let Some(b) = work.pop_front() {
        if hit(b) {
            return true;
        }
        if !pass(b) {
            continue;
        }
        for s in f.block(b).term.successors() {
            if seen.insert(s) {
                work.push_back(s);
            }
        }
    }
    false
}

/// Blocks that move a value toward what a guard on the way to the target wants (good), and
/// away from it (bad): the blocks of `v + c` (c > 0) that feed, through phis and casts, a value
/// some guard wants large are good for it (and bad for one that wants it small; `v - c` the
/// other way round). A guard is a comparison with a constant whose branch has a side strictly
/// closer to the target; that side's condition says what it wants.
fn counting_blocks(f: &Function, defs: &Defs, dist: &[u32], headers: &BTreeSet<BlockId>) -> (BTreeSet<BlockId>, BTreeSet<BlockId>) {
    let d = |b: BlockId| dist.get(b.index()).copied().unwrap_or(u32::MAX);
    let (mut good, mut bad) = (BTreeSet::new(), BTreeSet::new());
    for b in &f.blocks {
        let Terminator::Branch { cond: Operand::Value(c), then_bb, else_bb } = &b.term else { continue };
        let (dt, de) = (d(*then_bb), d(*else_bb));
        if dt == de {
            continue;
        }
        let Some(InstKind::ICmp { pred, lhs, rhs }) = defs.inst(f, *c).map(|i| &i.kind) else { continue };
        // The condition on the closer side, as `v PRED constant`.
        let pred = if dt < de { *pred } else { pred.negate() };
        let (v, pred) = match (lhs, rhs) {
            (Operand::Value(v), Operand::Int { .. }) => (*v, pred),
            (Operand::Int { .. }, Operand::Value(v)) => (*v, pred.swapped()),
            _ => continue,
        };
        let large = match pred {
            IntPredicate::Sgt | IntPredicate::Sge | IntPredicate::Ugt | IntPredicate::Uge => true,
            IntPredicate::Slt | IntPredicate::Sle | IntPredicate::Ult | IntPredicate::Ule => false,
            IntPredicate::Eq | IntPredicate::Ne => continue,
        };
        for (g, toward) in feeding_steps(f, defs, v, large) {
            // The guard is the exit test of a loop around the step: an induction variable.
            if b.id == g || (headers.contains(&b.id) && cycle_through(f, b.id, g)) {
                continue;
            }
            if toward {
                good.insert(g);
            } else {
                bad.insert(g);
            }
        }
    }
    good.retain(|g| !bad.contains(g));
    (good, bad)
}

/// The blocks of the steps `u ± c` that feed `v` (through phis and casts), each with whether it
/// moves `v` the way wanted (up when `large`).
fn feeding_steps(f: &Function, defs: &Defs, v: ValueId, large: bool) -> BTreeSet<(BlockId, bool)> {
    let mut out = BTreeSet::new();
    let mut seen = BTreeSet::from([v]);
    let mut work = vec![v];
    let positive = |width: u32, value: u64| -> Option<bool> {
        if value == 0 || width == 0 || width > 64 {
            return None;
        }
        Some(value >> (width - 1) & 1 == 0)
    };
    while let Some(u) = work.pop() {
        let Some(i) = defs.inst(f, u) else { continue };
        let mut next: Vec<ValueId> = vec![];
        match &i.kind {
            InstKind::Phi { incoming } => next.extend(incoming.iter().filter_map(|(_, o)| if let Operand::Value(x) = o { Some(*x) } else { None })),
            InstKind::Cast { op: CastOp::ZExt | CastOp::SExt | CastOp::Trunc, val: Operand::Value(x) } => next.push(*x),
            InstKind::Binary { op: op @ (BinOp::Add | BinOp::Sub), lhs, rhs } => {
                let (x, c) = match (lhs, rhs) {
                    (Operand::Value(x), Operand::Int { width, value }) => (*x, positive(*width, *value)),
                    (Operand::Int { width, value }, Operand::Value(x)) if *op == BinOp::Add => (*x, positive(*width, *value)),
                    _ => continue,
                };
                let Some(up) = c.map(|p| p == (*op == BinOp::Add)) else { continue };
                if let Some(b) = defs.block_of(u) {
                    out.insert((b, up == large));
                }
                next.push(x);
            }
            _ => {}
        }
        for x in next {
            if seen.insert(x) {
                work.push(x);
            }
        }
    }
    out
}

/// Whether `a` and `b` lie on one cycle (each reaches the other).
fn cycle_through(f: &Function, a: BlockId, b: BlockId) -> bool {
    reaches(f, a, b) && reaches(f, b, a)
}

fn reaches(f: &Function, from: BlockId, to: BlockId) -> bool {
    walk(f, from, |b| b == to, |_| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{self, TargetSpec};

    /// Loads `src` (a C function `f`) with `target` as the target block and returns its
    /// preferences and a block-by-label lookup.
    fn preferences(src: &str, target: &str) -> (crate::ir::Function, Preferences) {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("p.c");
        std::fs::write(&c, src).unwrap();
        let loaded = load::load(&c, "f", &TargetSpec::Block(target.into())).expect("load");
        let f = loaded.program.function.clone();
        let program = &loaded.program;
        let dist = super::super::distances(program);
        let p = Preferences::new(&f, &dist);
        (f, p)
    }

    fn block(f: &crate::ir::Function, label: &str) -> BlockId {
        f.blocks.iter().find(|b| b.label == label).unwrap_or_else(|| panic!("no block {label}")).id
    }

    fn branch_sides(f: &crate::ir::Function, b: BlockId) -> (BlockId, BlockId) {
        match &f.block(b).term {
            Terminator::Branch { then_bb, else_bb, .. } => (*then_bb, *else_bb),
            t => panic!("{} ends in {t:?}", f.label(b)),
        }
    }

    /// `if (A[j] > 10 && A[j] < 100) ++k;` under a later `if (k > 15)`: both tests prefer the
    /// side that leads to the increment; the loop's own exit test (`j < n`) prefers nothing.
    #[test]
    fn a_guard_that_wants_a_count_large_prefers_the_incrementing_side() {
        let src = "int f(int *A, int n) { int k = 0;\n\
                   for (int j = 0; j < n; ++j)\n\
                     if (A[j] > 10 && A[j] < 100)\n\
                       ++k;\n\
                   if (k > 15) goto hit;\n\
                   return 0;\n\
                   hit: return 1; }";
        let (f, p) = preferences(src, "hit");
        let body = block(&f, "for.body");
        let (then_bb, _) = branch_sides(&f, body);
        assert_eq!(p.preferred(body, None), Some(then_bb), "A[j] > 10: the side toward ++k");
        let second = block(&f, "land.lhs.true");
        let (then2, _) = branch_sides(&f, second);
        assert_eq!(p.preferred(second, None), Some(then2), "A[j] < 100: the side toward ++k");
        assert_eq!(p.preferred(block(&f, "for.cond"), None), None, "the loop's exit test");
    }

    /// The twin with `k < 3`: the guard wants the count small, so the non-incrementing sides.
    #[test]
    fn a_guard_that_wants_a_count_small_prefers_the_other_side() {
        let src = "int f(int *A, int n) { int k = 0;\n\
                   for (int j = 0; j < n; ++j)\n\
                     if (A[j] > 10)\n\
                       ++k;\n\
                   if (k < 3) goto hit;\n\
                   return 0;\n\
                   hit: return 1; }";
        let (f, p) = preferences(src, "hit");
        let body = block(&f, "for.body");
        let (_, else_bb) = branch_sides(&f, body);
        assert_eq!(p.preferred(body, None), Some(else_bb));
    }

    /// Equalities keep their equal side, including `==` and `!=`.
    #[test]
    fn equalities_prefer_the_equal_side() {
        let src = "int f(int *A, int n) { int h = 0;\n\
                   for (int j = 0; j < n; ++j)\n\
                     if (A[j] != 7) continue; else h = 1;\n\
                   if (h) goto hit;\n\
                   return 0;\n\
                   hit: return 1; }";
        let (f, p) = preferences(src, "hit");
        let body = block(&f, "for.body");
        let (_, else_bb) = branch_sides(&f, body);
        assert_eq!(p.preferred(body, None), Some(else_bb), "A[j] != 7: its else side is the equal one");
    }
}
