//! The iterated symbolic state θ^κ: the four rules of section 3.1 of the APC paper, applied until
//! nothing changes, with bit-vector semantics (a̲ + d·κ is computed modulo the variable's width,
//! which is exact because the program's own arithmetic wraps the same way).

use super::{LoopVar, Var};
use crate::expr::{mentions, BvOp, Expr, ExprId, ExprPool, Sort, Substitution};
use crate::ir::IntPredicate;

/// `val = sym + d` with `d` free of `sym`: returns d.
pub(super) fn increment(pool: &mut ExprPool, sym: ExprId, val: ExprId) -> Option<ExprId> {
    match pool.get(val).clone() {
        Expr::Bin(BvOp::Add, a, b) => {
            if a == sym && !mentions(pool, b, &[sym]) {
                return Some(b);
            }
            if b == sym && !mentions(pool, a, &[sym]) {
                return Some(a);
            }
            if let Some(d) = increment(pool, sym, a) {
                if !mentions(pool, b, &[sym]) {
                    return Some(pool.bin(BvOp::Add, d, b));
                }
            }
            if let Some(d) = increment(pool, sym, b) {
                if !mentions(pool, a, &[sym]) {
                    return Some(pool.bin(BvOp::Add, a, d));
                }
            }
            None
        }
        Expr::Bin(BvOp::Sub, a, b) if !mentions(pool, b, &[sym]) => {
            let d = increment(pool, sym, a).or_else(|| (a == sym).then(|| pool.bv(pool.width(sym), 0)))?;
            Some(pool.bin(BvOp::Sub, d, b))
        }
        _ => None,
    }
}

/// A counter as a `w`-bit value (κ is 64-bit; program values meet it modulo 2^w).
fn counter_as(pool: &mut ExprPool, k: ExprId, w: u32) -> ExprId {
    pool.resize(k, w)
}

/// θ^κ⟨e⟩ under the current (partial) iterated state; `None` when the result is ⋆.
fn under(pool: &mut ExprPool, current: &Substitution, e: ExprId) -> Option<ExprId> {
    let r = current.apply(pool, e);
    (!pool.is_star(r)).then_some(r)
}

/// Computes θ^κ from the per-backbone states `thetas[i][var]` (`None` = ⋆).
pub fn iterate(pool: &mut ExprPool, vars: &[LoopVar], thetas: &[Vec<Option<ExprId>>], counters: &[ExprId]) -> Vec<Option<ExprId>> {
    let n = vars.len();
    let mut result: Vec<Option<ExprId>> = vec![None; n];
    // Invariant variables never change.
    for (k, v) in vars.iter().enumerate() {
        if !v.carried {
            result[k] = Some(v.symbol);
        }
    }
    loop {
        let mut current = Substitution::new();
        for (k, v) in vars.iter().enumerate() {
            let e = result[k].unwrap_or_else(|| pool.star(pool.sort(v.symbol)));
            current.insert(v.symbol, e);
        }
        let mut changed = false;
        for (k, v) in vars.iter().enumerate() {
            if result[k].is_some() {
                continue;
            }
            let vals: Option<Vec<ExprId>> = thetas.iter().map(|t| t[k]).collect();
            let Some(vals) = vals else { continue };
            if let Some(e) = derive(pool, v, &vals, counters, &current) {
                result[k] = Some(e);
                changed = true;
                // Later variables may use this one at once.
                current.insert(v.symbol, e);
            }
        }
        if !changed {
            return result;
        }
    }
}

