//! Loop navigation (Obdržálek & Trtík, *Efficient Loop Navigation for Symbolic Execution*) over
//! the DSE's exact states.
//!
//! * **Chain program form**: each natural loop's iteration paths are its chains (forward paths
//!   from the header back to it, nested loops taken as loop nodes).
//! * **Counters and closed forms**: a header variable that every chain moves by a constant
//!   (plus a fixed multiple of nested chains' counts) leaves the loop as
//!   `v + Σ δ_c·κ_c`, where κ_c counts the executions of chain c still to come ("remaining"
//!   counters: the past is already in the state's values, so no reset chains are needed).
//!   Anything else is ⋆.
//! * **Constraint systems**: at a loop header, the branch conditions of every forward path from
//!   the state to a target, with later loops replaced by their closed forms (fresh counters) and
//!   ⋆ conditions dropped, form a necessary condition on the counters: unsatisfiable together
//!   with the path condition means no run from this state reaches a target, and the state is
//!   dropped (soundly). A model is the navigation oracle: the chains with a positive counter are
//!   the ones to run next; none means leave the loop.
//! * **Constraint-driven symbolic execution**: states wait at loop headers; states there that
//!   agree on every live value and on memory are merged (their path conditions joined by `∨`),
//!   so runs that differ only in how often each chain ran become one state. Breadth-first by
//!   steps so that they meet, then fewest departures from the oracle.
//!
//! `Exhausted` only when every state was explored exactly; pruning by the constraint systems
//! does not spoil it (they are necessary conditions).

use super::exec::{Executor, Names, Step};
use super::solver::{PathSolver, Sat};
use super::state::{DseState, PathCondition, Val};
use super::value::IntV;
use super::{distances, least_lengths, reach, witness_of, DseConfig, DseEnd, Incomplete};
use crate::ir::{BlockId, CastOp, Function, InstKind, Operand, Program, Terminator, Ty, ValueId};
use crate::witness::Witness;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tracing::{debug, info};
use z3::ast::{Ast, Bool, BV};

/// Most paths one constraint system or one loop's chain enumeration may visit; beyond it the
/// loop has no closed forms, or the state no constraint system (both sound: nothing is pruned).
const MAX_PATHS: usize = 4_096;
/// Functions larger than this get no loop analysis (quadratic dominators).
const MAX_BLOCKS: usize = 3_000;
/// Milliseconds a constraint-system query may take; undecided keeps the state.
const ORACLE_MS: u32 = 200;
/// Models of one target-reaching path tried before it is dropped.
const MODELS_PER_PATH: u32 = 3;
/// Largest chain count the oracle's advice may use (its model, not its pruning).
const GUIDE_COUNT_BOUND: u64 = 1 << 16;
/// Departures charged to a state whose system needs counts beyond [`GUIDE_COUNT_BOUND`].
const DEMOTED: u32 = 1_000;

/// One natural loop.
struct Loop {
    header: BlockId,
    blocks: BTreeSet<BlockId>,
    /// Chains (block sets of each iteration path); `None` when too many to enumerate.
    chains: Option<Vec<BTreeSet<BlockId>>>,
    /// Closed form per header phi (absent: ⋆).
    forms: BTreeMap<ValueId, Form>,
    /// The header's test reads no memory (a count bound, not a scan).
    scalar_exit: bool,
}

/// How a header variable moves over the loop's remaining iterations.
#[derive(Clone, Debug)]
enum Form {
    /// No chain changes it.
    Same,
    /// `v + Σ per_chain[c]·κ_c + Σ nested[(loop, c)]·κ_(loop, c)`.
    Add { per_chain: Vec<u64>, nested: BTreeMap<(usize, usize), u64> },
}

/// The chain program form of a function: its loops, innermost first for each header.
pub struct ChainForm {
    loops: Vec<Loop>,
    /// Innermost loop of each block.
    innermost: Vec<Option<usize>>,
    /// Per header block: its loop.
    by_header: HashMap<BlockId, usize>,
    /// `dom[b]`: the blocks dominating b.
    dom: Vec<BTreeSet<BlockId>>,
    /// The CFG is reducible (else no constraint systems: forward paths could cycle).
    reducible: bool,
    /// Target and pseudo-target blocks.
    goals: BTreeSet<BlockId>,
    /// Blocks from which no store and no call can be reached: memory stays as it is.
    clean: Vec<bool>,
}

fn preds_of(f: &Function) -> Vec<Vec<BlockId>> {
    let mut preds = vec![vec![]; f.blocks.len()];
    for b in &f.blocks {
        for s in b.term.successors() {
            if s.index() < preds.len() && !preds[s.index()].contains(&b.id) {
                preds[s.index()].push(b.id);
            }
        }
    }
    preds
}

