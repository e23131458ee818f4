//! Loop summaries (processLoop, section 3 of the APC paper): for a loop C entered at v, the
//! iterated symbolic state θ^κ (values after κ_i iterations along each iteration backbone π_i)
//! and the looping condition φ^κ.
//!
//! A summary is computed once per loop (and binding of pointer variables to objects) over
//! symbols that stand for the values at the loop's entry, and applied at each entry node by
//! substitution: apc ∧= θ⟨φ^κ⟩, θ ← θ⟨θ^κ⟩.

mod fill;
pub mod invariant;
mod monotone;
mod rules;

use crate::apc::{push_test, ApcBuilder};
use crate::cfg::LoopId;
use crate::expr::{mentions, ExprId, Printer, Sort, Substitution, SymbolKind};
use crate::ir::{Operand, Ty, ValueId};
use crate::symex::{ObjectId, State, SymVal};
use std::collections::BTreeSet;
use std::sync::Arc as Rc;
use tracing::debug;

/// A variable of a loop: what the iterated state gives a value to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Var {
    /// An integer SSA value: a phi node of the entry (loop-carried) or a value defined outside
    /// the loop (invariant).
    Value(ValueId),
    /// The offset of a pointer SSA value whose object is fixed by the context.
    PtrOffset(ValueId),
    /// The address of a pointer SSA value whose object is not known at the loop's entry (null,
    /// or an [`SymVal::Addr`]): offsets from the entry value stay exact.
    PtrAddr(ValueId),
    /// The contents of a memory object.
    Mem(ObjectId),
    /// The position in the nondet input stream.
    Nondet,
}

/// A loop variable with the symbol that stands for its value at the loop's entry.
#[derive(Clone, Debug)]
pub struct LoopVar {
    pub var: Var,
    pub symbol: ExprId,
    pub name: String,
    /// Carried from iteration to iteration (phi, memory, stream), as opposed to invariant.
    pub carried: bool,
    /// For `PtrOffset`: the object pointed into.
    pub object: Option<ObjectId>,
}

/// What a pointer variable of a loop points to at the loop's entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PtrBinding {
    /// Into this object: the variable is its offset ([`Var::PtrOffset`]).
    Object(ObjectId),
    /// Null or an address of an unknown object: the variable is its address ([`Var::PtrAddr`]).
    Address,
    /// Nothing the analysis follows: ⋆ in and after the loop.
    Lost,
}

impl PtrBinding {
    fn of(v: Option<&SymVal>) -> PtrBinding {
        match v {
            Some(SymVal::Ptr { obj, .. }) => PtrBinding::Object(*obj),
            Some(SymVal::Addr(_) | SymVal::Null) => PtrBinding::Address,
            _ => PtrBinding::Lost,
        }
    }
}

/// Identifies a summary: the loop, what its pointer variables point into, and how many objects
/// exist and have escaped (an unknown call in the loop forgets the escaped ones).
pub type SummaryKey = (LoopId, Vec<(ValueId, PtrBinding)>, usize, usize);

/// Iterations of an array-writing loop whose writes the summary keeps exactly (see
/// `last_writes`): enough for fill loops over buffers of a few dozen elements, small enough that
/// the chain of stores stays cheap for Z3.
pub const EXACT_WRITES: u64 = 64;

/// The summary (θ^κ, φ^κ) of a loop.
#[derive(Clone, Debug)]
pub struct LoopSummary {
    pub loop_id: LoopId,
    pub vars: Vec<LoopVar>,
    /// θ^κ after the loop, per variable (index as `vars`); `None` is ⋆.
    pub after: Vec<Option<ExprId>>,
    /// φ^κ.
    pub looping: ExprId,
    /// κ_1 … κ_k, one per feasible iteration backbone.
    pub counters: Vec<ExprId>,
    /// The counter of each iteration backbone of the loop, `None` for infeasible ones.
    pub backbone_counters: Vec<Option<ExprId>>,
    /// The total number of iterations Σκ as a function of the loop-entry symbols, proved by the
    /// recurrence check of [`closed_form`].
    pub closed_form: Option<ExprId>,
    /// With several iteration backbones: variables moved uniformly (by the same d on each), and
    /// their value after the loop, v̲ + d·Σκ, over the loop-entry symbols and Σκ's closed form.
    pub uniform_after: Vec<(usize, ExprId)>,
    /// Fresh symbols standing for memory written by the loop (existential, like counters).
    pub aux: Vec<ExprId>,
    /// Preferences for models (never facts): fills within their objects (`note_fill`).
    pub hints: Vec<ExprId>,
    /// Objects allocated inside the loop: unknown after it.
    pub created_objects: Vec<ObjectId>,
    /// The fill λs in `after` whose region is known (`ApcBuilder::fill_regions`).
    pub fills: Vec<ExprId>,
    /// Inductive invariants of the variables the rules leave ⋆ ([`invariant`]), for the report.
    pub invariants: invariant::Invariants,
    /// The same as facts after the loop, over the loop-entry symbols, the counters and the
    /// symbols in `aux` that name the values they constrain (applied like `after`).
    pub invariant_facts: Vec<ExprId>,
}

impl LoopSummary {
    /// θ^κ and φ^κ in the paper's notation, for the report: carried variables only.
    pub fn describe(&self, pool: &crate::expr::ExprPool) -> (Vec<(String, String)>, String) {
        let pr = Printer::new(pool);
        let theta = self
            .vars
            .iter()
            .zip(&self.after)
            .filter(|(v, _)| v.carried)
            .map(|(v, e)| {
                // A value only invariants constrain is still ⋆ as far as θ^κ goes.
                let e = e.filter(|e| matches!(v.var, Var::Mem(_)) || !self.aux.contains(e));
                (v.name.clone(), e.map_or("⋆".to_string(), |e| pr.print(e)))
            })
            .collect();
        (theta, pr.print(self.looping))
    }
}

/// What the iterations of a loop being summarised do: its variables, θ^κ, each iteration
/// backbone's θ and tests (with their fresh symbols), and the counters.
#[derive(Clone, Copy)]
struct Iterations<'a> {
    vars: &'a [LoopVar],
    iterated: &'a [Option<ExprId>],
    thetas: &'a [Vec<Option<ExprId>>],
    tests: &'a [(Vec<ExprId>, Vec<ExprId>)],
    counters: &'a [ExprId],
}

