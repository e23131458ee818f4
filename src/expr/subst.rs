//! Simultaneous substitution e[x⃗/e⃗], and with it θ⟨e⟩ (replace each initial-value symbol v̲ by θ(v)).

use super::pool::children;
use super::{ExprId, ExprPool};
use std::collections::HashMap;

/// A simultaneous substitution of expressions (usually symbols) by expressions.
#[derive(Clone, Debug, Default)]
pub struct Substitution {
    map: HashMap<ExprId, ExprId>,
}

impl Substitution {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, from: ExprId, to: ExprId) {
        self.map.insert(from, to);
    }

    pub fn get(&self, from: ExprId) -> Option<ExprId> {
        self.map.get(&from).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    fn binds_mapped(&self, node: &super::Expr) -> bool {
        use super::Expr;
        match node {
            Expr::Lambda { var, .. } => self.map.contains_key(var),
            Expr::Forall(vs, _) | Expr::Exists(vs, _) => vs.iter().any(|v| self.map.contains_key(v)),
            _ => false,
        }
    }

    /// Applies the substitution to `root`, rebuilding through the simplifying constructors (so ⋆
    /// propagates and constants fold). Iterative: deep store chains do not overflow the stack.
    pub fn apply(&self, pool: &mut ExprPool, root: ExprId) -> ExprId {
        let mut memo: HashMap<ExprId, ExprId> = HashMap::new();
        self.apply_memo(pool, root, &mut memo)
    }

    fn apply_memo(&self, pool: &mut ExprPool, root: ExprId, memo: &mut HashMap<ExprId, ExprId>) -> ExprId {
        if self.map.is_empty() {
            return root;
        }
        // (node, children pushed?)
        let mut stack = vec![(root, false)];
        while let Some((e, expanded)) = stack.pop() {
            if memo.contains_key(&e) {
                continue;
            }
            if let Some(to) = self.get(e) {
                memo.insert(e, to);
                continue;
            }
            let node = pool.get(e).clone();
            let kids = children(&node);
            // A binder of a substituted symbol shadows it: its body keeps its own variable
            // (beta-reducing a read of λρ. body whose body holds another λρ).
            if kids.is_empty() || self.binds_mapped(&node) {
                memo.insert(e, e);
                continue;
            }
            if !expanded {
                stack.push((e, true));
                stack.extend(kids.iter().filter(|k| !memo.contains_key(k)).map(|&k| (k, false)));
                continue;
            }
            let new_kids: Vec<ExprId> = kids.iter().map(|k| memo[k]).collect();
            let out = if new_kids == kids { e } else { pool.rebuild(&node, &new_kids) };
            memo.insert(e, out);
        }
        memo[&root]
    }
}

/// Whether `e` mentions any of `symbols` (a free occurrence, as bound variables are distinct).
pub fn mentions(pool: &ExprPool, e: ExprId, symbols: &[ExprId]) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if symbols.contains(&x) {
            return true;
        }
        if seen.insert(x) {
            stack.extend(children(pool.get(x)));
        }
    }
    false
}

/// Whether `e` contains a quantifier.
pub fn quantified(pool: &ExprPool, e: ExprId) -> bool {
    let mut found = false;
    visit(pool, e, |_, node| {
        found |= matches!(node, super::Expr::Forall(..) | super::Expr::Exists(..));
        !found
    });
    found
}

/// Whether `e` alternates quantifiers: a ∃ inside a ∀, or a ∀ inside a ∃, counted after
/// negations (¬∃ is a ∀). An APC over nested loops that read memory has such a formula
/// (∀τ2 … ∃κ1 … ∀τ1), and Z3's quantifier instantiation rarely decides one within a
/// second. Only a measure of cost, for scheduling: it never changes what is solved.
pub fn alternates_quantifiers(pool: &ExprPool, e: ExprId) -> bool {
    // (node, polarity, the kind of the innermost enclosing quantifier: `Some(true)` ∀).
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![(e, true, None::<bool>)];
    while let Some((x, positive, inside)) = stack.pop() {
        if !seen.insert((x, positive, inside)) {
            continue;
        }
        let node = pool.get(x);
        let (positive, inside) = match node {
            super::Expr::Not(_) => (!positive, inside),
            super::Expr::Forall(..) | super::Expr::Exists(..) => {
                let universal = matches!(node, super::Expr::Forall(..)) == positive;
                if inside.is_some_and(|outer| outer != universal) {
                    return true;
                }
                (positive, Some(universal))
            }
            _ => (positive, inside),
        };
        stack.extend(children(node).into_iter().map(|c| (c, positive, inside)));
    }
    false
}