impl ChainForm {
    pub fn new(program: &Program) -> Self {
        let f = &program.function;
        let n = f.blocks.len();
        let goals = f.blocks.iter().filter(|b| b.target.is_some()).map(|b| b.id).collect();
        let mut cf = ChainForm { loops: vec![], innermost: vec![None; n], by_header: HashMap::new(), dom: vec![], reducible: false, goals, clean: vec![false; n] };
        if n == 0 || n > MAX_BLOCKS {
            return cf;
        }
        let preds = preds_of(f);
        // Reachable blocks and dominators (iterative).
        let mut reach = vec![false; n];
        let mut stack = vec![f.entry()];
        while let Some(b) = stack.pop() {
            if std::mem::replace(&mut reach[b.index()], true) {
                continue;
            }
            stack.extend(f.block(b).term.successors().into_iter().filter(|s| s.index() < n));
        }
        let all: BTreeSet<BlockId> = (0..n as u32).map(BlockId).filter(|b| reach[b.index()]).collect();
        let mut dom: Vec<BTreeSet<BlockId>> = (0..n).map(|i| if i == 0 { BTreeSet::from([BlockId(0)]) } else { all.clone() }).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for b in all.iter().skip(1) {
                let mut d: Option<BTreeSet<BlockId>> = None;
                for p in preds[b.index()].iter().filter(|p| reach[p.index()]) {
                    d = Some(match d {
                        None => dom[p.index()].clone(),
                        Some(d) => d.intersection(&dom[p.index()]).copied().collect(),
                    });
                }
                let mut d = d.unwrap_or_default();
                d.insert(*b);
                if d != dom[b.index()] {
                    dom[b.index()] = d;
                    changed = true;
                }
            }
        }
        // Back edges, natural loops, and whether every retreating edge is a back edge.
        let mut bodies: BTreeMap<BlockId, BTreeSet<BlockId>> = BTreeMap::new();
        for &b in &all {
            for s in f.block(b).term.successors() {
                if s.index() < n && dom[b.index()].contains(&s) {
                    let body = bodies.entry(s).or_insert_with(|| BTreeSet::from([s]));
                    let mut work = vec![b];
                    while let Some(x) = work.pop() {
                        if body.insert(x) {
                            work.extend(preds[x.index()].iter().copied().filter(|p| reach[p.index()]));
                        }
                    }
                }
            }
        }
        cf.reducible = is_reducible(f, &all, &dom);
        let writes = |b: &crate::ir::Block| b.insts.iter().any(|x| matches!(x.kind, InstKind::Store { .. } | InstKind::Call { .. } | InstKind::Unknown { .. }));
        let mut dirty = vec![false; n];
        let mut work: Vec<BlockId> = f.blocks.iter().filter(|b| writes(b)).map(|b| b.id).collect();
        while let Some(b) = work.pop() {
            if std::mem::replace(&mut dirty[b.index()], true) {
                continue;
            }
            work.extend(preds[b.index()].iter().copied());
        }
        cf.clean = dirty.iter().map(|d| !d).collect();
        cf.dom = dom;
        // Innermost first: smaller bodies first.
        let mut list: Vec<(BlockId, BTreeSet<BlockId>)> = bodies.into_iter().collect();
        list.sort_by_key(|(_, b)| b.len());
        for (header, blocks) in list {
            let i = cf.loops.len();
            for b in &blocks {
                if cf.innermost[b.index()].is_none() {
                    cf.innermost[b.index()] = Some(i);
                }
            }
            cf.by_header.insert(header, i);
            let scalar_exit = !f.block(header).insts.iter().any(|x| matches!(x.kind, InstKind::Load { .. } | InstKind::Call { .. }));
            cf.loops.push(Loop { header, blocks, chains: None, forms: BTreeMap::new(), scalar_exit });
        }
        if cf.reducible {
            for i in 0..cf.loops.len() {
                cf.close(program, i);
            }
        }
        cf
    }

    /// Loops nested in loop `i` (not `i` itself).
    fn nested(&self, i: usize) -> Vec<usize> {
        (0..self.loops.len()).filter(|&j| j != i && self.loops[i].blocks.contains(&self.loops[j].header)).collect()
    }

    /// Enumerates loop `i`'s chains and computes its closed forms (nested loops are done).
    fn close(&mut self, program: &Program, i: usize) {
        let f = &program.function;
        let header = self.loops[i].header;
        let phis: Vec<(ValueId, u32)> = f
            .block(header)
            .insts
            .iter()
            .filter(|x| matches!(x.kind, InstKind::Phi { .. }))
            .filter_map(|x| Some((x.result?, x.ty.int_width()?)))
            .collect();
        let alpha: Vec<BV> = phis.iter().map(|(v, w)| BV::new_const(format!("nav.alpha{}", v.0), *w)).collect();
        let mut env = Env::default();
        for ((v, w), a) in phis.iter().zip(&alpha) {
            env.vals.insert(*v, IntV::sym(*w, a.clone()));
        }
        let mut walk = Walk { cf: self, f, objects: None, budget: MAX_PATHS, mode: Mode::Chains(i), allowed_back: BTreeSet::new(), found: vec![], counters: vec![], goal_conds: vec![] };
        // Start past the header's phis (they are α).
        walk.body(header, env, vec![], vec![header]);
        if walk.budget == 0 {
            return;
        }
        let found = std::mem::take(&mut walk.found);
        let counters = std::mem::take(&mut walk.counters);
        // Per chain: the latch's incoming value of each phi.
        let mut chains = vec![];
        let mut finals: Vec<Vec<Option<IntV>>> = vec![];
        for (env, blocks) in found {
            chains.push(blocks.iter().copied().collect::<BTreeSet<_>>());
            finals.push(phis.iter().map(|(v, _)| env.vals.get(v).cloned()).collect());
        }
        let solver = z3::Solver::new();
        let mut forms = BTreeMap::new();
        'phi: for (k, (v, w)) in phis.iter().enumerate() {
            let mut per_chain = vec![];
            let mut nested: BTreeMap<(usize, usize), u64> = BTreeMap::new();
            for fin in &finals {
                let Some(r) = &fin[k] else { continue 'phi };
                let d = r.term().bvsub(&alpha[k]).simplify();
                // d must be c + Σ a_x·κ_x, with no α: read c and each a_x off, then prove it.
                let zero_all: Vec<(BV, BV)> = alpha.iter().map(|a| (a.clone(), BV::from_u64(0, a.get_size()))).chain(counters.iter().map(|(_, t)| (t.clone(), BV::from_u64(0, 64)))).collect();
                let at = |subs: &[(BV, BV)]| -> Option<u64> {
                    let pairs: Vec<(&BV, &BV)> = subs.iter().map(|(a, b)| (a, b)).collect();
                    d.substitute(&pairs).simplify().as_u64()
                };
                let Some(c) = at(&zero_all) else { continue 'phi };
                let mut lin = BV::from_u64(c, *w);
                let mut coeffs = vec![];
                for (key, t) in &counters {
                    let mut subs = zero_all.clone();
                    for s in subs.iter_mut() {
                        if &s.0 == t {
                            s.1 = BV::from_u64(1, 64);
                        }
                    }
                    let Some(a) = at(&subs) else { continue 'phi };
                    let a = a.wrapping_sub(c) & super::value::mask(*w, u64::MAX);
                    if a != 0 {
                        lin = lin.bvadd(&BV::from_u64(a, *w).bvmul(&fit(t, *w)));
                        coeffs.push((*key, a));
                    }
                }
                solver.push();
                solver.assert(d.eq(&lin).not());
                let proved = solver.check() == z3::SatResult::Unsat;
                solver.pop(1);
                if !proved {
                    continue 'phi;
                }
                per_chain.push(c);
                for (key, a) in coeffs {
                    match nested.get(&key) {
                        Some(&b) if b != a => continue 'phi,
                        _ => {
                            nested.insert(key, a);
                        }
                    }
                }
            }
            let form = if per_chain.iter().all(|&c| c == 0) && nested.is_empty() { Form::Same } else { Form::Add { per_chain, nested } };
            forms.insert(*v, form);
        }
        debug!(header = %f.label(header), chains = chains.len(), forms = ?forms, "nav: loop closed");
        self.loops[i].chains = Some(chains);
        self.loops[i].forms = forms;
    }
}

/// Every retreating edge of a depth-first search is a back edge (its target dominates it).
fn is_reducible(f: &Function, all: &BTreeSet<BlockId>, dom: &[BTreeSet<BlockId>]) -> bool {
    let n = f.blocks.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on stack, 2 done
    let mut stack: Vec<(BlockId, usize)> = vec![(f.entry(), 0)];
    state[0] = 1;
    while let Some((b, k)) = stack.pop() {
        let succs = f.block(b).term.successors();
        if k < succs.len() {
            stack.push((b, k + 1));
            let s = succs[k];
            if s.index() >= n || !all.contains(&s) {
                continue;
            }
            match state[s.index()] {
                0 => {
                    state[s.index()] = 1;
                    stack.push((s, 0));
                }
                1 if !dom[b.index()].contains(&s) => return false,
                _ => {}
            }
        } else {
            state[b.index()] = 2;
        }
    }
    true
}

/// `t` (64 bits) at width `w`.
fn fit(t: &BV, w: u32) -> BV {
    match w.cmp(&64) {
        std::cmp::Ordering::Less => t.extract(w - 1, 0),
        std::cmp::Ordering::Equal => t.clone(),
        std::cmp::Ordering::Greater => t.zero_ext(w - 64),
    }
}

/// Values known along a path (absent: ⋆).
#[derive(Clone, Default)]
struct Env {
    vals: HashMap<ValueId, IntV>,
    /// Pointers: object and byte offset.
    ptrs: HashMap<ValueId, (u32, IntV)>,
}

enum Mode {
    /// Chains of loop `i`: paths back to its header.
    Chains(usize),
    /// Paths to a goal block.
    Goals,
}

/// A depth-first walk over forward paths (back edges only into `allowed_back`, once each).
struct Walk<'a> {
    cf: &'a ChainForm,
    f: &'a Function,
    /// The state's memory, when no store or call can run after the state's block
    /// (`ChainForm::clean`): then every later load reads it as it is now.
    objects: Option<&'a [Rc<super::state::Obj>]>,
    budget: usize,
    mode: Mode,
    allowed_back: BTreeSet<BlockId>,
    /// Chains: the latch's environment (phis of the header from it) and the blocks; goals: the
    /// path's conditions (in `Env`-less form, see `conds`).
    found: Vec<(Env, Vec<BlockId>)>,
    /// Counters made: (loop, chain) and their symbol (64-bit).
    counters: Vec<((usize, usize), BV)>,
    /// Goals: the branch conditions of each path found.
    goal_conds: Vec<Vec<Bool>>,
}