fn derive(pool: &mut ExprPool, v: &LoopVar, vals: &[ExprId], counters: &[ExprId], current: &Substitution) -> Option<ExprId> {
    let sym = v.symbol;
    let changed: Vec<usize> = (0..vals.len()).filter(|&i| vals[i] != sym).collect();
    // Rule 1: unchanged on every iteration backbone.
    if changed.is_empty() {
        return Some(sym);
    }
    // Memory: only the unchanged case is expressed here (section 4's first rule).
    if matches!(v.var, Var::Mem(_)) {
        return None;
    }
    let no_counters = |pool: &ExprPool, e: ExprId| !mentions(pool, e, counters);
    // Rule 2: a̲ + d_i on every changing backbone, with loop-invariant d_i.
    if let Sort::Bv(w) = pool.sort(sym) {
        let mut sum = Some(sym);
        for &i in &changed {
            let d = increment(pool, sym, vals[i]).and_then(|d| under(pool, current, d)).filter(|&d| no_counters(pool, d));
            match (d, sum) {
                (Some(d), Some(s)) => {
                    let k = counter_as(pool, counters[i], w);
                    let dk = pool.bin(BvOp::Mul, d, k);
                    sum = Some(pool.bin(BvOp::Add, s, dk));
                }
                _ => sum = None,
            }
        }
        if let Some(s) = sum {
            return Some(s);
        }
    }
    // Rule 2b: a̲ + d(t) on one backbone, with d(t) = d₀ + c·t affine in its counter: a
    // polynomial closed form.
    if let (Sort::Bv(w), [i]) = (pool.sort(sym), changed.as_slice()) {
        if let Some(e) = polynomial(pool, sym, vals[*i], counters, *i, w, current) {
            return Some(e);
        }
    }
    // Rule 3: set to the same loop-invariant d on every changing backbone.
    let d = vals[changed[0]];
    if changed.iter().all(|&i| vals[i] == d) {
        if let Some(e) = under(pool, current, d).filter(|&e| no_counters(pool, e)) {
            let zero = pool.bv(64, 0);
            let any: Vec<ExprId> = changed.iter().map(|&i| pool.cmp(IntPredicate::Ne, counters[i], zero)).collect();
            let c = pool.or(any);
            return Some(pool.ite(c, e, sym));
        }
    }
    // Rule 4: changed on one backbone only, to a value depending on its own counter only.
    if changed.len() == 1 {
        let i = changed[0];
        let others: Vec<ExprId> = counters.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, &c)| c).collect();
        if let Some(e) = under(pool, current, vals[i]).filter(|&e| !mentions(pool, e, &others)) {
            let one = pool.bv(64, 1);
            let prev = pool.bin(BvOp::Sub, counters[i], one);
            let mut last = Substitution::new();
            last.insert(counters[i], prev);
            let e = last.apply(pool, e);
            let zero = pool.bv(64, 0);
            let c = pool.cmp(IntPredicate::Ne, counters[i], zero);
            return Some(pool.ite(c, e, sym));
        }
    }
    None
}

/// `e` as base + coef·trunc_w(κ) with base and coef free of every counter (a linear form in κ
/// modulo 2^w), when it has that shape syntactically.
fn linear(pool: &mut ExprPool, e: ExprId, kappa: ExprId, counters: &[ExprId]) -> Option<(ExprId, ExprId)> {
    let w = pool.width(e);
    let is_k = |pool: &ExprPool, x: ExprId| x == kappa || matches!(pool.get(x), Expr::Extract { hi, lo: 0, e: k } if *k == kappa && *hi + 1 == w);
    if is_k(pool, e) {
        return Some((pool.bv(w, 0), pool.bv(w, 1)));
    }
    if !mentions(pool, e, counters) {
        return Some((e, pool.bv(w, 0)));
    }
    match pool.get(e).clone() {
        Expr::Bin(op @ (BvOp::Add | BvOp::Sub), a, b) => {
            let (ba, ca) = linear(pool, a, kappa, counters)?;
            let (bb, cb) = linear(pool, b, kappa, counters)?;
            Some((pool.bin(op, ba, bb), pool.bin(op, ca, cb)))
        }
        Expr::Bin(BvOp::Mul, a, b) => {
            let (x, k) = if !mentions(pool, b, counters) { (a, b) } else if !mentions(pool, a, counters) { (b, a) } else { return None };
            let (bx, cx) = linear(pool, x, kappa, counters)?;
            Some((pool.bin(BvOp::Mul, bx, k), pool.bin(BvOp::Mul, cx, k)))
        }
        _ => None,
    }
}

