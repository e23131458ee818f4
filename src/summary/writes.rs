//! The values arrays hold after a loop: the last write of each byte, fills and nested fills.

use super::{fill, Iterations, LoopVar, Var, EXACT_WRITES};
use crate::apc::ApcBuilder;
use crate::expr::{mentions, ExprId, Printer, Sort, Substitution, SymbolKind};
use tracing::debug;

impl ApcBuilder<'_> {
    /// Section 4's second array rule, made sound and, for short runs, exact: memory written on
    /// one iteration backbone π_i only, by stores whose offsets and values depend on no counter
    /// but κ_i. After t such iterations it is M_t = M_{t−1}{o(t − 1) ↦ v(t − 1)}, M_0 = M̲ (no
    /// other backbone writes it). For κ_i ≤ [`EXACT_WRITES`] the summary is that chain
    /// (ite(κ_i = 0, M_0, ite(κ_i = 1, M_1, …))), so a fill loop `A[i] = nondet()` ties every
    /// element to its input; beyond, the memory is what the last iteration left:
    /// prev{o(κ_i − 1) ↦ v(κ_i − 1)}, where `prev` (a fresh array) is the memory before that
    /// iteration. (Reusing M̲ for `prev`, as the paper's sketch does, would forget the earlier
    /// iterations' writes.) A constant count (a closed form over constants) selects its M_t.
    pub(super) fn last_writes(&mut self, sym: ExprId, k: usize, prev: ExprId, it: &Iterations) -> Option<ExprId> {
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
    pub(super) fn mixed_fill(&mut self, sym: ExprId, k: usize, prev: ExprId, it: &Iterations) -> Option<ExprId> {
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
}
