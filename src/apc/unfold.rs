//! APC^K (section 6 of the APC paper): every ∀τ is instantiated for τ = 0 … K−1 only (each
//! instance keeps its guard τ < κ), and every ∃ in a positive position becomes fresh constants.
//! Counters stay unbounded. Dropping the instances τ ≥ K makes APC^K weaker than the APC, so it
//! is still a necessary condition: its unsatisfiability proves the target unreachable.
//!
//! The paper's looping condition does not check that the admissible counter values of different
//! iterations fit together. In the unfolding they can be made to, soundly: the witness τ_j#(i,t)
//! of instance t of backbone i's part means "π_j iterations before the t-th π_i iteration", and
//! every real run satisfies, for its actual values: monotonicity in t, distinct overall positions
//! P_i(t) = t + Σ_j τ_j#(i,t), and agreement between viewpoints, P_i(t) < P_i′(t′) ⇔ t < τ_i#(i′,t′).
//! Adding these keeps APC^K necessary and makes its models one consistent interleaving.

use crate::expr::{Expr, ExprId, ExprPool, Substitution, SymbolKind};
use std::collections::HashMap;

/// Unfolds the quantifiers of `root` with bound `k`; with `consistent`, the instances of each
/// loop's looping condition also get the interleaving constraints (better models, harder query).
pub fn unfold(pool: &mut ExprPool, root: ExprId, k: u32, consistent: bool) -> ExprId {
    unfold_within(pool, root, k, consistent, usize::MAX).expect("no node limit")
}

/// [`unfold`], giving up (`None`) once it has added `max_new_nodes` expressions to the pool:
/// nested ∀ multiply their K instances (K^depth copies), which took gigabytes on programs with
/// three nested loops. Without APC^K the quantified APC still answers.
pub fn unfold_within(pool: &mut ExprPool, root: ExprId, k: u32, consistent: bool, max_new_nodes: usize) -> Option<ExprId> {
    unfold_until(pool, root, k, consistent, max_new_nodes, None)
}

/// [`unfold_within`] that also gives up at `deadline` (the analysis's `--timeout`).
pub fn unfold_until(pool: &mut ExprPool, root: ExprId, k: u32, consistent: bool, max_new_nodes: usize, deadline: Option<std::time::Instant>) -> Option<ExprId> {
    let limit = pool.len().saturating_add(max_new_nodes);
    let mut u = Unfolder { k, consistent, fresh: 0, memo: HashMap::new(), limit, exceeded: false, deadline };
    let r = u.go(pool, root);
    (!u.exceeded).then_some(r)
}

struct Unfolder {
    k: u32,
    consistent: bool,
    fresh: u32,
    memo: HashMap<ExprId, ExprId>,
    /// Pool size at which to give up, and whether it (or the deadline) was reached.
    limit: usize,
    exceeded: bool,
    deadline: Option<std::time::Instant>,
}

/// One part ∀τ_i (τ_i ≥ κ_i ∨ ∃τ⃗ (∧ τ_j ≤ κ_j ∧ …)) of a looping condition.
struct Part {
    tau: ExprId,
    kappa: ExprId,
    /// The existential τ_j with their counters κ_j.
    others: Vec<(ExprId, ExprId)>,
    body: ExprId,
    vars: Vec<ExprId>,
}

/// Recognises a looping-condition part (see `summary`).
fn as_part(pool: &ExprPool, e: ExprId) -> Option<Part> {
    let Expr::Forall(bound, inner) = pool.get(e) else { return None };
    let [tau] = bound.as_slice() else { return None };
    let Expr::Or(alts) = pool.get(*inner) else { return None };
    let [guard, ex] = alts.as_slice() else { return None };
    let Expr::Cmp(crate::ir::IntPredicate::Uge, t, kappa) = pool.get(*guard) else { return None };
    if t != tau {
        return None;
    }
    let Expr::Exists(vars, body) = pool.get(*ex) else { return None };
    let Expr::And(conj) = pool.get(*body) else { return None };
    let mut others = vec![];
    for &c in conj {
        if let Expr::Cmp(crate::ir::IntPredicate::Ule, v, k) = pool.get(c) {
            if vars.contains(v) {
                others.push((*v, *k));
            }
        }
    }
    (others.len() == vars.len()).then(|| Part { tau: *tau, kappa: *kappa, others, body: *body, vars: vars.clone() })
}