impl ApcBuilder<'_> {
    /// Carried bit-vector variables that every iteration backbone moves by the same
    /// loop-invariant d: (index into `vars`, d).
    fn uniform_increments(&mut self, vars: &[LoopVar], thetas: &[Vec<Option<ExprId>>]) -> Vec<(usize, ExprId)> {
        let carried: Vec<ExprId> = vars.iter().filter(|v| v.carried).map(|v| v.symbol).collect();
        let mut out = vec![];
        for (k, v) in vars.iter().enumerate() {
            if !v.carried || !matches!(self.pool.sort(v.symbol), Sort::Bv(_)) {
                continue;
            }
            let mut d_all = None;
            let mut ok = true;
            for theta in thetas {
                let d = theta[k].and_then(|val| rules::increment(&mut self.pool, v.symbol, val));
                match (d, d_all) {
                    (Some(d), None) if !mentions(&self.pool, d, &carried) => d_all = Some(d),
                    (Some(d), Some(prev)) if d == prev => {}
                    _ => ok = false,
                }
            }
            if let (true, Some(d)) = (ok, d_all) {
                out.push((k, d));
            }
        }
        out
    }

    /// The heavyweight step (the role of the paper's Algorithm 2): Σκ in closed form. With one
    /// iteration backbone, c is its tests and step its effect. With several, c is the tests they
    /// all share, provided that c guarantees one of them is taken (checked), and step moves the
    /// variables every backbone moves by the same d; the others must not occur in c.
    fn iteration_count(
        &mut self,
        vars: &[LoopVar],
        thetas: &[Vec<Option<ExprId>>],
        iteration_tests: &[(Vec<ExprId>, Vec<ExprId>)],
    ) -> (Option<ExprId>, Vec<(usize, ExprId)>) {
        if iteration_tests.iter().any(|(_, fresh)| !fresh.is_empty()) || thetas.is_empty() {
            return (None, vec![]);
        }
        if let ([theta], [(tests, _)]) = (thetas, iteration_tests) {
            let mut step = Substitution::new();
            for (v, t) in vars.iter().zip(theta) {
                if v.carried {
                    match t {
                        Some(t) => step.insert(v.symbol, *t),
                        None => return (None, vec![]),
                    }
                }
            }
            return (closed_form(&mut self.pool, tests, &step, &mut self.check_budget), vec![]);
        }
        let uniform = self.uniform_increments(vars, thetas);
        let mut step = Substitution::new();
        for &(k, d) in &uniform {
            let next = self.pool.bin(crate::expr::BvOp::Add, vars[k].symbol, d);
            step.insert(vars[k].symbol, next);
        }
        if uniform.is_empty() {
            return (None, vec![]);
        }
        let (first, rest) = iteration_tests.split_first().expect("several backbones");
        let common: Vec<ExprId> = first.0.iter().copied().filter(|t| rest.iter().all(|(ts, _)| ts.contains(t))).collect();
        let moved: Vec<ExprId> = uniform.iter().map(|(k, _)| vars[*k].symbol).collect();
        // Variables that change, but not uniformly, must not decide whether the loop goes on.
        let others: Vec<ExprId> = vars
            .iter()
            .enumerate()
            .filter(|(k, v)| v.carried && !moved.contains(&v.symbol) && thetas.iter().any(|t| t[*k] != Some(v.symbol)))
            .map(|(_, v)| v.symbol)
            .collect();
        if common.is_empty() || common.iter().any(|&t| mentions(&self.pool, t, &others)) {
            return (None, vec![]);
        }
        // c must leave no way to stay in the loop but the backbones: c → ∨_i tests_i.
        let c = self.pool.and(common.iter().copied());
        let alternatives: Vec<ExprId> = iteration_tests.iter().map(|(ts, _)| self.pool.and(ts.iter().copied())).collect();
        let any = self.pool.or(alternatives);
        let exhaustive = self.pool.implies(c, any);
        if !valid(&mut self.pool, exhaustive, &mut self.check_budget) {
            return (None, vec![]);
        }
        let Some(e) = closed_form(&mut self.pool, &common, &step, &mut self.check_budget) else { return (None, vec![]) };
        let after = uniform
            .into_iter()
            .map(|(k, d)| {
                let w = self.pool.width(vars[k].symbol);
                let n = self.pool.resize(e, w);
                let dn = self.pool.bin(crate::expr::BvOp::Mul, d, n);
                (k, self.pool.bin(crate::expr::BvOp::Add, vars[k].symbol, dn))
            })
            .collect();
        (Some(e), after)
    }

    /// Section 4's second array rule, made sound and, for short runs, exact: memory written on
    /// one iteration backbone π_i only, by stores whose offsets and values depend on no counter
    /// but κ_i. After t such iterations it is M_t = M_{t−1}{o(t − 1) ↦ v(t − 1)}, M_0 = M̲ (no
    /// other backbone writes it). For κ_i ≤ [`EXACT_WRITES`] the summary is that chain
    /// (ite(κ_i = 0, M_0, ite(κ_i = 1, M_1, …))), so a fill loop `A[i] = nondet()` ties every
    /// element to its input; beyond, the memory is what the last iteration left:
    /// prev{o(κ_i − 1) ↦ v(κ_i − 1)}, where `prev` (a fresh array) is the memory before that
    /// iteration. (Reusing M̲ for `prev`, as the paper's sketch does, would forget the earlier
    /// iterations' writes.) A constant count (a closed form over constants) selects its M_t.
    fn last_writes(&mut self, sym: ExprId, k: usize, prev: ExprId, it: &Iterations) -> Option<ExprId> {
        use crate::expr::Expr;
        let Iterations { vars, thetas, counters, .. } = *it;
        let writers: Vec<usize> = (0..thetas.len()).filter(|&i| thetas[i][k] != Some(sym)).collect();
        let [i] = writers.as_slice() else { return None };
        let theta = thetas[*i][k]?;
        if !matches!(self.pool.get(theta), Expr::Store { .. }) {
            return self.nested_fill(sym, prev, it, theta, counters[*i]);
        }
        // The stores of that iteration, innermost first, directly over M̲.
        let mut stores = vec![];
        let mut m = theta;
        while m != sym {
            match self.pool.get(m).clone() {
                Expr::Store { array, offset, value, width } => {
                    stores.push((offset, value, width));
                    m = array;
                }
                _ => return None,
            }
        }
        stores.reverse();
        // θ^κ⟨e⟩[κ_i ↦ κ_i − 1]: the state at the start of the last π_i iteration.
        let at_last = self.state_at_iteration_start(it);
        let one = self.pool.bv(64, 1);
        let minus_one = self.pool.bin(crate::expr::BvOp::Sub, counters[*i], one);
        let mut prev_iteration = Substitution::new();
        prev_iteration.insert(counters[*i], minus_one);
        let others: Vec<ExprId> = counters.iter().enumerate().filter(|(j, _)| j != i).map(|(_, &c)| c).collect();
        // The stores of iteration κ_i (as θ^κ gives them), then of iteration κ_i − 1, as
        // functions of κ_i.
        let mut at_kappa = vec![];
        let mut writes = vec![];
        for (o, v, w) in stores {
            let mut parts = vec![];
            for e in [o, v] {
                let e = at_last.apply(&mut self.pool, e);
                if self.pool.is_star(e) || mentions(&self.pool, e, &others) {
                    return None;
                }
                parts.push(e);
            }
            at_kappa.push((parts[0], parts[1], w));
            let o = prev_iteration.apply(&mut self.pool, parts[0]);
            let v = prev_iteration.apply(&mut self.pool, parts[1]);
            writes.push((o, v, w));
        }
        let mut mem = prev;
        for &(o, v, w) in &writes {
            mem = self.pool.store(mem, o, v, w);
        }
        // Beyond the bound: every iteration's write at once, where one store with an affine
        // offset makes the memory a λ (`fill`); else the last iteration's writes over the
        // unknown earlier memory.
        let mut result = mem;
        let mut fill = None;
        if let [(o, v, w)] = at_kappa[..] {
            self.next_aux += 1;
            let var = self.pool.symbol(&format!("ρ{}", self.next_aux), Sort::Bv(64), SymbolKind::Aux);
            fill = fill::fill(&mut self.pool, sym, counters[*i], counters[*i], o, fill::Block::Store { value: v, width: w }, var);
        }
        // M_t for t = EXACT_WRITES … 1: the writes of iterations 0 … t − 1, i.e. κ_i ↦ u + 1.
        let mut chain = vec![sym];
        for t in 0..EXACT_WRITES {
            let mut at = Substitution::new();
            let kt = self.pool.bv(64, t + 1);
            at.insert(counters[*i], kt);
            let mut m = *chain.last().expect("M_0");
            for &(o, v, w) in &writes {
                let o = at.apply(&mut self.pool, o);
                let v = at.apply(&mut self.pool, v);
                m = self.pool.store(m, o, v, w);
            }
            chain.push(m);
        }
        for t in (0..=EXACT_WRITES).rev() {
            let kt = self.pool.bv(64, t);
            let is_t = self.pool.eq(counters[*i], kt);
            result = self.pool.ite(is_t, chain[t as usize], result);
        }
        if let Some(f) = fill {
            self.note_fill(&f, vars, sym);
            result = self.pool.ite(f.guard, f.memory, result);
        }
        Some(result)
    }

    /// θ^κ as a substitution: the state at the start of iteration κ (⋆ where it is unknown).
    fn state_at_iteration_start(&mut self, it: &Iterations) -> Substitution {
        let mut at = Substitution::new();
        for (v, e) in it.vars.iter().zip(it.iterated) {
            let e = e.unwrap_or_else(|| self.pool.star(self.pool.sort(v.symbol)));
            at.insert(v.symbol, e);
        }
        at
    }

    /// The state after `t` iterations in total, whatever their mix of iteration backbones:
    /// unchanged variables keep their symbol, variables every backbone moves by the same d are
    /// v̲ + d·t, the others ⋆. Also whether any variable is uniform.
    fn state_at_total_index(&mut self, vars: &[LoopVar], iterated: &[Option<ExprId>], thetas: &[Vec<Option<ExprId>>], t: ExprId) -> (Substitution, bool) {
        use crate::expr::BvOp;
        let uniform = self.uniform_increments(vars, thetas);
        let mut at = Substitution::new();
        let mut any_uniform = false;
        for (k, v) in vars.iter().enumerate() {
            if !v.carried || iterated[k] == Some(v.symbol) {
                continue;
            }
            let e = match uniform.iter().find(|(u, _)| *u == k) {
                Some(&(_, d)) => {
                    any_uniform = true;
                    let tw = self.pool.resize(t, self.pool.width(v.symbol));
                    let dt = self.pool.bin(BvOp::Mul, d, tw);
                    self.pool.bin(BvOp::Add, v.symbol, dt)
                }
                None => self.pool.star(self.pool.sort(v.symbol)),
            };
            at.insert(v.symbol, e);
        }
        (at, any_uniform)
    }

    /// Remembers the region of a fill λ (see `ApcBuilder::fill_regions`).
    /// With the object's size, a preference for models whose fill stays inside the object
    /// (`start + extent ≤ size`): never a fact, since a program may write past an array, but
    /// a model that does (`n` = 700 million for `A[300]`) crashes its replay.
    fn note_fill(&mut self, f: &fill::Fill, vars: &[LoopVar], sym: ExprId) {
        use crate::ir::IntPredicate::{Eq, Ule};
        let Some((start, extent)) = f.region else { return };
        self.fill_regions.insert(f.memory, (start, extent));
        self.new_fills.push(f.memory);
        let size = vars.iter().find(|v| v.symbol == sym).and_then(|v| match v.var {
            Var::Mem(o) => self.inputs.object(o).size,
            _ => None,
        });
        if let Some(size) = size {
            let size = self.pool.bv(64, size);
            let zero = self.pool.bv(64, 0);
            let empty = self.pool.cmp(Eq, extent, zero);
            let room = self.pool.bin(crate::expr::BvOp::Sub, size, start);
            let starts_inside = self.pool.cmp(Ule, start, size);
            let fits = self.pool.cmp(Ule, extent, room);
            let inside = self.pool.and([starts_inside, fits]);
            let hint = self.pool.or([empty, inside]);
            self.new_hints.push(hint);
        }
    }

    /// An outer loop whose one writing iteration backbone runs an inner fill loop (a matrix
    /// filled row by row): the iteration's memory is `ite(g, λ, …)` with λ an inner fill whose
    /// region `[start, start + extent)` is known. When g and the extent do not change from
    /// iteration to iteration and the start moves by a constant stride S ≥ extent, the rows
    /// are disjoint and [`fill::fill`] lays them side by side ([`fill::Block::Region`]). The λ
    /// must read the memory only where it did not write (its fallback M̲[ρ]): inside row q the
    /// memory at iteration q is then M̲'s, as earlier rows lie elsewhere.
    fn nested_fill(&mut self, sym: ExprId, prev: ExprId, it: &Iterations, theta: ExprId, counter: ExprId) -> Option<ExprId> {
        use crate::expr::Expr;
        let (g, lam) = match self.pool.get(theta).clone() {
            Expr::Ite(g, a, _) if self.fill_regions.contains_key(&a) => (Some(g), a),
            _ if self.fill_regions.contains_key(&theta) => (None, theta),
            _ => return None,
        };
        let (start, extent) = self.fill_regions[&lam];
        let Expr::Lambda { var, body } = self.pool.get(lam).clone() else { return None };
        let Expr::Ite(c, v, old) = self.pool.get(body).clone() else { return None };
        if old != self.pool.load(sym, var, 8) || mentions(&self.pool, c, &[sym]) || mentions(&self.pool, v, &[sym]) {
            return None;
        }
        // The state at the start of iteration κ; the memory stays M̲ inside the λ (see above),
        // and is ⋆ anywhere else.
        let mut at = self.state_at_iteration_start(it);
        let mut parts = vec![];
        for e in [g.unwrap_or_else(|| self.pool.bool(true)), start, extent] {
            let e = at.apply(&mut self.pool, e);
            if self.pool.is_star(e) {
                return None;
            }
            parts.push(e);
        }
        let [g, start, extent] = parts[..] else { unreachable!() };
        if mentions(&self.pool, g, &[counter]) {
            return None;
        }
        at.insert(sym, sym);
        let lam = at.apply(&mut self.pool, lam);
        self.next_aux += 1;
        let rho = self.pool.symbol(&format!("ρ{}", self.next_aux), Sort::Bv(64), SymbolKind::Aux);
        let f = fill::fill(&mut self.pool, sym, counter, counter, start, fill::Block::Region { memory: lam, extent }, rho)?;
        self.note_fill(&f, it.vars, sym);
        let guard = self.pool.and([g, f.guard]);
        debug!(fill = %Printer::new(&self.pool).print(f.memory), "a fill of inner fills");
        Some(self.pool.ite(guard, f.memory, prev))
    }

    /// A fill loop with several iteration backbones (`a[i] = x[i] > 0 ? x[i] : 0`): every
    /// backbone stores once into the object, at the same offset function of the *total*
    /// iteration index t (its index moves by the same d on every backbone), or not at all. The
    /// state at total index t is known where it matters (uniform variables v̲ + d·t, invariant
    /// values, memory the loop does not write), so the backbone iteration t takes is the one
    /// whose tests hold there (backbones of a deterministic program exclude each other, and with
    /// no ⋆ test dropped their tests are exact), and the value stored at t is
    /// ite(tests₁(t), v₁(t), ite(tests₂(t), v₂(t), …)) (a backbone that does not store leaves
    /// the slot's old bytes). [`fill::fill`] turns that into the memory after Σκ iterations;
    /// `prev` (a fresh array) stands for it where the fill's guard fails.
    fn mixed_fill(&mut self, sym: ExprId, k: usize, prev: ExprId, it: &Iterations) -> Option<ExprId> {
        use crate::expr::{BvOp, Expr};
        let Iterations { vars, iterated, thetas, tests: iteration_tests, counters } = *it;
        if thetas.len() < 2 || iteration_tests.iter().any(|(_, fresh)| !fresh.is_empty()) {
            return None;
        }
        self.next_aux += 1;
        let n = self.next_aux;
        let t = self.pool.symbol(&format!("t{n}"), Sort::Bv(64), SymbolKind::Aux);
        let (at_t, _) = self.state_at_total_index(vars, iterated, thetas, t);
        // Each backbone's store (offset, value, width) at index t, or None when it stores nothing.
        let mut stores = vec![];
        for theta in thetas {
            let m = theta[k]?;
            if m == sym {
                stores.push(None);
                continue;
            }
            let Expr::Store { array, offset, value, width } = self.pool.get(m).clone() else { return None };
            if array != sym {
                return None;
            }
            let offset = at_t.apply(&mut self.pool, offset);
            let value = at_t.apply(&mut self.pool, value);
            stores.push(Some((offset, value, width)));
        }
        let (offset, width) = {
            let mut written = stores.iter().flatten();
            let &(o, _, w) = written.next()?;
            if written.any(|&(o2, _, w2)| o2 != o || w2 != w) {
                return None;
            }
            (o, w)
        };
        let old = self.pool.load(sym, offset, width);
        let mut value = None;
        for (b, store) in stores.iter().enumerate().rev() {
            let v = store.map_or(old, |(_, v, _)| v);
            value = Some(match value {
                None => v,
                Some(later) => {
                    let tests: Vec<ExprId> = iteration_tests[b].0.iter().map(|&c| at_t.apply(&mut self.pool, c)).collect();
                    let taken = self.pool.and(tests);
                    if self.pool.is_star(taken) {
                        return None;
                    }
                    self.pool.ite(taken, v, later)
                }
            });
        }
        // Σκ, below 2^64: no partial sum wraps.
        let mut total = counters[0];
        let mut guard = vec![];
        for &c in &counters[1..] {
            let next = self.pool.bin(BvOp::Add, total, c);
            guard.push(self.pool.cmp(crate::ir::IntPredicate::Uge, next, total));
            total = next;
        }
        let var = self.pool.symbol(&format!("ρ{n}"), Sort::Bv(64), SymbolKind::Aux);
        let f = fill::fill(&mut self.pool, sym, t, total, offset, fill::Block::Store { value: value?, width }, var)?;
        self.note_fill(&f, vars, sym);
        guard.push(f.guard);
        let guard = self.pool.and(guard);
        debug!(fill = %Printer::new(&self.pool).print(f.memory), "a fill over several iteration backbones");
        Some(self.pool.ite(guard, f.memory, prev))
    }

    /// A sound strengthening of φ^κ for loops with several iteration backbones: a variable that
    /// changes by the same loop-invariant d on every backbone equals v̲ + d·t after t iterations in
    /// total, whatever their mix; so every test shared by all backbones holds at each total index:
    /// ∀τ (τ < Σκ → test[v̲ ↦ v̲ + d·τ]). Without it the per-backbone parts, each with its own ∃τ
    /// for the other counters, cannot bound Σκ under wrap-around arithmetic.
    fn total_iteration_condition(
        &mut self,
        vars: &[LoopVar],
        iterated: &[Option<ExprId>],
        thetas: &[Vec<Option<ExprId>>],
        iteration_tests: &[(Vec<ExprId>, Vec<ExprId>)],
        counters: &[ExprId],
    ) -> Option<ExprId> {
        let n = match self.pool.get(counters[0]) {
            crate::expr::Expr::Symbol { kind: SymbolKind::Kappa(n), .. } => *n,
            _ => return None,
        };
        let tau = self.pool.symbol(&format!("τΣ{n}"), Sort::Bv(64), SymbolKind::Tau(n));
        let (at_tau, any_uniform) = self.state_at_total_index(vars, iterated, thetas, tau);
        if !any_uniform {
            return None;
        }
        let (first, rest) = iteration_tests.split_first()?;
        let mut body = vec![];
        for &t in &first.0 {
            let shared = rest.iter().all(|(tests, _)| tests.contains(&t));
            let inner = iteration_tests.iter().any(|(_, fresh)| mentions(&self.pool, t, fresh));
            if shared && !inner {
                let t = at_tau.apply(&mut self.pool, t);
                push_test(&self.pool, &mut body, t);
            }
        }
        if body.is_empty() {
            return None;
        }
        let body = self.pool.and(body);
        // Σκ is a number of iterations, below 2^64 like each counter: its sum does not wrap.
        let mut total = counters[0];
        let mut no_wrap = vec![];
        for &c in &counters[1..] {
            let next = self.pool.bin(crate::expr::BvOp::Add, total, c);
            no_wrap.push(self.pool.cmp(crate::ir::IntPredicate::Uge, next, total));
            total = next;
        }
        let bound = self.pool.cmp(crate::ir::IntPredicate::Ult, tau, total);
        let imp = self.pool.implies(bound, body);
        no_wrap.push(self.pool.forall(vec![tau], imp));
        Some(self.pool.and(no_wrap))
    }

    /// Phi nodes of the entry and values the loop reads from outside it.
    fn loop_values(&self, loop_id: LoopId) -> (Vec<ValueId>, Vec<ValueId>) {
        let f = &self.program.function;
        let l = self.structure.get(loop_id);
        let mut defined = BTreeSet::new();
        for &b in &l.blocks {
            defined.extend(f.block(b).insts.iter().filter_map(|i| i.result));
        }
        let phis: Vec<ValueId> = f
            .block(l.entry)
            .insts
            .iter()
            .filter(|i| matches!(i.kind, crate::ir::InstKind::Phi { .. }))
            .filter_map(|i| i.result)
            .collect();
        let mut invariant = BTreeSet::new();
        for &b in &l.blocks {
            let block = f.block(b);
            let ops = block.insts.iter().flat_map(|i| i.kind.operands()).chain(block.term.operands());
            for op in ops {
                if let Operand::Value(v) = op {
                    if !defined.contains(v) {
                        invariant.insert(*v);
                    }
                }
            }
        }
        (phis, invariant.into_iter().collect())
    }

    /// Applies the summary of `loop_id` at its entry node: returns the tests θ⟨φ^κ⟩ and the fresh
    /// symbols introduced, and updates `st` to θ⟨θ^κ⟩. `count_exact`: the path goes on from the
    /// loop where an iteration condition fails, so that the closed-form count, if any, is the
    /// number of iterations (not so for a path into a store's clobber site from inside the loop).
    pub(crate) fn apply_loop(&mut self, loop_id: LoopId, st: &mut State, count_exact: bool) -> (Vec<ExprId>, Vec<ExprId>) {
        let (phis, invariant) = self.loop_values(loop_id);
        let f = &self.program.function;
        let mut key_ptrs = vec![];
        for v in phis.iter().chain(&invariant) {
            if *f.value_type(*v) == Ty::Ptr {
                key_ptrs.push((*v, PtrBinding::of(st.values.get(v))));
            }
        }
        let objects_at_entry = self.inputs.objects.len();
        let key: SummaryKey = (loop_id, key_ptrs.clone(), objects_at_entry, self.inputs.escaped().count());
        let summary = match self.summaries.get(&key) {
            Some(s) => s.clone(),
            None => {
                let s = Rc::new(self.summarise(loop_id, &phis, &invariant, &key_ptrs));
                self.summaries.insert(key, s.clone());
                if !self.first_summary.iter().any(|(l, _)| *l == loop_id) {
                    self.first_summary.push((loop_id, s.clone()));
                }
                s
            }
        };
        // σ: loop-entry symbols ↦ the current state (θ⟨·⟩).
        let mut sigma = Substitution::new();
        for v in &summary.vars {
            let cur = match &v.var {
                Var::Value(x) => match st.values.get(x) {
                    Some(SymVal::Int(e)) => *e,
                    _ => self.pool.star(self.pool.sort(v.symbol)),
                },
                Var::PtrOffset(x) => match st.values.get(x) {
                    Some(SymVal::Ptr { obj, offset }) if Some(*obj) == v.object => *offset,
                    _ => self.pool.star(Sort::Bv(64)),
                },
                Var::PtrAddr(x) => {
                    let val = st.values.get(x).cloned().unwrap_or(SymVal::Unknown);
                    self.inputs.address_of(&mut self.pool, &val).unwrap_or_else(|| self.pool.star(Sort::Bv(64)))
                }
                Var::Mem(o) => st.memory(&mut self.pool, &self.inputs, *o),
                Var::Nondet => st.nondet_index,
            };
            sigma.insert(v.symbol, cur);
        }
        // Fail-safe by construction: every value the loop defines (its entry's phis included)
        // is ⋆ after it unless a loop variable below gives it a value. The path goes on from the
        // entry with these values, never with those of the edge that first entered the loop.
        let l = self.structure.get(loop_id);
        for &b in &l.blocks {
            for inst in &f.block(b).insts {
                if let Some(r) = inst.result {
                    let star = self.executor().star_of(&inst.ty);
                    st.values.insert(r, star);
                }
            }
        }
        let mut tests = vec![sigma.apply(&mut self.pool, summary.looping)];
        // A proved iteration count replaces the counter in the state (the heavyweight step of
        // Algorithm 2): outer loops can then summarise values the inner loop computes.
        let mut count = Substitution::new();
        if let Some(e) = summary.closed_form {
            let e = sigma.apply(&mut self.pool, e);
            let total = summary.counters[1..].iter().fold(summary.counters[0], |acc, &c| self.pool.bin(crate::expr::BvOp::Add, acc, c));
            if !count_exact {
                // Every iteration so far met the condition E counts: at most E of them (E is
                // the first iteration that fails it, by the recurrence it was checked against).
                tests.push(self.pool.cmp(crate::ir::IntPredicate::Ule, total, e));
            } else {
                tests.push(self.pool.eq(total, e));
                if let [k] = summary.counters.as_slice() {
                    count.insert(*k, e);
                }
            }
        }
        // θ ← θ⟨θ^κ⟩ for the carried variables; σ was built from the old state, so updating `st`
        // variable by variable is still a simultaneous substitution.
        for (v, e) in summary.vars.iter().zip(&summary.after) {
            if !v.carried {
                continue;
            }
            let idx = summary.vars.iter().position(|x| std::ptr::eq(x, v)).expect("own variable");
            let uniform = summary.uniform_after.iter().find(|(k, _)| *k == idx && count_exact).map(|(_, e)| *e);
            let new = uniform.or(*e).map(|e| {
                let e = sigma.apply(&mut self.pool, e);
                count.apply(&mut self.pool, e)
            });
            match (&v.var, new) {
                (Var::Value(x), n) => {
                    let n = n.unwrap_or_else(|| self.pool.star(self.pool.sort(v.symbol)));
                    st.values.insert(*x, SymVal::Int(n));
                }
                (Var::PtrOffset(x), Some(n)) => {
                    let obj = v.object.expect("pointer variables have an object");
                    st.values.insert(*x, SymVal::Ptr { obj, offset: n });
                }
                (Var::PtrOffset(x), None) | (Var::PtrAddr(x), None) => {
                    st.values.insert(*x, SymVal::Unknown);
                }
                (Var::PtrAddr(x), Some(n)) => {
                    let p = self.inputs.pointer_at(&mut self.pool, n);
                    st.values.insert(*x, p);
                }
                (Var::Mem(o), n) => {
                    let n = n.unwrap_or_else(|| self.pool.star(Sort::MEMORY));
                    st.set_memory(*o, n);
                }
                (Var::Nondet, n) => st.nondet_index = n.unwrap_or_else(|| self.pool.star(Sort::Bv(64))),
            }
        }
        for &o in &summary.created_objects {
            let s = self.pool.star(Sort::MEMORY);
            st.set_memory(o, s);
        }
        // The summary's preferences, on the path's own symbols only (inside an enclosing loop's
        // iteration they would speak of that loop's entry symbols).
        if self.inputs.iteration_depth == 0 {
            for &h in &summary.hints {
                let h = sigma.apply(&mut self.pool, h);
                let h = count.apply(&mut self.pool, h);
                if !self.pool.is_star(h) && !self.hints.contains(&h) {
                    self.hints.push(h);
                }
            }
        }
        // The fills' regions, in the terms of this application.
        for &lam in &summary.fills {
            let Some(&(start, extent)) = self.fill_regions.get(&lam) else { continue };
            let [lam, start, extent] = [lam, start, extent].map(|e| {
                let e = sigma.apply(&mut self.pool, e);
                count.apply(&mut self.pool, e)
            });
            if !self.pool.is_star(lam) {
                self.fill_regions.insert(lam, (start, extent));
            }
        }
        let gaps = self.coverage_gaps(loop_id, &summary, st, objects_at_entry);
        debug_assert!(gaps.is_empty(), "loop summary leaves values at stale contents: {gaps:?}");
        self.coverage_gaps.extend(gaps);
        // The invariants after the loop, in the terms of this application (stated over the
        // values after the closed-form count, when the count gave them).
        let facts = if count_exact || summary.uniform_after.is_empty() { &summary.invariant_facts[..] } else { &[] };
        for &f in facts {
            let f = sigma.apply(&mut self.pool, f);
            tests.push(count.apply(&mut self.pool, f));
        }
        let mut fresh = summary.counters.clone();
        fresh.extend(&summary.aux);
        (tests, fresh)
    }

    /// What a summary application left uncovered: a value defined in the loop that is neither a
    /// loop variable nor ⋆, an object without a memory variable, no stream variable. Each would
    /// keep a pre-loop value after the loop, i.e. a guess. Empty by construction; checked in
    /// debug builds and by a test over the benchmark and test programs.
    fn coverage_gaps(&self, loop_id: LoopId, summary: &LoopSummary, st: &State, objects_at_entry: usize) -> Vec<String> {
        let f = &self.program.function;
        let mut gaps = vec![];
        let summarised = |x: ValueId| {
            summary.vars.iter().any(|v| v.carried && matches!(v.var, Var::Value(y) | Var::PtrOffset(y) | Var::PtrAddr(y) if y == x))
        };
        for &b in &self.structure.get(loop_id).blocks {
            for inst in &f.block(b).insts {
                let Some(r) = inst.result else { continue };
                if summarised(r) {
                    continue;
                }
                let unknown = match st.values.get(&r) {
                    Some(SymVal::Int(e)) => self.pool.is_star(*e),
                    Some(SymVal::Unknown) | None => true,
                    _ => false,
                };
                if !unknown {
                    gaps.push(format!("loop {}: value {} keeps a value", loop_id.0, f.value_name(r)));
                }
            }
        }
        for o in 0..objects_at_entry {
            if !summary.vars.iter().any(|v| v.var == Var::Mem(ObjectId(o as u32))) {
                gaps.push(format!("loop {}: object {} has no memory variable", loop_id.0, self.inputs.objects[o].name));
            }
        }
        if !summary.vars.iter().any(|v| v.var == Var::Nondet) {
            gaps.push(format!("loop {}: no nondet stream variable", loop_id.0));
        }
        gaps
    }

    /// processLoop: θ^κ and φ^κ of the loop, over symbols for the values at its entry.
    fn summarise(&mut self, loop_id: LoopId, phis: &[ValueId], invariant: &[ValueId], ptrs: &[(ValueId, PtrBinding)]) -> LoopSummary {
        let f = &self.program.function;
        let l = self.structure.get(loop_id);
        // Loop variables and the initial state θ_I of an iteration.
        let mut vars = vec![];
        let mut st = State::default();
        for (v, carried) in phis.iter().map(|v| (v, true)).chain(invariant.iter().map(|v| (v, false))) {
            let name = f.value_name(*v).to_string();
            match f.value_type(*v) {
                Ty::Int(w) => {
                    let sort = if *w == 1 { Sort::Bool } else { Sort::Bv(*w) };
                    let symbol = self.pool.symbol(&name, sort, SymbolKind::Input);
                    st.values.insert(*v, SymVal::Int(symbol));
                    vars.push(LoopVar { var: Var::Value(*v), symbol, name, carried, object: None });
                }
                Ty::Ptr => match ptrs.iter().find(|(x, _)| x == v).map_or(PtrBinding::Lost, |(_, b)| *b) {
                    PtrBinding::Object(obj) => {
                        let oname = format!("{name}.off");
                        let symbol = self.pool.symbol(&oname, Sort::Bv(64), SymbolKind::Input);
                        st.values.insert(*v, SymVal::Ptr { obj, offset: symbol });
                        vars.push(LoopVar { var: Var::PtrOffset(*v), symbol, name: oname, carried, object: Some(obj) });
                    }
                    PtrBinding::Address => {
                        let aname = format!("{name}.addr");
                        let symbol = self.pool.symbol(&aname, Sort::Bv(64), SymbolKind::Input);
                        st.values.insert(*v, SymVal::Addr(symbol));
                        vars.push(LoopVar { var: Var::PtrAddr(*v), symbol, name: aname, carried, object: None });
                    }
                    PtrBinding::Lost => {
                        st.values.insert(*v, SymVal::Unknown);
                    }
                },
                _ => {
                    st.values.insert(*v, SymVal::Unknown);
                }
            }
        }
        let objects_before = self.inputs.objects.len();
        for o in 0..objects_before {
            let obj = &self.inputs.objects[o];
            let symbol = self.pool.symbol(&obj.name, Sort::MEMORY, SymbolKind::Input);
            let name = obj.name.clone();
            st.set_memory(obj.id, symbol);
            vars.push(LoopVar { var: Var::Mem(obj.id), symbol, name, carried: true, object: None });
        }
        let nd = self.pool.symbol("ν", Sort::Bv(64), SymbolKind::Input);
        st.nondet_index = nd;
        vars.push(LoopVar { var: Var::Nondet, symbol: nd, name: "ν".into(), carried: true, object: None });

        // Execute every iteration backbone of P(C, v), again while an iteration lets another
        // object escape: an unknown call in a later iteration can write it, even one placed
        // before the store that lets it escape.
        let mut results = vec![];
        self.inputs.iteration_depth += 1;
        loop {
            let escaped_before = self.inputs.escaped().count();
            results = l.backbones.iter().map(|bb| self.execute_path(&bb.nodes, &bb.entries, st.clone(), true)).collect();
            if self.inputs.escaped().count() == escaped_before {
                break;
            }
        }
        self.inputs.iteration_depth -= 1;
        let mut thetas: Vec<Vec<Option<ExprId>>> = vec![];
        // θ of each iteration as executed, inner loops' symbols included (for the invariants,
        // whose checks hold for every value of those).
        let mut raw_thetas: Vec<Vec<Option<ExprId>>> = vec![];
        let mut iteration_tests: Vec<(Vec<ExprId>, Vec<ExprId>)> = vec![];
        let mut complete_tests = true;
        let mut feasible = vec![];
        for r in results {
            // An iteration whose tests cannot hold never runs (clang's `a && b` phis produce
            // such paths): it gets no counter. Dropping it is sound because its counter would be 0.
            let cond = self.pool.and(r.tests.iter().copied());
            let possible = self.pool.as_bool(cond) != Some(false) && !self.check_budget.unsat(&self.pool, cond, 300);
            feasible.push(possible);
            if !possible {
                continue;
            }
            let mut theta = vec![];
            let mut raw = vec![];
            for v in &vars {
                let val = match &v.var {
                    Var::Value(x) => match r.state.values.get(x) {
                        Some(SymVal::Int(e)) => Some(*e),
                        _ => None,
                    },
                    Var::PtrOffset(x) => match r.state.values.get(x) {
                        Some(SymVal::Ptr { obj, offset }) if Some(*obj) == v.object => Some(*offset),
                        _ => None,
                    },
                    Var::PtrAddr(x) => {
                        let val = r.state.values.get(x).cloned().unwrap_or(SymVal::Unknown);
                        self.inputs.address_of(&mut self.pool, &val)
                    }
                    Var::Mem(o) => Some(r.state.memory(&mut self.pool, &self.inputs, *o)),
                    Var::Nondet => Some(r.state.nondet_index),
                };
                // Values that depend on inner loops' counters are ⋆ (lightweight processLoop).
                // Except an inner fill's memory ite(g, λ, …) whose g and λ do not: only
                // `nested_fill` looks inside it (and the closed-form check, where its fresh
                // symbols are universally quantified, which is stronger than needed).
                let inner_fill = |pool: &crate::expr::ExprPool, e: ExprId| match pool.get(e) {
                    crate::expr::Expr::Ite(g, lam, _) => {
                        self.fill_regions.contains_key(lam) && !mentions(pool, *g, &r.fresh) && !mentions(pool, *lam, &r.fresh)
                    }
                    _ => false,
                };
                raw.push(val.filter(|&e| !self.pool.is_star(e)));
                let val = val.filter(|&e| {
                    !self.pool.is_star(e) && (!mentions(&self.pool, e, &r.fresh) || (matches!(v.var, Var::Mem(_)) && inner_fill(&self.pool, e)))
                });
                theta.push(val);
            }
            thetas.push(theta);
            raw_thetas.push(raw);
            complete_tests &= !r.dropped;
            iteration_tests.push((r.tests, r.fresh));
        }
        let created_objects: Vec<ObjectId> = (objects_before..self.inputs.objects.len()).map(|o| ObjectId(o as u32)).collect();

        // Path counters, one per iteration backbone.
        let counters: Vec<ExprId> = (0..thetas.len())
            .map(|_| {
                self.next_counter += 1;
                let n = self.next_counter;
                self.pool.symbol(&format!("κ{n}"), Sort::Bv(64), SymbolKind::Kappa(n))
            })
            .collect();
        let iterated = rules::iterate(&mut self.pool, &vars, &thetas, &counters);

        // Memory the loop writes in a way the rules cannot express: after the loop it holds
        // unknown contents, named by a fresh existential symbol (⋆ inside the looping condition,
        // where it would have to depend on the iteration).
        let mut after = iterated.clone();
        let mut aux = vec![];
        for (k, v) in vars.iter().enumerate() {
            if let (Var::Mem(_), None) = (&v.var, iterated[k]) {
                self.next_aux += 1;
                let a = self.pool.symbol(&format!("{}′{}", v.name, self.next_aux), Sort::MEMORY, SymbolKind::Aux);
                let it = Iterations { vars: &vars, iterated: &iterated, thetas: &thetas, tests: &iteration_tests, counters: &counters };
                // Several writing backbones need exact tests to tell which one stored (`mixed_fill`).
                let m = self.last_writes(v.symbol, k, a, &it).or_else(|| if complete_tests { self.mixed_fill(v.symbol, k, a, &it) } else { None });
                after[k] = Some(m.unwrap_or(a));
                aux.push(a);
            }
        }

        // An iteration count needs the exact condition of every iteration: with a ⋆ test
        // dropped, the loop may stop earlier than the known tests say.
        let (closed_form, uniform_after) =
            if complete_tests { self.iteration_count(&vars, &thetas, &iteration_tests) } else { (None, vec![]) };
        if let Some(e) = closed_form {
            debug!(loop = loop_id.0, count = %Printer::new(&self.pool).print(e), "iteration count in closed form");
        }
        // Invariants for what the rules leave ⋆: only over a complete enumeration of the
        // iterations (a missing one could break them).
        let wanted: Vec<bool> = (0..vars.len())
            .map(|k| vars[k].carried && matches!(vars[k].var, Var::Value(_)) && after[k].is_none() && !uniform_after.iter().any(|(j, _)| *j == k))
            .collect();
        let invariants = if l.truncated || self.out_of_time() {
            invariant::Invariants::default()
        } else {
            let steps: Vec<invariant::Step> =
                iteration_tests.iter().zip(&raw_thetas).map(|((tests, _), values)| invariant::Step { tests, values: values.clone() }).collect();
            // Three quarters of what is left per loop: an inner loop does not starve the outer one.
            let pool = &mut self.pool;
            self.invariant_budget.share(0.75, |b| invariant::infer(pool, b, &vars, &steps, &wanted))
        };
        // φ^κ = ∧_i ∀τ_i (τ_i < κ_i → ∃τ⃗_i (τ⃗_i ≤ κ⃗_i ∧ θ^κ⟨apc_i⟩[κ⃗/τ⃗])).
        let taus: Vec<ExprId> = counters
            .iter()
            .map(|&k| {
                let n = match self.pool.get(k) {
                    crate::expr::Expr::Symbol { kind: SymbolKind::Kappa(n), .. } => *n,
                    _ => unreachable!("counters are κ symbols"),
                };
                self.pool.symbol(&format!("τ{n}"), Sort::Bv(64), SymbolKind::Tau(n))
            })
            .collect();
        let mut theta_kappa = Substitution::new();
        let mut kappa_to_tau = Substitution::new();
        for (k, v) in vars.iter().enumerate() {
            let val = iterated[k].unwrap_or_else(|| self.pool.star(self.pool.sort(v.symbol)));
            theta_kappa.insert(v.symbol, val);
        }
        for (&k, &t) in counters.iter().zip(&taus) {
            kappa_to_tau.insert(k, t);
        }
        let mut parts = vec![];
        for (i, (tests, fresh)) in iteration_tests.iter().enumerate() {
            let mut body_tests = vec![];
            let (at_tau, at_tau_symbols) = self.state_with_invariants(&vars, &theta_kappa, &invariants, taus[i]);
            for &t in tests {
                let t = at_tau.apply(&mut self.pool, t);
                let t = kappa_to_tau.apply(&mut self.pool, t);
                push_test(&self.pool, &mut body_tests, t);
            }
            // The invariants at iteration τ_i, for the variables the tests compare and the rules
            // leave ⋆: each such variable is an existential x_τ that the invariants constrain.
            let fresh = &self.invariants_at_tau(&vars, &invariants, &at_tau, &kappa_to_tau, &at_tau_symbols, fresh, &mut body_tests);
            // The tests monotone in τ_i lose their quantifier. ∀ distributes over ∧, and a test
            // that mentions neither this backbone's fresh symbols (an inner loop's counters) nor
            // the other backbones' τ_j leaves their ∃ unchanged when taken out, so this is exact
            // for any test that mentions τ_i alone (the outer test of nested loops included).
            let bound: Vec<ExprId> = fresh.iter().copied().chain(taus.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &t)| t)).collect();
            body_tests.retain(|&t| {
                if crate::expr::mentions(&self.pool, t, &bound) {
                    return true;
                }
                match monotone::forall_below(&mut self.pool, taus[i], counters[i], t) {
                    Some(qf) => {
                        parts.push(qf);
                        false
                    }
                    None => true,
                }
            });
            let body = self.pool.and(body_tests);
            if self.pool.as_bool(body) == Some(true) {
                continue;
            }
            let inner = self.pool.exists(fresh.clone(), body);
            let mut conj = vec![];
            let mut others = vec![];
            for j in 0..counters.len() {
                if j != i {
                    conj.push(self.pool.cmp(crate::ir::IntPredicate::Ule, taus[j], counters[j]));
                    others.push(taus[j]);
                }
            }
            conj.push(inner);
            let guarded = self.pool.and(conj);
            let exists = self.pool.exists(others, guarded);
            // A body without τ_i holds for every τ_i < κ_i exactly when it holds once (or κ_i = 0).
            if !crate::expr::mentions(&self.pool, exists, &[taus[i]]) {
                let zero = self.pool.bv(64, 0);
                let none = self.pool.cmp(crate::ir::IntPredicate::Eq, counters[i], zero);
                parts.push(self.pool.or([none, exists]));
                continue;
            }
            let bound = self.pool.cmp(crate::ir::IntPredicate::Ult, taus[i], counters[i]);
            let imp = self.pool.implies(bound, exists);
            parts.push(self.pool.forall(vec![taus[i]], imp));
        }
        if counters.len() > 1 {
            if let Some(total) = self.total_iteration_condition(&vars, &iterated, &thetas, &iteration_tests, &counters) {
                parts.push(total);
            }
        }
        let looping = self.pool.and(parts);
        debug!(loop = loop_id.0, looping = %Printer::new(&self.pool).print(looping), "loop summarised");
        let mut it = counters.iter();
        let backbone_counters = feasible.iter().map(|&f| if f { it.next().copied() } else { None }).collect();
        let invariant_facts = self.invariant_facts(&vars, &mut after, &uniform_after, &mut aux, &invariants);
        let fills = std::mem::take(&mut self.new_fills);
        let hints = std::mem::take(&mut self.new_hints);
        LoopSummary {
            loop_id,
            vars,
            after,
            looping,
            counters,
            backbone_counters,
            closed_form,
            uniform_after,
            aux,
            created_objects,
            fills,
            hints,
            invariants,
            invariant_facts,
        }
    }

    /// θ^κ with each variable the rules leave ⋆ and an invariant mentions standing for a fresh
    /// symbol x_τ (its unknown value at iteration τ), and those symbols: (index into `vars`, x_τ).
    /// Without invariants this is θ^κ itself.
    fn state_with_invariants(
        &mut self,
        vars: &[LoopVar],
        theta_kappa: &Substitution,
        invariants: &invariant::Invariants,
        tau: ExprId,
    ) -> (Substitution, Vec<(usize, ExprId)>) {
        let mut at_tau = theta_kappa.clone();
        let mut symbols = vec![];
        if invariants.facts.is_empty() {
            return (at_tau, symbols);
        }
        let tau_name = Printer::new(&self.pool).print(tau);
        for (k, v) in vars.iter().enumerate() {
            let star = theta_kappa.get(v.symbol).is_none_or(|e| self.pool.is_star(e));
            if !star || !v.carried || !matches!(v.var, Var::Value(_)) {
                continue;
            }
            if !invariants.facts.iter().any(|f| mentions(&self.pool, f.formula, &[v.symbol])) {
                continue;
            }
            self.next_aux += 1;
            let x = self.pool.symbol(&format!("{}@{tau_name}′{}", v.name, self.next_aux), self.pool.sort(v.symbol), SymbolKind::Aux);
            at_tau.insert(v.symbol, x);
            symbols.push((k, x));
        }
        (at_tau, symbols)
    }

    /// Conjoins to an iteration's tests (`body`, at iteration τ) the invariants at τ about the
    /// x_τ symbols of [`Self::state_with_invariants`] that the tests compare, and returns the
    /// symbols the iteration's ∃ binds: `fresh` and the x_τ now in `body`.
    ///
    /// Sound: every iteration starts in a state the invariants hold in (a relational one holds
    /// at the entry by construction and is preserved; a conditional one when it held at the
    /// entry), so the actual values at iteration τ are witnesses of the ∃. Only stronger than
    /// leaving those tests out, as a ⋆ test is.
    #[allow(clippy::too_many_arguments)]
    fn invariants_at_tau(
        &mut self,
        vars: &[LoopVar],
        invariants: &invariant::Invariants,
        at_tau: &Substitution,
        kappa_to_tau: &Substitution,
        symbols: &[(usize, ExprId)],
        fresh: &[ExprId],
        body: &mut Vec<ExprId>,
    ) -> Vec<ExprId> {
        let compared: Vec<usize> = symbols.iter().filter(|&&(_, x)| body.iter().any(|&t| mentions(&self.pool, t, &[x]))).map(|&(k, _)| k).collect();
        let mut bound = fresh.to_vec();
        if compared.is_empty() {
            return bound;
        }
        let compared_symbols: Vec<ExprId> = compared.iter().map(|&k| vars[k].symbol).collect();
        for fact in invariants.at_state(&mut self.pool, at_tau, |pool, f| mentions(pool, f.formula, &compared_symbols)) {
            let fact = kappa_to_tau.apply(&mut self.pool, fact);
            push_test(&self.pool, body, fact);
        }
        bound.extend(symbols.iter().map(|&(_, x)| x).filter(|&x| body.iter().any(|&t| mentions(&self.pool, t, &[x]))));
        bound
    }

    /// The invariants as facts after the loop, over the loop-entry symbols: each variable they
    /// constrain that is ⋆ after the loop gets a fresh existential symbol (in `after` and `aux`).
    fn invariant_facts(
        &mut self,
        vars: &[LoopVar],
        after: &mut [Option<ExprId>],
        uniform_after: &[(usize, ExprId)],
        aux: &mut Vec<ExprId>,
        invariants: &invariant::Invariants,
    ) -> Vec<ExprId> {
        if invariants.facts.is_empty() {
            return vec![];
        }
        // Current values ↦ the values after the loop; entry copies ↦ the entry symbols.
        let mut to_after = Substitution::new();
        for (k, v) in vars.iter().enumerate() {
            if !v.carried || !matches!(v.var, Var::Value(_)) {
                continue;
            }
            let value = match uniform_after.iter().find(|(j, _)| *j == k) {
                Some((_, e)) => *e,
                None => match after[k] {
                    Some(e) => e,
                    None => {
                        if !invariants.facts.iter().any(|f| mentions(&self.pool, f.formula, &[v.symbol])) {
                            continue;
                        }
                        self.next_aux += 1;
                        let a = self.pool.symbol(&format!("{}′{}", v.name, self.next_aux), self.pool.sort(v.symbol), SymbolKind::Aux);
                        after[k] = Some(a);
                        aux.push(a);
                        a
                    }
                },
            };
            to_after.insert(v.symbol, value);
        }
        invariants.at_state(&mut self.pool, &to_after, |_, _| true)
    }
}