thread_local! {
    static NEXT_COUNTER: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn fresh_byte() -> BV {
    let k = NEXT_COUNTER.with(|c| {
        let k = c.get();
        c.set(k + 1);
        k
    });
    BV::new_const(format!("nav.byte{k}"), 8)
}

fn fresh_counter() -> BV {
    let k = NEXT_COUNTER.with(|c| {
        let k = c.get();
        c.set(k + 1);
        k
    });
    BV::new_const(format!("nav.k{k}"), 64)
}

impl Walk<'_> {
    fn operand(&self, env: &Env, op: &Operand) -> Option<IntV> {
        match op {
            Operand::Int { width, value } => Some(IntV::c(*width, *value)),
            Operand::Value(v) => env.vals.get(v).cloned(),
            _ => None,
        }
    }

    /// Applies loop `i`'s closed form to `env` (its header phis already hold their entry values):
    /// fresh counters for it and its nested loops; every other value the loop defines is ⋆.
    fn apply(&mut self, i: usize, env: &mut Env, phis: &[ValueId]) -> Vec<BV> {
        let lp = &self.cf.loops[i];
        let mut mine = vec![];
        let mut nested: HashMap<(usize, usize), BV> = HashMap::new();
        for j in self.cf.nested(i) {
            for c in 0..self.cf.loops[j].chains.as_ref().map_or(0, |c| c.len()) {
                let t = fresh_counter();
                self.counters.push(((j, c), t.clone()));
                nested.insert((j, c), t);
            }
        }
        for c in 0..lp.chains.as_ref().map_or(0, |c| c.len()) {
            let t = fresh_counter();
            self.counters.push(((i, c), t.clone()));
            mine.push(t);
        }
        for b in &lp.blocks {
            for x in &self.f.block(*b).insts {
                if let Some(r) = x.result {
                    if !phis.contains(&r) || *b != lp.header {
                        env.vals.remove(&r);
                    }
                    env.ptrs.remove(&r);
                }
            }
        }
        for &p in phis {
            let now = env.vals.remove(&p);
            let (Some(now), Some(form)) = (now, lp.forms.get(&p)) else { continue };
            let w = now.width();
            let v = match form {
                Form::Same => now,
                Form::Add { per_chain, nested: inner } => {
                    let mut t = now.term();
                    for (c, k) in per_chain.iter().enumerate() {
                        if *k != 0 {
                            t = t.bvadd(&BV::from_u64(*k, w).bvmul(&fit(&mine[c], w)));
                        }
                    }
                    let mut ok = true;
                    for (key, a) in inner {
                        match nested.get(key) {
                            Some(n) => t = t.bvadd(&BV::from_u64(*a, w).bvmul(&fit(n, w))),
                            None => ok = false,
                        }
                    }
                    if !ok {
                        continue;
                    }
                    IntV::sym(w, t.simplify())
                }
            };
            env.vals.insert(p, v);
        }
        mine
    }

    /// Enters `b` from `prev` (phis from it), applying a closed form at a loop header.
    fn enter(&mut self, b: BlockId, prev: BlockId, mut env: Env, conds: Vec<Bool>, path: Vec<BlockId>) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        let back = self.cf.dom.get(prev.index()).is_some_and(|d| d.contains(&b));
        if back {
            match self.mode {
                Mode::Chains(i) if self.cf.loops[i].header == b => {
                    // The phis' incoming values from the latch.
                    let mut out = Env::default();
                    for x in &self.f.block(b).insts {
                        if let (InstKind::Phi { incoming }, Some(r)) = (&x.kind, x.result) {
                            if let Some(v) = incoming.iter().find(|(p, _)| *p == prev).and_then(|(_, o)| self.operand(&env, o)) {
                                out.vals.insert(r, v);
                            }
                        }
                    }
                    self.found.push((out, path));
                    return;
                }
                Mode::Goals if self.allowed_back.remove(&b) => {}
                _ => return,
            }
        }
        let mut phis = vec![];
        let mut vals = vec![];
        for x in &self.f.block(b).insts {
            if let (InstKind::Phi { incoming }, Some(r)) = (&x.kind, x.result) {
                phis.push(r);
                vals.push((r, incoming.iter().find(|(p, _)| *p == prev).and_then(|(_, o)| self.operand(&env, o))));
            }
        }
        for (r, v) in vals {
            match v {
                Some(v) => env.vals.insert(r, v),
                None => env.vals.remove(&r),
            };
        }
        if let Some(&i) = self.cf.by_header.get(&b) {
            let entering_own = matches!(self.mode, Mode::Chains(j) if j == i);
            if !entering_own {
                self.apply(i, &mut env, &phis);
            }
        }
        let mut path = path;
        path.push(b);
        self.body(b, env, conds, path);
    }

    /// Executes `b`'s non-phi instructions and follows its successors.
    fn body(&mut self, b: BlockId, mut env: Env, conds: Vec<Bool>, path: Vec<BlockId>) {
        let block = self.f.block(b);
        if matches!(self.mode, Mode::Goals) && self.cf.goals.contains(&b) {
            self.goal_conds.push(conds);
            return;
        }
        for x in &block.insts {
            let Some(r) = x.result else { continue };
            if matches!(x.kind, InstKind::Phi { .. }) {
                continue;
            }
            if let InstKind::PtrOffset { base, const_offset, terms } = &x.kind {
                let p = self.pointer(&env, base).and_then(|(obj, off)| {
                    let mut t = off.zext(64).term().bvadd(&BV::from_u64(*const_offset as u64, 64));
                    for (o, scale) in terms {
                        let v = self.operand(&env, o)?;
                        t = t.bvadd(&v.sext(64).term().bvmul(&BV::from_u64(*scale as u64, 64)));
                    }
                    Some((obj, IntV::sym(64, t.simplify())))
                });
                match p {
                    Some(p) => env.ptrs.insert(r, p),
                    None => env.ptrs.remove(&r),
                };
                env.vals.remove(&r);
                continue;
            }
            env.ptrs.remove(&r);
            let v = match &x.kind {
                InstKind::Load { ptr } => self.load(&env, ptr, &x.ty),
                other => self.eval(&env, other, &x.ty),
            };
            match v {
                Some(v) => env.vals.insert(r, v),
                None => env.vals.remove(&r),
            };
        }
        let mut succ: Vec<(BlockId, Option<Bool>)> = vec![];
        match &block.term {
            Terminator::Jump(s) => succ.push((*s, None)),
            Terminator::Branch { cond, then_bb, else_bb } => {
                let c = self.operand(&env, cond);
                match c.as_ref().and_then(|c| c.as_const()) {
                    Some(x) => succ.push((if x != 0 { *then_bb } else { *else_bb }, None)),
                    None => {
                        let t = c.map(|c| c.truthy());
                        succ.push((*then_bb, t.clone()));
                        if else_bb != then_bb {
                            succ.push((*else_bb, t.map(|t| t.not())));
                        }
                    }
                }
            }
            Terminator::Switch { value, default, cases } => {
                let v = self.operand(&env, value);
                let mut all: Vec<BlockId> = vec![*default];
                all.extend(cases.iter().map(|(_, s)| *s));
                all.dedup();
                for s in all {
                    let c = v.as_ref().map(|v| {
                        let t = v.term();
                        let w = v.width();
                        let hits: Vec<Bool> = cases.iter().filter(|(_, x)| *x == s).map(|(k, _)| t.eq(&BV::from_u64(*k, w))).collect();
                        let mut any = Bool::or(&hits);
                        if s == *default {
                            let none: Vec<Bool> = cases.iter().map(|(k, _)| t.eq(&BV::from_u64(*k, w)).not()).collect();
                            any = Bool::or(&[any, Bool::and(&none)]);
                        }
                        any
                    });
                    succ.push((s, c));
                }
            }
            Terminator::Unknown { succs, .. } => succ.extend(succs.iter().map(|s| (*s, None))),
            Terminator::Return(_) | Terminator::Unreachable => {}
        }
        let n = self.f.blocks.len();
        for (s, c) in succ {
            if s.index() >= n {
                continue;
            }
            if let Mode::Chains(i) = self.mode {
                if !self.cf.loops[i].blocks.contains(&s) {
                    continue;
                }
            }
            let mut conds = conds.clone();
            if let Some(c) = c {
                if c.as_bool() == Some(false) {
                    continue;
                }
                conds.push(c);
            }
            self.enter(s, b, env.clone(), conds, path.clone());
        }
    }

    fn eval(&self, env: &Env, kind: &InstKind, ty: &Ty) -> Option<IntV> {
        match kind {
            InstKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.operand(env, lhs)?, self.operand(env, rhs)?);
                // A dropped assumption (undefined behaviour excluded) only weakens the condition.
                IntV::binary(*op, &a, &b).ok().map(|o| o.value)
            }
            InstKind::ICmp { pred, lhs, rhs } => Some(IntV::cmp(*pred, &self.operand(env, lhs)?, &self.operand(env, rhs)?)),
            InstKind::Select { cond, then_val, else_val } => Some(IntV::ite(&self.operand(env, cond)?, &self.operand(env, then_val)?, &self.operand(env, else_val)?)),
            InstKind::Cast { op, val } => {
                let v = self.operand(env, val)?;
                let w = ty.int_width()?;
                match op {
                    CastOp::ZExt => Some(v.zext(w)),
                    CastOp::SExt => Some(v.sext(w)),
                    CastOp::Trunc => Some(v.trunc(w)),
                    CastOp::BitCast if v.width() == w => Some(v),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

impl Walk<'_> {
    /// The phis of `b` from `prev` set in `env`; their values.
    fn phis_from(&self, b: BlockId, prev: BlockId, env: &mut Env) -> Vec<ValueId> {
        let mut phis = vec![];
        let mut vals = vec![];
        for x in &self.f.block(b).insts {
            if let (InstKind::Phi { incoming }, Some(r)) = (&x.kind, x.result) {
                phis.push(r);
                vals.push((r, incoming.iter().find(|(p, _)| *p == prev).and_then(|(_, o)| self.operand(env, o))));
            }
        }
        let ptrs: Vec<(ValueId, Option<(u32, IntV)>)> = self
            .f
            .block(b)
            .insts
            .iter()
            .filter_map(|x| match (&x.kind, x.result) {
                (InstKind::Phi { incoming }, Some(r)) => Some((r, incoming.iter().find(|(p, _)| *p == prev).and_then(|(_, o)| self.pointer(env, o)))),
                _ => None,
            })
            .collect();
        for (r, v) in vals {
            match v {
                Some(v) => env.vals.insert(r, v),
                None => env.vals.remove(&r),
            };
        }
        for (r, p) in ptrs {
            match p {
                Some(p) => env.ptrs.insert(r, p),
                None => env.ptrs.remove(&r),
            };
        }
        phis
    }

    fn pointer(&self, env: &Env, op: &Operand) -> Option<(u32, IntV)> {
        match op {
            Operand::Value(v) => env.ptrs.get(v).cloned(),
            _ => None,
        }
    }

    /// A load from the state's memory, when nothing can write before it.
    fn load(&self, env: &Env, ptr: &Operand, ty: &Ty) -> Option<IntV> {
        let objects = self.objects?;
        let w = ty.int_width().filter(|w| *w % 8 == 0 && *w <= 64)?;
        let n = (w / 8) as u64;
        let (obj, off) = self.pointer(env, ptr)?;
        let o = objects.get(obj as usize)?;
        if !o.alive {
            return None;
        }
        let size = o.bytes.len() as u64;
        let byte_terms: Vec<BV> = o
            .bytes
            .iter()
            .map(|x| match x {
                super::state::Byte::Int(v) => Some(v.term()),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let mut parts = vec![];
        match off.as_const() {
            Some(c) => {
                if c.checked_add(n)? > size {
                    return None;
                }
                for k in 0..n {
                    parts.push(byte_terms[(c + k) as usize].clone());
                }
            }
            None => {
                if size > 64 || size < n {
                    return None;
                }
                // Out of bounds, the byte is unknown: a fresh symbol, so nothing is claimed.
                let o64 = off.zext(64).term();
                for k in 0..n {
                    let at = o64.bvadd(&BV::from_u64(k, 64));
                    let mut v = fresh_byte();
                    for (i, t) in byte_terms.iter().enumerate().rev() {
                        v = at.eq(&BV::from_u64(i as u64, 64)).ite(t, &v);
                    }
                    parts.push(v);
                }
            }
        }
        let mut t = parts[0].clone();
        for p in &parts[1..] {
            t = p.concat(&t);
        }
        Some(IntV::sym(w, t.simplify()))
    }
}

impl ChainForm {
    /// The constraint system of a state at the header of loop `i` (phis not yet taken): a
    /// necessary condition for any run from it to reach a goal, and the counters of `i`'s
    /// chains (remaining executions). `None`: no system (too many paths, irreducible flow).
    fn system(&self, f: &Function, st: &DseState, i: usize) -> Option<(Bool, Vec<BV>, Vec<BV>)> {
        if !self.reducible || self.loops[i].chains.is_none() {
            return None;
        }
        let h = st.block;
        let prev = st.prev?;
        let mut env = Env::default();
        for (k, r) in st.regs.iter().enumerate() {
            if let Some(Val::Int(v)) = r {
                env.vals.insert(ValueId(k as u32), v.clone());
            }
        }
        let allowed_back = self.loops.iter().enumerate().filter(|(j, l)| *j != i && l.blocks.contains(&h)).map(|(_, l)| l.header).collect();
        for (k, r) in st.regs.iter().enumerate() {
            if let Some(Val::Ptr { obj, off }) = r {
                env.ptrs.insert(ValueId(k as u32), (*obj, off.clone()));
            }
        }
        let fixed = self.clean.get(h.index()).copied().unwrap_or(false);
        let mut walk = Walk { cf: self, f, objects: fixed.then_some(&st.objects[..]), budget: MAX_PATHS, mode: Mode::Goals, allowed_back, found: vec![], counters: vec![], goal_conds: vec![] };
        let phis = walk.phis_from(h, prev, &mut env);
        let mine = walk.apply(i, &mut env, &phis);
        walk.body(h, env, vec![], vec![h]);
        if walk.budget == 0 {
            return None;
        }
        let paths: Vec<Bool> = walk.goal_conds.iter().map(|c| Bool::and(c)).collect();
        let all = walk.counters.iter().map(|(_, t)| t.clone()).collect();
        Some((Bool::or(&paths), mine, all))
    }

    /// Values dead at header `h` on arrival: those defined in blocks `h` dominates (`h`'s own
    /// instructions run again first; SSA uses are dominated by their definitions).
    fn dead_at(&self, f: &Function, h: BlockId) -> BTreeSet<ValueId> {
        let mut out = BTreeSet::new();
        for b in &f.blocks {
            if self.dom.get(b.id.index()).is_some_and(|d| d.contains(&h)) {
                out.extend(b.insts.iter().filter_map(|x| x.result));
            }
        }
        out
    }
}

/// What the navigation oracle said at the last loop header of a state.
struct Pref {
    lp: usize,
    /// Blocks of the chains advised next.
    blocks: BTreeSet<BlockId>,
    /// Leaving the loop now is advised.
    exit: bool,
}

struct Slot {
    st: DseState,
    key: Option<String>,
    deviations: u32,
    pref: Option<Rc<Pref>>,
}

/// Statistics of one navigation (after the paper's Table 3).
#[derive(Default, Clone, Debug, serde::Serialize)]
pub struct NavStats {
    pub loops: u64,
    pub chains: u64,
    pub states_explored: u64,
    pub states_merged: u64,
    pub states_pruned_by_systems: u64,
    pub oracle_calls: u64,
    pub solver_calls: u64,
    pub models_tried: u64,
}

/// The frontier: fewest departures from the oracle's advice first, then fewest steps (so that
/// runs differing only in the order of their chains meet at a header and merge), newest first.
struct Frontier {
    heap: BinaryHeap<(Reverse<u32>, Reverse<u64>, u64, usize)>,
    slots: Vec<Option<Slot>>,
    waiting: HashMap<String, usize>,
    seq: u64,
    order: u64,
}

impl Frontier {
    fn push(&mut self, solver: &mut PathSolver, slot: Slot, stats: &mut NavStats) {
        if let Some(k) = &slot.key {
            if let Some(&j) = self.waiting.get(k) {
                if let Some(other) = self.slots[j].as_mut() {
                    other.st.pc = join(solver, &other.st.pc, &slot.st.pc);
                    other.st.unchecked = other.st.unchecked && slot.st.unchecked;
                    other.deviations = other.deviations.min(slot.deviations);
                    other.st.matched = other.st.matched.max(slot.st.matched);
                    stats.states_merged += 1;
                    return;
                }
            }
        }
        self.seq += 1;
        let second = match self.order {
            // Depth-first, preferred sides first (see `prefer`).
            1 => u64::MAX - slot.st.matched as u64,
            _ => slot.st.steps,
        };
        let pri = if self.order == 3 {
            (Reverse(slot.deviations), Reverse(u64::MAX - ((slot.st.matched as u64) << 32) + slot.st.steps.min(u32::MAX as u64)), self.seq, self.slots.len())
        } else if self.order == 2 { (Reverse(slot.st.steps as u32), Reverse(slot.deviations as u64), self.seq, self.slots.len()) } else { (Reverse(slot.deviations), Reverse(second), self.seq, self.slots.len()) };
        if let Some(k) = &slot.key {
            self.waiting.insert(k.clone(), self.slots.len());
        }
        self.slots.push(Some(slot));
        self.heap.push(pri);
    }
    fn pop(&mut self) -> Option<Slot> {
        let (_, _, _, i) = self.heap.pop()?;
        let slot = self.slots[i].take()?;
        if let Some(k) = &slot.key {
            self.waiting.remove(k);
        }
        Some(slot)
    }
}

/// `a ∨ b` as one path condition: their common prefix, then the disjunction of the rest.
fn join(solver: &mut PathSolver, a: &PathCondition, b: &PathCondition) -> PathCondition {
    let mut in_a = std::collections::HashSet::new();
    let mut n = a.head.clone();
    while let Some(node) = n {
        in_a.insert(Rc::as_ptr(&node));
        n = node.parent.clone();
    }
    let mut common = b.head.clone();
    let mut rest_b = vec![];
    while let Some(node) = common.clone() {
        if in_a.contains(&Rc::as_ptr(&node)) {
            break;
        }
        rest_b.push(node.cond.clone());
        common = node.parent.clone();
    }
    let stop = common.as_ref().map(Rc::as_ptr);
    let mut rest_a = vec![];
    let mut n = a.head.clone();
    while let Some(node) = n {
        if Some(Rc::as_ptr(&node)) == stop {
            break;
        }
        rest_a.push(node.cond.clone());
        n = node.parent.clone();
    }
    let base = PathCondition { head: common };
    solver.extend(&base, &Bool::or(&[Bool::and(&rest_a), Bool::and(&rest_b)]))
}

/// Runs constraint-driven symbolic execution of `program` towards its targets.
pub fn navigate(program: &Program, limits: &DseConfig, cancel: &AtomicBool, replay: &(dyn Fn(&Witness) -> bool + Sync)) -> (DseEnd, NavStats) {
    if cancel.load(Ordering::Relaxed) {
        return (DseEnd::GaveUp("cancelled".into()), NavStats::default());
    }
    let ctx = super::ContextHandle(z3::Context::thread_local().get_z3_context());
    let done = AtomicBool::new(false);
    let clock = std::sync::Arc::new(super::solver::QueryClock::new());
    std::thread::scope(|scope| {
        let (ctx, done, watched) = (&ctx, &done, clock.clone());
        scope.spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let stop = Instant::now() >= limits.deadline || cancel.load(Ordering::Relaxed);
                if watched.armed() && (stop || watched.overdue()) {
                    // SAFETY: see `ContextHandle`.
                    unsafe { z3_sys::Z3_interrupt(ctx.0) };
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        let out = navigate_inner(program, limits, cancel, replay, clock);
        done.store(true, Ordering::SeqCst);
        out
    })
}

fn navigate_inner(
    program: &Program,
    limits: &DseConfig,
    cancel: &AtomicBool,
    replay: &(dyn Fn(&Witness) -> bool + Sync),
    clock: std::sync::Arc<super::solver::QueryClock>,
) -> (DseEnd, NavStats) {
    let f = &program.function;
    let mut stats = NavStats::default();
    let names = Names::defaults(program);
    let dist = distances(program);
    let prefer = super::prefer::Preferences::new(f, &dist);
    let exit_first = crate::priority::tune("NAV_EXIT_FIRST", 0) == 1;
    let cf = ChainForm::new(program);
    stats.loops = cf.loops.len() as u64;
    stats.chains = cf.loops.iter().map(|l| l.chains.as_ref().map_or(0, |c| c.len()) as u64).sum();
    let dead: HashMap<BlockId, BTreeSet<ValueId>> = cf.loops.iter().map(|l| (l.header, cf.dead_at(f, l.header))).collect();
    let mut solver = PathSolver::with_clock(limits.deadline, clock);
    let tied_lengths: Vec<BV> = crate::witness::length_ties(program)
        .into_iter()
        .filter_map(|(_, l)| match f.params[l].ty {
            Ty::Int(w) => Some(BV::new_const(names.params[l].as_str(), w)),
            _ => None,
        })
        .collect();
    let mut exec = Executor { program, names: &names, stubbed: &limits.stubbed, stubbed_calls: Default::default(), inexact: None, comparison_results: 0 };
    let mut incomplete = Incomplete::default();
    let end = |end: DseEnd, mut stats: NavStats, solver: &PathSolver| {
        stats.solver_calls = solver.calls;
        info!(?stats, "nav finished");
        (end, stats)
    };
    let init = match exec.initial_state() {
        Ok(s) => s,
        Err(why) => return end(DseEnd::GaveUp(format!("cannot start: {why}")), stats, &solver),
    };
    let entry = f.entry();
    if dist[entry.index()] == u32::MAX {
        return end(DseEnd::Exhausted, stats, &solver);
    }
    // The merge key of a state arriving at a loop header: everything its future depends on.
    let key_of = |st: &DseState| -> Option<String> {
        let dead = dead.get(&st.block)?;
        let prev = st.prev?;
        let mut k = format!("{}<{}#{}|", st.block.0, prev.0, st.nondet);
        for (i, r) in st.regs.iter().enumerate() {
            if let Some(r) = r {
                if !dead.contains(&ValueId(i as u32)) {
                    k.push_str(&format!("{i}={r:?};"));
                }
            }
        }
        for x in &f.block(st.block).insts {
            if let InstKind::Phi { incoming } = &x.kind {
                let op = incoming.iter().find(|(p, _)| *p == prev).map(|(_, o)| o)?;
                match op {
                    Operand::Value(v) => k.push_str(&format!("φ{:?};", st.reg(*v))),
                    other => k.push_str(&format!("φ{other:?};")),
                }
            }
        }
        // Memory by identity: forks share objects until one writes, and equal identity is equal
        // contents (different identities only forgo a merge).
        for o in &st.objects {
            k.push_str(&format!("{:p},", Rc::as_ptr(o)));
        }
        Some(k)
    };
    let mut frontier = Frontier { heap: BinaryHeap::new(), slots: vec![], waiting: HashMap::new(), seq: 0, order: crate::priority::tune("NAV_ORDER", 1) };
    frontier.push(&mut solver, Slot { st: init, key: None, deviations: 0, pref: None }, &mut stats);

    while let Some(Slot { mut st, mut deviations, mut pref, .. }) = frontier.pop() {
        if cancel.load(Ordering::Relaxed) {
            return end(DseEnd::GaveUp("cancelled".into()), stats, &solver);
        }
        if Instant::now() >= limits.deadline {
            return end(DseEnd::GaveUp("the time budget ran out".into()), stats, &solver);
        }
        if stats.states_explored as usize >= limits.max_states {
            return end(DseEnd::GaveUp(format!("the bound of {} states was hit", limits.max_states)), stats, &solver);
        }
        stats.states_explored += 1;
        if st.unchecked {
            match solver.check(&st.pc, &[]) {
                Sat::Yes => st.unchecked = false,
                Sat::No => continue,
                Sat::Unknown => {
                    incomplete.note("a path condition was not decided in time");
                    continue;
                }
            }
        }
        // At a loop header: the loop's constraint system prunes, and its model advises.
        if let Some(&i) = cf.by_header.get(&st.block) {
            if let Some((system, counters, all)) = cf.system(f, &st, i) {
                stats.oracle_calls += 1;
                // The oracle asks for small counts first (a model to follow); only the unbounded
                // system (counters wrap like the values they move) may prune.
                let small: Vec<Bool> = all.iter().map(|t| t.bvule(&BV::from_u64(GUIDE_COUNT_BOUND, 64))).collect();
                let mut query = vec![system.clone()];
                query.extend(small);
                let query = query;
                let mut answer = solver.check_within(&st.pc, &query, solver_budget(limits));
                if answer == Sat::No {
                    match solver.check_within(&st.pc, &[system], solver_budget(limits)) {
                        Sat::No => {
                            stats.states_pruned_by_systems += 1;
                            debug!(block = %f.label(st.block), "nav: the constraint system has no solution");
                            continue;
                        }
                        _ => {
                            // Only runs with huge counts remain: explored last.
                            deviations = deviations.saturating_add(DEMOTED);
                            answer = Sat::Unknown;
                        }
                    }
                }
                match answer {
                    Sat::No | Sat::Unknown => pref = None,
                    Sat::Yes => {
                        // Algorithm 2: a chain is advised when running it once more still leaves a
                        // solution, leaving when all-zero remaining counts are one. The model
                        // answers some of these at once; the solver the rest.
                        let model = solver.model();
                        let chains = cf.loops[i].chains.as_ref().expect("a system needs chains");
                        let counts: Vec<u64> = counters.iter().map(|t| model.as_ref().and_then(|m| m.eval(t, true)).and_then(|v| v.as_u64()).unwrap_or(0)).collect();
                        let mut blocks = BTreeSet::new();
                        let mut exit = counts.iter().all(|&n| n == 0);
                        for (c, t) in counters.iter().enumerate() {
                            let advised = counts[c] > 0 || {
                                let mut q = query.clone();
                                q.push(t.bvuge(&BV::from_u64(1, 64)));
                                solver.check_within(&st.pc, &q, solver_budget(limits)) != Sat::No
                            };
                            if advised {
                                blocks.extend(chains[c].iter().copied());
                            }
                        }
                        if !exit {
                            let mut q = query.clone();
                            q.extend(counters.iter().map(|t| t.eq(&BV::from_u64(0, 64))));
                            exit = solver.check_within(&st.pc, &q, solver_budget(limits)) != Sat::No;
                        }
                        pref = Some(Rc::new(Pref { lp: i, blocks, exit }));
                    }
                }
            }
        }
        let mut budget = super::SLICE_BLOCKS;
        loop {
            if budget == 0 {
                let key = key_of(&st);
                frontier.push(&mut solver, Slot { st, key, deviations, pref: pref.clone() }, &mut stats);
                break;
            }
            budget -= 1;
            let from = st.block;
            match exec.step(&mut st, &mut solver) {
                Step::Continue => {
                    if dist[st.block.index()] == u32::MAX {
                        break;
                    }
                    if st.unchecked {
                        match solver.check(&st.pc, &[]) {
                            Sat::Yes => st.unchecked = false,
                            Sat::No => break,
                            Sat::Unknown => {
                                incomplete.note("a path condition was not decided in time");
                                break;
                            }
                        }
                    }
                    if cf.by_header.contains_key(&st.block) {
                        let key = key_of(&st);
                        frontier.push(&mut solver, Slot { st, key, deviations, pref: pref.clone() }, &mut stats);
                        break;
                    }
                }
                Step::Fork(succs) => {
                    if let Some(inside) = super::in_bounds_side(program, &succs) {
                        let out = succs.iter().find(|(b, _)| *b != inside).map(|(_, c)| c.clone()).expect("two sides");
                        if solver.check(&st.pc, &[out]) == Sat::No {
                            st.prev = Some(from);
                            st.block = inside;
                            if dist[inside.index()] == u32::MAX {
                                break;
                            }
                            if cf.by_header.contains_key(&st.block) {
                                let key = key_of(&st);
                                frontier.push(&mut solver, Slot { st, key, deviations, pref: pref.clone() }, &mut stats);
                                break;
                            }
                            continue;
                        }
                    }
                    // The oracle's advice applies to forks of its own loop's iterations.
                    let advice = pref.as_ref().filter(|p| cf.innermost.get(from.index()).copied().flatten() == Some(p.lp));
                    let preferred = prefer.preferred(from, st.prev);
                    for (to, cond) in succs {
                        if dist[to.index()] == u32::MAX {
                            continue;
                        }
                        let mut child = st.clone();
                        child.pc = solver.extend(&st.pc, &cond);
                        child.unchecked = true;
                        child.prev = Some(from);
                        child.block = to;
                        if preferred == Some(to) {
                            child.matched += 1;
                        }
                        let mut dev = deviations;
                        if let Some(p) = advice {
                            let inside = cf.loops[p.lp].blocks.contains(&to);
                            // As Algorithm 2: when the counts already solve the system, leave; but
                            // a scan whose exit reads memory (a string's end) is better followed
                            // by its preferred sides (`prefer`): leaving is always possible there.
                            let leave_first = (exit_first || cf.loops[p.lp].scalar_exit) && p.exit;
                            if (inside && (leave_first || !p.blocks.contains(&to))) || (!inside && !p.exit) {
                                dev += 1;
                            }
                        }
                        let Some(_) = reach::distance(f, program.target_names.len() as u32, &child, dist[to.index()]) else {
                            continue;
                        };
                        let key = if cf.by_header.contains_key(&to) { key_of(&child) } else { None };
                        frontier.push(&mut solver, Slot { st: child, key, deviations: dev, pref: pref.clone() }, &mut stats);
                    }
                    break;
                }
                Step::Target => {
                    let mut pc = st.pc.clone();
                    let mut tried = 0;
                    loop {
                        if tried == MODELS_PER_PATH || Instant::now() >= limits.deadline || cancel.load(Ordering::Relaxed) {
                            incomplete.note("a path reached the target but its models did not replay");
                            break;
                        }
                        match solver.check(&pc, &[]) {
                            Sat::Yes => {}
                            Sat::No => break,
                            Sat::Unknown => {
                                incomplete.note("a target path condition was not decided in time");
                                break;
                            }
                        }
                        let Some(model) = least_lengths(&mut solver, &pc, &tied_lengths, limits.deadline) else { break };
                        let w = witness_of(program, &names, &exec, &st, &model);
                        stats.models_tried += 1;
                        tried += 1;
                        if replay(&w) {
                            return end(DseEnd::Reached(w), stats, &solver);
                        }
                        let differ: Vec<Bool> = w.nondet.iter().enumerate().map(|(k, v)| names.nondet(k as u64).eq(&BV::from_u64(*v, 64)).not()).collect();
                        if differ.is_empty() {
                            incomplete.note("a path reached the target but its model did not replay");
                            break;
                        }
                        pc = solver.extend(&pc, &Bool::or(&differ));
                    }
                    break;
                }
                Step::Dead => break,
                Step::GiveUp(why) => {
                    incomplete.note(format!("a state was given up: {why}"));
                    break;
                }
            }
        }
        let _ = &mut deviations;
    }
    if let Some(why) = exec.inexact.take() {
        incomplete.note(why);
    }
    if incomplete.reasons.is_empty() && exec.stubbed_calls.is_empty() {
        end(DseEnd::Exhausted, stats, &solver)
    } else if cancel.load(Ordering::Relaxed) {
        end(DseEnd::GaveUp("cancelled".into()), stats, &solver)
    } else if Instant::now() + super::solver::DEADLINE_MARGIN >= limits.deadline {
        end(DseEnd::GaveUp("the time budget ran out".into()), stats, &solver)
    } else {
        if !exec.stubbed_calls.is_empty() {
            let names: Vec<_> = exec.stubbed_calls.iter().cloned().collect();
            incomplete.note(format!("calls to {} were executed as the replay's stubs (return 0)", names.join(", ")));
        }
        end(DseEnd::GaveUp(format!("every state was explored, but not exactly: {}", incomplete.reasons.join("; "))), stats, &solver)
    }
}

/// Time a constraint-system query gets: it ends a margin before the deadline, as the path
/// queries do (the race waits for every engine).
fn solver_budget(limits: &DseConfig) -> u32 {
    limits.deadline.saturating_duration_since(Instant::now()).saturating_sub(super::solver::DEADLINE_MARGIN).as_millis().clamp(1, ORACLE_MS as u128) as u32
}