/// A quantifier-free weakening of `e`: every subformula with a quantifier that is not a
/// Boolean connective (∧, ∨, ¬) is replaced by `true` where it occurs positively and by
/// `false` where negatively, so `e` implies the result. An unsatisfiable weakening proves `e`
/// unsatisfiable, with a quantifier-free query.
pub fn without_quantifiers(pool: &mut ExprPool, e: ExprId) -> ExprId {
    /// Deeper nesting of connectives than this is weakened as a whole (no recursion depth
    /// that grows with the formula).
    const MAX_DEPTH: usize = 256;
    fn go(pool: &mut ExprPool, e: ExprId, positive: bool, depth: usize, memo: &mut HashMap<(ExprId, bool), ExprId>) -> ExprId {
        if let Some(&r) = memo.get(&(e, positive)) {
            return r;
        }
        if !quantified(pool, e) {
            return e;
        }
        let r = match pool.get(e).clone() {
            _ if depth >= MAX_DEPTH => pool.bool(positive),
            super::Expr::Not(x) => {
                let x = go(pool, x, !positive, depth + 1, memo);
                pool.not(x)
            }
            super::Expr::And(xs) => {
                let xs: Vec<ExprId> = xs.iter().map(|&x| go(pool, x, positive, depth + 1, memo)).collect();
                pool.and(xs)
            }
            super::Expr::Or(xs) => {
                let xs: Vec<ExprId> = xs.iter().map(|&x| go(pool, x, positive, depth + 1, memo)).collect();
                pool.or(xs)
            }
            _ => pool.bool(positive),
        };
        memo.insert((e, positive), r);
        r
    }
    go(pool, e, true, 0, &mut HashMap::new())
}