/// An iteration count in closed form: when one of a few candidates built from the comparisons of
/// the continuation condition `c` passes the recurrence check
///     (¬c(s) → E(s) = 0) ∧ (c(s) → E(s) = 1 + E(step(s)))
/// for every state s, every terminating run iterates exactly E(s) times (induction on the real
/// count). The check is quantifier-free and exact on bit-vectors: wrap-around can only make it fail.
fn closed_form(pool: &mut crate::expr::ExprPool, tests: &[ExprId], step: &Substitution, budget: &mut CheckBudget) -> Option<ExprId> {
    use crate::expr::{BvOp, Expr};
    if tests.is_empty() {
        return None;
    }
    let c = pool.and(tests.iter().copied());
    if matches!(pool.get(c), Expr::Forall(..) | Expr::Exists(..)) {
        return None;
    }
    // A test of memory cells or stream values that move with the iteration (`A[i] != 0`) makes
    // the count depend on data: no candidate can pass, and each check would cost solver time.
    if tests.iter().any(|&t| moving_reads(pool, t, step)) {
        return None;
    }
    let mut candidates = vec![];
    for &t in tests {
        if let Expr::Cmp(_, a, b) = pool.get(t).clone() {
            let Sort::Bv(w) = pool.sort(a) else { continue };
            for (x, y) in [(b, a), (a, b)] {
                let d = pool.bin(BvOp::Sub, x, y);
                let d = if w < 64 { pool.zext(d, 64) } else { pool.trunc(d, 64) };
                for k in [0u64, 1] {
                    let kk = pool.bv(64, k);
                    let n = pool.bin(BvOp::Add, d, kk);
                    let zero = pool.bv(64, 0);
                    candidates.push(pool.ite(c, n, zero));
                }
            }
        }
    }
    let zero = pool.bv(64, 0);
    let one = pool.bv(64, 1);
    for e in candidates {
        let next = step.apply(pool, e);
        let plus = pool.bin(BvOp::Add, next, one);
        let continues = pool.eq(e, plus);
        let stops = pool.eq(e, zero);
        let nc = pool.not(c);
        let a = pool.implies(nc, stops);
        let b = pool.implies(c, continues);
        let ok = pool.and([a, b]);
        if valid(pool, ok, budget) {
            return Some(e);
        }
    }
    None
}

