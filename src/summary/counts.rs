//! Iteration counts: how often a loop's iterations run (uniform increments, closed forms, the
//! total iteration condition) and the state at a given iteration.

use super::summarise::{closed_form, valid};
use super::{rules, Iterations, LoopVar};
use crate::apc::{push_test, ApcBuilder};
use crate::expr::{mentions, ExprId, Sort, Substitution, SymbolKind};

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
    pub(super) fn iteration_count(
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

    /// θ^κ as a substitution: the state at the start of iteration κ (⋆ where it is unknown).
    pub(super) fn state_at_iteration_start(&mut self, it: &Iterations) -> Substitution {
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
    pub(super) fn state_at_total_index(&mut self, vars: &[LoopVar], iterated: &[Option<ExprId>], thetas: &[Vec<Option<ExprId>>], t: ExprId) -> (Substitution, bool) {
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

    /// A sound strengthening of φ^κ for loops with several iteration backbones: a variable that
    /// changes by the same loop-invariant d on every backbone equals v̲ + d·t after t iterations in
    /// total, whatever their mix; so every test shared by all backbones holds at each total index:
    /// ∀τ (τ < Σκ → test[v̲ ↦ v̲ + d·τ]). Without it the per-backbone parts, each with its own ∃τ
    /// for the other counters, cannot bound Σκ under wrap-around arithmetic.
    pub(super) fn total_iteration_condition(
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
}