/// Groups of parts wider than this, or bounds K above this, are unfolded without the
/// consistency constraints (their number grows as K² per pair of parts).
const MAX_CONSISTENT_PARTS: usize = 4;
const MAX_CONSISTENT_K: u32 = 64;

impl Unfolder {
    /// A conjunction: looping-condition parts of one loop are unfolded together, with the
    /// consistency constraints; everything else as usual.
    fn conjunction(&mut self, pool: &mut ExprPool, xs: &[ExprId]) -> ExprId {
        // The parts of one loop application share exactly one set of counters {κ_i} ∪ {κ_j};
        // conjunctions are flattened, so parts of other loops may stand beside them.
        type Group = (Vec<ExprId>, Vec<(usize, Part)>);
        let mut groups: Vec<Group> = vec![];
        if self.consistent && self.k <= MAX_CONSISTENT_K {
            for (i, &x) in xs.iter().enumerate() {
                let Some(part) = as_part(pool, x) else { continue };
                let mut key: Vec<ExprId> = std::iter::once(part.kappa).chain(part.others.iter().map(|(_, k)| *k)).collect();
                key.sort();
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, g)) => g.push((i, part)),
                    None => groups.push((key, vec![(i, part)])),
                }
            }
        }
        groups.retain(|(_, g)| g.len() >= 2 && g.len() <= MAX_CONSISTENT_PARTS);
        let grouped: Vec<usize> = groups.iter().flat_map(|(_, g)| g.iter().map(|(i, _)| *i)).collect();
        let mut out = vec![];
        for (i, &x) in xs.iter().enumerate() {
            if !grouped.contains(&i) {
                out.push(self.go(pool, x));
            }
        }
        for (_, g) in groups {
            let parts: Vec<Part> = g.into_iter().map(|(_, p)| p).collect();
            out.extend(self.consistent_group(pool, &parts));
        }
        pool.and(out)
    }

    fn consistent_group(&mut self, pool: &mut ExprPool, group: &[Part]) -> Vec<ExprId> {
        use crate::expr::{BvOp, Printer};
        use crate::ir::IntPredicate as P;
        let k = self.k;
        let mut out = vec![];
        // witness[i][t]: counter κ ↦ value (own index t for the part's own counter).
        let mut witness: Vec<Vec<Vec<(ExprId, ExprId)>>> = vec![];
        for part in group {
            let mut per_t = vec![];
            for t in 0..k {
                let tv = pool.bv(64, t as u64);
                let mut s = Substitution::new();
                s.insert(part.tau, tv);
                let mut w = vec![(part.kappa, tv)];
                for &(v, kappa) in &part.others {
                    self.fresh += 1;
                    let name = format!("{}#{}", Printer::new(pool).symbol_name(v), self.fresh);
                    let c = pool.symbol(&name, pool.sort(v), SymbolKind::Aux);
                    s.insert(v, c);
                    w.push((kappa, c));
                }
                debug_assert_eq!(part.vars.len(), part.others.len());
                let body = s.apply(pool, part.body);
                let body = self.go(pool, body);
                let inactive = pool.cmp(P::Uge, tv, part.kappa);
                out.push(pool.or([inactive, body]));
                per_t.push(w);
            }
            witness.push(per_t);
        }
        let value = |w: &[(ExprId, ExprId)], kappa: ExprId| w.iter().find(|(k, _)| *k == kappa).map(|(_, v)| *v);
        let position = |pool: &mut ExprPool, w: &[(ExprId, ExprId)]| {
            w.iter().skip(1).fold(w[0].1, |acc, &(_, v)| pool.bin(BvOp::Add, acc, v))
        };
        let positions: Vec<Vec<ExprId>> = witness.iter().map(|per_t| per_t.iter().map(|w| position(pool, w)).collect()).collect();
        let active: Vec<Vec<ExprId>> = group
            .iter()
            .map(|part| (0..k).map(|t| { let tv = pool.bv(64, t as u64); pool.cmp(P::Ult, tv, part.kappa) }).collect())
            .collect();
        for (i, part) in group.iter().enumerate() {
            // Monotone: the later instance saw at least as many iterations of each other backbone.
            for t in 0..k as usize - 1 {
                for &(_, kappa) in &part.others {
                    let (a, b) = (value(&witness[i][t], kappa).unwrap(), value(&witness[i][t + 1], kappa).unwrap());
                    let le = pool.cmp(P::Ule, a, b);
                    out.push(pool.implies(active[i][t + 1], le));
                }
            }
            // Distinct positions, and agreement with the other parts' view.
            for i2 in 0..group.len() {
                if i2 <= i {
                    continue;
                }
                for t in 0..k as usize {
                    for t2 in 0..k as usize {
                        let both = pool.and([active[i][t], active[i2][t2]]);
                        let (p, p2) = (positions[i][t], positions[i2][t2]);
                        let distinct = pool.cmp(P::Ne, p, p2);
                        let before = pool.cmp(P::Ult, p, p2);
                        let tv = pool.bv(64, t as u64);
                        let seen = value(&witness[i2][t2], part.kappa).unwrap();
                        let counted = pool.cmp(P::Ult, tv, seen);
                        let agree = pool.eq(before, counted);
                        let both_facts = pool.and([distinct, agree]);
                        out.push(pool.implies(both, both_facts));
                    }
                }
            }
        }
        out
    }

    /// `e` is in a positive position (conjunctions and disjunctions only lead here).
    fn go(&mut self, pool: &mut ExprPool, e: ExprId) -> ExprId {
        if let Some(&r) = self.memo.get(&e) {
            return r;
        }
        if self.exceeded || pool.len() > self.limit || self.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            self.exceeded = true;
            return e;
        }
        let r = match pool.get(e).clone() {
            Expr::And(xs) => self.conjunction(pool, &xs),
            Expr::Or(xs) => {
                let ys: Vec<ExprId> = xs.iter().map(|&x| self.go(pool, x)).collect();
                pool.or(ys)
            }
            Expr::Forall(vars, body) => {
                // Instances for every combination of 0..K (one variable in practice).
                let mut instances = vec![Substitution::new()];
                for &v in &vars {
                    let w = pool.width(v);
                    let mut next = vec![];
                    for s in &instances {
                        for t in 0..self.k {
                            let mut s2 = s.clone();
                            s2.insert(v, pool.bv(w, t as u64));
                            next.push(s2);
                        }
                    }
                    instances = next;
                }
                let parts: Vec<ExprId> = instances
                    .iter()
                    .map(|s| {
                        let inst = s.apply(pool, body);
                        self.go(pool, inst)
                    })
                    .collect();
                pool.and(parts)
            }
            Expr::Exists(vars, body) => {
                let mut s = Substitution::new();
                for &v in &vars {
                    self.fresh += 1;
                    let name = format!("{}#{}", crate::expr::Printer::new(pool).symbol_name(v), self.fresh);
                    let sort = pool.sort(v);
                    let c = pool.symbol(&name, sort, SymbolKind::Aux);
                    s.insert(v, c);
                }
                let inst = s.apply(pool, body);
                self.go(pool, inst)
            }
            // Atoms, and anything under a negation, stay as they are (sound: still quantified).
            _ => e,
        };
        // Existentials must get fresh constants per occurrence: do not memoise through them.
        if !matches!(pool.get(e), Expr::Exists(..)) {
            self.memo.insert(e, r);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{Printer, Sort};
    use crate::ir::IntPredicate;

    /// The two parts ∀τa (τa ≥ κa ∨ ∃τb (τb ≤ κb ∧ x < n)) and the symmetric one, for counters
    /// named `a` and `b`.
    fn loop_parts(p: &mut ExprPool, a: &str, b: &str) -> (ExprId, ExprId) {
        let ka = p.symbol(&format!("κ{a}"), Sort::Bv(64), SymbolKind::Kappa(1));
        let kb = p.symbol(&format!("κ{b}"), Sort::Bv(64), SymbolKind::Kappa(2));
        let ta = p.symbol(&format!("τ{a}"), Sort::Bv(64), SymbolKind::Tau(1));
        let tb = p.symbol(&format!("τ{b}"), Sort::Bv(64), SymbolKind::Tau(2));
        let n = p.symbol("n", Sort::Bv(64), SymbolKind::Input);
        let mut part = |own_t: ExprId, own_k: ExprId, other_t: ExprId, other_k: ExprId| {
            let sum = p.bin(crate::expr::BvOp::Add, own_t, other_t);
            let body = p.cmp(IntPredicate::Ult, sum, n);
            let le = p.cmp(IntPredicate::Ule, other_t, other_k);
            let conj = p.and([le, body]);
            let ex = p.exists(vec![other_t], conj);
            let guard = p.cmp(IntPredicate::Uge, own_t, own_k);
            let or = p.or([guard, ex]);
            p.forall(vec![own_t], or)
        };
        (part(ta, ka, tb, kb), part(tb, kb, ta, ka))
    }

    #[test]
    fn consistency_ties_the_parts_of_one_loop_only() {
        let mut p = ExprPool::new();
        let (a1, a2) = loop_parts(&mut p, "1", "2");
        let (b1, b2) = loop_parts(&mut p, "3", "4");
        // One flattened conjunction holding the parts of two loops.
        let f = p.and([a1, a2, b1, b2]);
        let g = unfold(&mut p, f, 3, true);
        let s = Printer::new(&p).print(g);
        // Agreement constraints relate witnesses of the same loop: τ1#… with κ2's part …
        assert!(s.contains("κ1") && s.contains("κ2") && s.contains("κ3") && s.contains("κ4"));
        // … and never a position of loop (1,2) with a witness of loop (3,4).
        for part in s.split(" ∧ ") {
            let mixes = (part.contains("κ1") || part.contains("κ2") || part.contains("τ1#") || part.contains("τ2#"))
                && (part.contains("κ3") || part.contains("κ4") || part.contains("τ3#") || part.contains("τ4#"));
            assert!(!mixes, "constraint mixes two loops: {part}");
        }
        // Without consistency the unfolding has fewer conjuncts.
        let plain = unfold(&mut p, f, 3, false);
        let count = |e: ExprId| match p.get(e) {
            Expr::And(xs) => xs.len(),
            _ => 1,
        };
        assert!(count(g) > count(plain));
    }

    #[test]
    fn forall_is_instantiated_and_exists_skolemised() {
        let mut p = ExprPool::new();
        let k = p.symbol("κ1", Sort::Bv(64), SymbolKind::Kappa(1));
        let t = p.symbol("τ1", Sort::Bv(64), SymbolKind::Tau(1));
        let u = p.symbol("τ2", Sort::Bv(64), SymbolKind::Tau(2));
        let n = p.symbol("n", Sort::Bv(64), SymbolKind::Input);
        // ∀τ1 (τ1 ≥ κ1 ∨ ∃τ2 (τ1 + τ2 < n))
        let sum = p.bin(crate::expr::BvOp::Add, t, u);
        let lt = p.cmp(IntPredicate::Ult, sum, n);
        let ex = p.exists(vec![u], lt);
        let guard = p.cmp(IntPredicate::Uge, t, k);
        let body = p.or([guard, ex]);
        let f = p.forall(vec![t], body);
        let g = unfold(&mut p, f, 3, false);
        let s = Printer::new(&p).print(g);
        assert!(!s.contains('∀') && !s.contains('∃'), "{s}");
        assert_eq!(s.matches("κ1").count(), 3, "three guarded instances: {s}");
        // Each instance has its own witness for τ2.
        for i in 1..=3 {
            assert!(s.contains(&format!("τ2#{i}")), "{s}");
        }
        // τ = 0 instance: (0 ≥ κ1) ∨ (τ2#… < n)
        assert!(s.contains("0 ≥ᵤ κ1"), "{s}");
    }
}
