//! APC^K (section 6 of the APC paper): every ∀τ is instantiated for τ = 0 … K−1 only (each
//! instance keeps its guard τ < κ), and every ∃ in a positive position becomes fresh constants.
//! Counters stay unbounded. Dropping the instances τ ≥ K makes APC^K weaker than the APC, so it
//! is still a necessary condition: its unsatisfiability proves the target unreachable.

use crate::expr::{Expr, ExprId, ExprPool, Substitution, SymbolKind};
use std::collections::HashMap;

/// Unfolds the quantifiers of `root` with bound `k`.
pub fn unfold(pool: &mut ExprPool, root: ExprId, k: u32) -> ExprId {
    let mut u = Unfolder { k, fresh: 0, memo: HashMap::new() };
    u.go(pool, root)
}

struct Unfolder {
    k: u32,
    fresh: u32,
    memo: HashMap<ExprId, ExprId>,
}

impl Unfolder {
    /// `e` is in a positive position (conjunctions and disjunctions only lead here).
    fn go(&mut self, pool: &mut ExprPool, e: ExprId) -> ExprId {
        if let Some(&r) = self.memo.get(&e) {
            return r;
        }
        let r = match pool.get(e).clone() {
            Expr::And(xs) => {
                let ys: Vec<ExprId> = xs.iter().map(|&x| self.go(pool, x)).collect();
                pool.and(ys)
            }
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
        let g = unfold(&mut p, f, 3);
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