/// Whether `e` reads an array (memory or the nondet stream) at a place or in a state that one
/// iteration (`step`) changes.
fn moving_reads(pool: &mut crate::expr::ExprPool, e: ExprId, step: &Substitution) -> bool {
    use crate::expr::Expr;
    let mut stack = vec![e];
    let mut seen = std::collections::HashSet::new();
    while let Some(x) = stack.pop() {
        if !seen.insert(x) {
            continue;
        }
        match pool.get(x).clone() {
            Expr::Load { .. } | Expr::Select(..) => {
                if step.apply(pool, x) != x {
                    return true;
                }
            }
            node => stack.extend(crate::expr::children_of(&node)),
        }
    }
    false
}

/// Whether `f` holds in every state (its negation is unsat within a short time).
fn valid(pool: &mut crate::expr::ExprPool, f: ExprId, budget: &mut CheckBudget) -> bool {
    let bad = pool.not(f);
    budget.unsat(pool, bad, 500)
}

/// Solver time for the checks that only sharpen summaries (pruning infeasible iterations,
/// closed-form counts). Each check gets at most its own limit and what is left of the budget;
/// once it is spent the checks answer "not shown", which is always sound: an iteration is kept,
/// no count is claimed. Without it, a function with many loop paths spent minutes here.
/// Both are CPU time of the building thread (see [`crate::solve::cpu_limit`]): measured in
/// wall time, a check that decides alone could run out of time on a busy machine (beside the
/// other engines, or other analyses under `make -j`), so the APC depended on the load.
#[derive(Clone, Debug)]
pub struct CheckBudget {
    left: std::time::Duration,
}