/// Calls `f` on every node of `root` once (shared subterms once), parents before children;
/// stops early when `f` returns `false`.
pub fn visit(pool: &ExprPool, root: ExprId, mut f: impl FnMut(ExprId, &super::Expr) -> bool) {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![root];
    while let Some(x) = stack.pop() {
        if !seen.insert(x) {
            continue;
        }
        let node = pool.get(x);
        if !f(x, node) {
            return;
        }
        stack.extend(children(node));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{BvOp, Expr, Sort, SymbolKind};
    use crate::ops::IntPredicate;

    #[test]
    fn substitution_is_simultaneous() {
        let mut p = ExprPool::new();
        let x = p.symbol("x", Sort::Bv(32), SymbolKind::Input);
        let y = p.symbol("y", Sort::Bv(32), SymbolKind::Input);
        let e = p.bin(BvOp::Sub, x, y);
        let mut s = Substitution::new();
        s.insert(x, y);
        s.insert(y, x);
        let r = s.apply(&mut p, e);
        assert_eq!(p.get(r), &Expr::Bin(BvOp::Sub, y, x), "x−y [x/y, y/x] = y−x, not y−y");
    }

    #[test]
    fn the_weakening_drops_quantified_parts_by_polarity() {
        let mut p = ExprPool::new();
        let x = p.symbol("x", Sort::Bv(32), SymbolKind::Input);
        let t = p.symbol("τ1", Sort::Bv(32), SymbolKind::Tau(1));
        let ten = p.bv(32, 10);
        let lt = p.cmp(IntPredicate::Slt, t, x);
        let all = p.forall(vec![t], lt);
        let small = p.cmp(IntPredicate::Slt, x, ten);
        // x < 10 ∧ ∀τ (τ < x)  ⇒  x < 10
        let e = p.and([small, all]);
        let w = without_quantifiers(&mut p, e);
        assert_eq!(w, small);
        // ¬(∀τ (τ < x) ∧ x < 10): whatever form the pool gives the negation, the quantified
        // part is weakened away on the side that makes the result weaker: here to `true`
        // (¬∀ is an ∃, a positive occurrence), never to ¬(x < 10).
        let both = p.and([all, small]);
        let e = p.not(both);
        let w = without_quantifiers(&mut p, e);
        assert_eq!(p.as_bool(w), Some(true), "{:?}", p.get(w));
        // quantifier-free formulas are untouched; a bare quantifier becomes true
        assert_eq!(without_quantifiers(&mut p, small), small);
        let w = without_quantifiers(&mut p, all);
        assert_eq!(p.as_bool(w), Some(true));
    }

    #[test]
    fn alternation_is_a_quantifier_of_the_other_kind_inside_one_after_negations() {
        let mut p = ExprPool::new();
        let x = p.symbol("x", Sort::Bv(32), SymbolKind::Input);
        let t = p.symbol("τ1", Sort::Bv(32), SymbolKind::Tau(1));
        let u = p.symbol("τ2", Sort::Bv(32), SymbolKind::Tau(2));
        let tx = p.cmp(IntPredicate::Slt, t, x);
        let ut = p.cmp(IntPredicate::Slt, u, t);
        let inner = p.and([tx, ut]);
        let some_u = p.exists(vec![u], inner);
        let all_u = p.forall(vec![u], inner);
        // ∀τ1 (τ1 < x): one quantifier
        let flat = p.forall(vec![t], tx);
        assert!(!alternates_quantifiers(&p, flat));
        // ∀τ1 ∃τ2 (…): alternation
        let e = p.forall(vec![t], some_u);
        assert!(alternates_quantifiers(&p, e));
        // ∀τ1 ∀τ2 (…): one block of universals
        let e = p.forall(vec![t], all_u);
        assert!(!alternates_quantifiers(&p, e));
        // ∀τ1 ¬∀τ2 (…): the negated ∀ is an ∃
        let not_all = p.not(all_u);
        let e = p.forall(vec![t], not_all);
        assert!(alternates_quantifiers(&p, e));
        // ∀ and ∃ side by side, neither inside the other
        let all_t = p.forall(vec![t], tx);
        let e = p.and([all_t, some_u]);
        assert!(!alternates_quantifiers(&p, e));
    }

    #[test]
    fn substitution_simplifies_and_propagates_star() {
        let mut p = ExprPool::new();
        let x = p.symbol("x", Sort::Bv(32), SymbolKind::Input);
        let k = p.symbol("κ1", Sort::Bv(32), SymbolKind::Kappa(1));
        let sum = p.bin(BvOp::Add, x, k);
        let ten = p.bv(32, 10);
        let test = p.cmp(IntPredicate::Slt, sum, ten);
        // [x/3, κ1/4]: 3 + 4 < 10 folds to true
        let (c3, c4) = (p.bv(32, 3), p.bv(32, 4));
        let mut s = Substitution::new();
        s.insert(x, c3);
        s.insert(k, c4);
        let r = s.apply(&mut p, test);
        assert_eq!(p.as_bool(r), Some(true));
        // [x/⋆]: the test becomes ⋆
        let star = p.star(Sort::Bv(32));
        let mut s = Substitution::new();
        s.insert(x, star);
        let r = s.apply(&mut p, test);
        assert!(p.is_star(r));
    }

    #[test]
    fn deep_chains_do_not_overflow() {
        let mut p = ExprPool::new();
        let x = p.symbol("x", Sort::Bv(64), SymbolKind::Input);
        let mut e = x;
        for i in 0..100_000u64 {
            let c = p.symbol(&format!("c{}", i % 7), Sort::Bv(64), SymbolKind::Input);
            e = p.bin(BvOp::Xor, e, c);
        }
        let zero = p.bv(64, 0);
        let mut s = Substitution::new();
        s.insert(x, zero);
        let r = s.apply(&mut p, e);
        assert_ne!(r, e);
        assert!(mentions(&p, e, &[x]) && !mentions(&p, r, &[x]));
    }
}