/// Rule 2b: `val = sym + d` where d, under the iterated state at the start of iteration t, is
/// d₀ + c·t with d₀, c loop-invariant. After κ iterations: a̲ + d₀·κ + c·κ(κ−1)/2, modulo 2^w.
/// κ(κ−1) is even, so halving it computed modulo 2^(w+1) gives the exact value modulo 2^w;
/// at 64 bits (no 65-bit constants) the even factor is halved first instead:
/// (κ/2)·(κ−1) or κ·((κ−1)/2), exact modulo 2^64.
fn polynomial(pool: &mut ExprPool, sym: ExprId, val: ExprId, counters: &[ExprId], i: usize, w: u32, current: &Substitution) -> Option<ExprId> {
    if w > 64 {
        return None;
    }
    let d = increment(pool, sym, val)?;
    if mentions(pool, d, &[sym]) {
        return None;
    }
    // d at the start of iteration t: the iterated state with κ_i ↦ t is `current` itself read
    // as a function of κ_i (the value after κ_i iterations is the one the next iteration starts
    // with).
    let d = under(pool, current, d)?;
    let others: Vec<ExprId> = counters.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, &c)| c).collect();
    if mentions(pool, d, &others) || !mentions(pool, d, &[counters[i]]) {
        return None;
    }
    let (d0, c) = linear(pool, d, counters[i], counters)?;
    let k = counters[i];
    let kw = pool.resize(k, w);
    let tri = if w < 64 {
        let x = pool.resize(k, w + 1);
        let one = pool.bv(w + 1, 1);
        let y = pool.bin(BvOp::Sub, x, one);
        let prod = pool.bin(BvOp::Mul, x, y);
        let half = pool.bin(BvOp::LShr, prod, one);
        pool.resize(half, w)
    } else {
        let x = pool.resize(k, 64);
        let one = pool.bv(64, 1);
        let y = pool.bin(BvOp::Sub, x, one);
        let low = pool.bin(BvOp::And, x, one);
        let zero = pool.bv(64, 0);
        let even = pool.cmp(crate::ir::IntPredicate::Eq, low, zero);
        let (xh, yh) = (pool.bin(BvOp::LShr, x, one), pool.bin(BvOp::LShr, y, one));
        let (a, b) = (pool.bin(BvOp::Mul, xh, y), pool.bin(BvOp::Mul, x, yh));
        pool.ite(even, a, b)
    };
    let lin = pool.bin(BvOp::Mul, d0, kw);
    let quad = pool.bin(BvOp::Mul, c, tri);
    let s1 = pool.bin(BvOp::Add, sym, lin);
    Some(pool.bin(BvOp::Add, s1, quad))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::SymbolKind;
    use crate::ir::ValueId;

    fn var(pool: &mut ExprPool, name: &str, id: u32) -> LoopVar {
        let symbol = pool.symbol(name, Sort::Bv(32), SymbolKind::Input);
        LoopVar { var: Var::Value(ValueId(id)), symbol, name: name.into(), carried: true, object: None }
    }

    fn kappas(pool: &mut ExprPool, n: u32) -> Vec<ExprId> {
        (1..=n).map(|i| pool.symbol(&format!("κ{i}"), Sort::Bv(64), SymbolKind::Kappa(i))).collect()
    }

    #[test]
    fn running_example_rules_give_paper_values() {
        // π1: i+1, k+1; π2: i+1, k unchanged  ⇒  θ^κ(i) = i + κ1 + κ2, θ^κ(k) = k + κ1
        let mut p = ExprPool::new();
        let (i, k) = (var(&mut p, "i", 0), var(&mut p, "k", 1));
        let one = p.bv(32, 1);
        let i1 = p.bin(BvOp::Add, i.symbol, one);
        let k1 = p.bin(BvOp::Add, k.symbol, one);
        let ks = kappas(&mut p, 2);
        let thetas = vec![vec![Some(i1), Some(k1)], vec![Some(i1), Some(k.symbol)]];
        let r = iterate(&mut p, &[i.clone(), k.clone()], &thetas, &ks);
        let pr = crate::expr::Printer::new(&p);
        assert_eq!(pr.print(r[0].unwrap()), "(i\u{332} + trunc32(κ1)) + trunc32(κ2)");
        assert_eq!(pr.print(r[1].unwrap()), "k\u{332} + trunc32(κ1)");
    }

    #[test]
    fn rule3_and_rule4() {
        let mut p = ExprPool::new();
        let (a, b, i) = (var(&mut p, "a", 0), var(&mut p, "b", 1), var(&mut p, "i", 2));
        let ks = kappas(&mut p, 2);
        let seven = p.bv(32, 7);
        let one = p.bv(32, 1);
        let i1 = p.bin(BvOp::Add, i.symbol, one);
        // a := 7 on π1 only (rule 3); b := i on π1, i += 1 on π1 only (rule 4)
        let thetas = vec![vec![Some(seven), Some(i.symbol), Some(i1)], vec![Some(a.symbol), Some(b.symbol), Some(i.symbol)]];
        let r = iterate(&mut p, &[a, b, i], &thetas, &ks);
        let pr = crate::expr::Printer::new(&p);
        assert_eq!(pr.print(r[0].unwrap()), "ite(κ1 ≠ 0, 7, a\u{332})");
        assert_eq!(pr.print(r[1].unwrap()), "ite(κ1 ≠ 0, i\u{332} + (trunc32(κ1) + -1), b\u{332})");
    }

    #[test]
    fn non_monotone_updates_stay_unknown() {
        // The paper's incompleteness example: i := 1 on one backbone, i := 2 on the other.
        let mut p = ExprPool::new();
        let i = var(&mut p, "i", 0);
        let ks = kappas(&mut p, 2);
        let (c1, c2) = (p.bv(32, 1), p.bv(32, 2));
        let r = iterate(&mut p, &[i], &[vec![Some(c1)], vec![Some(c2)]], &ks);
        assert_eq!(r[0], None);
    }
}
