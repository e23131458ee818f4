//! Applying a loop's summary at the loop's entry: every value the loop defines becomes ⋆, then
//! θ^κ is assigned, and the coverage check confirms nothing was left out.

use super::{LoopSummary, PtrBinding, SummaryKey, Var};
use crate::apc::ApcBuilder;
use crate::cfg::LoopId;
use crate::expr::{ExprId, Sort, Substitution};
use crate::ir::{Operand, Ty, ValueId};
use crate::symex::{ObjectId, State, SymVal};
use std::collections::BTreeSet;
use std::sync::Arc as Rc;

impl ApcBuilder<'_> {
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
                let s = Rc::new(self.summarise(loop_id, &phis, &invariant, &key_ptrs, st));
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
}