/// Concrete assignments tried before an unsat check goes to the solver.
pub(crate) const TRIALS: u64 = 32;

impl Default for CheckBudget {
    fn default() -> Self {
        CheckBudget { left: std::time::Duration::from_secs(3) }
    }
}

use crate::solve::cpu_limit::thread_cpu_time;

impl CheckBudget {
    /// A budget of `left` in all.
    pub fn with(left: std::time::Duration) -> Self {
        CheckBudget { left }
    }

    /// Runs `f` with a `fraction` of what is left, and charges what it spent: one consumer (a
    /// loop, a phase) cannot spend everything the next one needs.
    pub fn share<R>(&mut self, fraction: f64, f: impl FnOnce(&mut CheckBudget) -> R) -> R {
        let given = self.left.mul_f64(fraction);
        let mut sub = CheckBudget { left: given };
        let r = f(&mut sub);
        self.left = self.left.saturating_sub(given.saturating_sub(sub.left));
        r
    }

    /// Checks `f` within `limit_ms` and the budget: `None` when the budget is spent. `portfolio`:
    /// with Z3's default solver ([`crate::solve::check_portfolio`]).
    pub fn check<T>(
        &mut self,
        pool: &crate::expr::ExprPool,
        f: ExprId,
        limit_ms: u64,
        portfolio: bool,
        extract: impl FnOnce(&mut crate::solve::ModelView) -> T,
    ) -> Option<crate::solve::Outcome<T>> {
        let limit = self.left.min(std::time::Duration::from_millis(limit_ms));
        if limit.is_zero() {
            return None;
        }
        let t = thread_cpu_time();
        let answer = if portfolio { crate::solve::check_portfolio(pool, f, limit, extract) } else { crate::solve::check(pool, f, limit, extract) };
        let spent = thread_cpu_time().saturating_sub(t);
        self.left = self.left.saturating_sub(spent);
        tracing::trace!(cpu_seconds = spent.as_secs_f64(), unsat = matches!(answer.outcome, crate::solve::Outcome::Unsat), definite = answer.outcome.is_definite(), f = %crate::expr::Printer::new(pool).print(f), "summary check");
        Some(answer.outcome)
    }

    /// Whether `f` is unsatisfiable, shown within `limit_ms` and the budget.
    /// A concrete assignment that satisfies `f`, or a literal next to its negation, answers at
    /// once, without the solver (see [`crate::expr::eval`]): the first query of a thread costs
    /// tens of milliseconds.
    pub fn unsat(&mut self, pool: &crate::expr::ExprPool, f: ExprId, limit_ms: u64) -> bool {
        if self.left.is_zero() {
            return false;
        }
        if crate::expr::eval::contradictory(pool, f) {
            return true;
        }
        // The trials' time is charged too: on a large formula they are not free.
        let t = thread_cpu_time();
        let found = crate::expr::eval::satisfiable_by_trial(pool, f, TRIALS);
        self.left = self.left.saturating_sub(thread_cpu_time().saturating_sub(t));
        if found {
            return false;
        }
        matches!(self.check(pool, f, limit_ms, false, |_| ()), Some(crate::solve::Outcome::Unsat))
    }
}
