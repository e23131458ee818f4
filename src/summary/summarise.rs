//! Computing a loop's summary: the iterated state θ^κ and the looping condition φ^κ, with the
//! invariants the rules leave ⋆ and closed-form counts.

use super::budget::CheckBudget;
use super::{invariant, monotone, rules, Iterations, LoopSummary, LoopVar, PtrBinding, Var};
use crate::apc::{push_test, ApcBuilder};
use crate::cfg::LoopId;
use crate::expr::{mentions, ExprId, Printer, Sort, Substitution, SymbolKind};
use crate::ir::{Ty, ValueId};
use crate::symex::{ObjectId, State, SymVal};
use tracing::debug;

impl ApcBuilder<'_> {
    /// processLoop: θ^κ and φ^κ of the loop, over symbols for the values at its entry.
    /// `at_entry`: the state at the entry being summarised for, from which polynomial
    /// invariants are sampled (the summary itself does not depend on it).
    pub(super) fn summarise(&mut self, loop_id: LoopId, phis: &[ValueId], invariant: &[ValueId], ptrs: &[(ValueId, PtrBinding)], at_entry: &State) -> LoopSummary {
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
            // Past the deadline no solver call: the APC is marked incomplete and yields no verdict.
            let possible = self.pool.as_bool(cond) != Some(false) && (self.out_of_time() || !self.check_budget.unsat(&self.pool, cond, 300));
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
            let entry: Vec<Option<ExprId>> = vars
                .iter()
                .map(|v| match &v.var {
                    Var::Value(x) => match at_entry.values.get(x) {
                        Some(SymVal::Int(e)) if !self.pool.is_star(*e) => Some(*e),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            // Three quarters of what is left per loop: an inner loop does not starve the outer one.
            let pool = &mut self.pool;
            self.invariant_budget.share(0.75, |b| invariant::infer(pool, b, &vars, &steps, &wanted, &entry))
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
            if self.out_of_time() {
                // The APC is incomplete from here (and yields no verdict): stop at once.
                break;
            }
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
    pub(super) fn invariant_facts(
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
pub(super) fn closed_form(pool: &mut crate::expr::ExprPool, tests: &[ExprId], step: &Substitution, budget: &mut CheckBudget) -> Option<ExprId> {
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
pub(super) fn valid(pool: &mut crate::expr::ExprPool, f: ExprId, budget: &mut CheckBudget) -> bool {
    let bad = pool.not(f);
    budget.unsat(pool, bad, 500)
}
