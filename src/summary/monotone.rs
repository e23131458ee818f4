//! Quantifier-free looping conditions where they are exact.
//!
//! A part ∀τ < κ. e(τ) ⋈ c of a looping condition, where e(τ) = b ± τ (in e's width w, the
//! counter truncated) and b, c do not depend on τ, is decided by where the sequence b, b ± 1, …
//! crosses c or wraps around: it moves by one, so it cannot jump over the value where the test
//! changes. With d the exact number of steps the test survives (computed in w bits, exact
//! because the operands are ordered), the part is
//!
//! ```text
//! κ = 0  ∨  (test holds for every value of e)  ∨  (b ⋈ c  ∧  κ − 1 ≤ᵤ d)
//! ```
//!
//! an equivalence on bit-vectors with wrap-around, so the APC stays exactly as strong, and Z3
//! gets no quantifier (it often answered `unknown` on the ∀ with truncations).
//!
//! | e moves | test          | the test first fails at | d                 |
//! |---------|---------------|-------------------------|-------------------|
//! | up      | `<` / `≤` c   | c / c + 1               | c − b − 1 / c − b |
//! | down    | `>` / `≥` c   | c / c − 1               | b − c − 1 / b − c |
//! | up      | `>` / `≥` c   | the wrap to MIN         | MAX − b           |
//! | down    | `<` / `≤` c   | the wrap to MAX         | b − MIN           |
//!
//! (signed or unsigned MIN/MAX after the predicate.) A test that holds for MIN and MAX holds for
//! every value (`e ≤ MAX`, `e ≥ MIN`): the middle disjunct.

use crate::expr::{mentions, BvOp, Expr, ExprId, ExprPool};
use crate::ir::IntPredicate;

/// `e` as b + τ (true) or b − τ (false), with τ possibly truncated to e's width.
fn unit_step(pool: &mut ExprPool, e: ExprId, tau: ExprId) -> Option<(ExprId, bool)> {
    let w = pool.width(e);
    let is_tau = |pool: &ExprPool, x: ExprId| {
        x == tau || matches!(pool.get(x), Expr::Extract { hi, lo: 0, e: t } if *t == tau && *hi + 1 == w)
    };
    if is_tau(pool, e) {
        return Some((pool.bv(w, 0), true));
    }
    match pool.get(e).clone() {
        Expr::Bin(BvOp::Add, a, b) if is_tau(pool, b) && !mentions(pool, a, &[tau]) => Some((a, true)),
        Expr::Bin(BvOp::Add, a, b) if is_tau(pool, a) && !mentions(pool, b, &[tau]) => Some((b, true)),
        Expr::Bin(BvOp::Sub, a, b) if is_tau(pool, b) && !mentions(pool, a, &[tau]) => Some((a, false)),
        _ => None,
    }
}

fn swap(p: IntPredicate) -> Option<IntPredicate> {
    use IntPredicate::*;
    Some(match p {
        Slt => Sgt,
        Sle => Sge,
        Sgt => Slt,
        Sge => Sle,
        Ult => Ugt,
        Ule => Uge,
        Ugt => Ult,
        Uge => Ule,
        Eq | Ne => return None,
    })
}

/// The quantifier-free equivalent of ∀τ (τ ≥ᵤ κ ∨ `test`), when `test` has the shape above.
pub fn forall_below(pool: &mut ExprPool, tau: ExprId, kappa: ExprId, test: ExprId) -> Option<ExprId> {
    use IntPredicate::*;
    let Expr::Cmp(p, l, r) = pool.get(test).clone() else { return None };
    if matches!(p, Eq | Ne) {
        return None;
    }
    let (p, e, c) = if !mentions(pool, r, &[tau]) && mentions(pool, l, &[tau]) {
        (p, l, r)
    } else if !mentions(pool, l, &[tau]) && mentions(pool, r, &[tau]) {
        (swap(p)?, r, l)
    } else {
        return None;
    };
    let signed = matches!(p, Slt | Sle | Sgt | Sge);
    // The sequence may be compared after an extension (C's promotions: `unsigned char i`,
    // `i >= 10` compares zext32(i)). A zero extension keeps consecutive values consecutive
    // under either order; a sign extension only under the signed one (unsigned, it jumps from
    // 127 to 2^w − 128).
    let (inner, ext) = match pool.get(e).clone() {
        Expr::ZExt(x, _) => (x, Some(false)),
        Expr::SExt(x, _) if signed => (x, Some(true)),
        Expr::SExt(..) => return None,
        _ => (e, None),
    };
    let (b, up) = unit_step(pool, inner, tau)?;
    let (w, wi) = (pool.width(e), pool.width(inner));
    if w > 64 || pool.width(kappa) != 64 {
        return None;
    }
    let all = if wi == 64 { u64::MAX } else { (1u64 << wi) - 1 };
    let inner_signed = ext.unwrap_or(signed);
    let (min, max) = if inner_signed { (1u64 << (wi - 1), all >> 1) } else { (0, all) };
    let (min, max) = (pool.bv(wi, min), pool.bv(wi, max));
    let extend = |pool: &mut ExprPool, x: ExprId| match ext {
        Some(true) => pool.sext(x, w),
        Some(false) => pool.zext(x, w),
        None => x,
    };
    let (min, max, b) = (extend(pool, min), extend(pool, max), extend(pool, b));
    let below = matches!(p, Slt | Sle | Ult | Ule);
    let strict = matches!(p, Slt | Sgt | Ult | Ugt);
    let one = pool.bv(w, 1);
    let d = match (up, below) {
        // Crossing c.
        (true, true) => {
            let diff = pool.bin(BvOp::Sub, c, b);
            if strict { pool.bin(BvOp::Sub, diff, one) } else { diff }
        }
        (false, false) => {
            let diff = pool.bin(BvOp::Sub, b, c);
            if strict { pool.bin(BvOp::Sub, diff, one) } else { diff }
        }
        // Wrapping around.
        (true, false) => pool.bin(BvOp::Sub, max, b),
        (false, true) => pool.bin(BvOp::Sub, b, min),
    };
    let holds_at_start = pool.cmp(p, b, c);
    let for_min = pool.cmp(p, min, c);
    let for_max = pool.cmp(p, max, c);
    let always = pool.and([for_min, for_max]);
    let one64 = pool.bv(64, 1);
    let last = pool.bin(BvOp::Sub, kappa, one64);
    let d64 = pool.zext(d, 64);
    let within = pool.cmp(Ule, last, d64);
    let runs = pool.and([holds_at_start, within]);
    let zero64 = pool.bv(64, 0);
    let none = pool.eq(kappa, zero64);
    Some(pool.or([none, always, runs]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{Sort, SymbolKind};

    /// The symbols of a brute-force check: τ, κ, a 4-bit start b and a bound c of `c_width` bits.
    struct Syms {
        tau: ExprId,
        kappa: ExprId,
        b: ExprId,
        c: ExprId,
        c_width: u32,
    }

    fn syms(pool: &mut ExprPool, c_width: u32) -> Syms {
        Syms {
            tau: pool.symbol("τ1", Sort::Bv(64), SymbolKind::Tau(1)),
            kappa: pool.symbol("κ1", Sort::Bv(64), SymbolKind::Kappa(1)),
            b: pool.symbol("b", Sort::Bv(4), SymbolKind::Input),
            c: pool.symbol("c", Sort::Bv(c_width), SymbolKind::Input),
            c_width,
        }
    }

    /// The rewrite of ∀τ < κ. `test` agrees with the definition for every b, c and κ < 20 (more
    /// than the 16 values of b, so wraps occur), τ truncated to 4 bits as the summaries do.
    fn agrees_everywhere(pool: &mut ExprPool, s: &Syms, test: ExprId, what: &str) {
        let qf = forall_below(pool, s.tau, s.kappa, test).expect("the shape is recognised");
        for b in 0..16u64 {
            for c in 0..(1u64 << s.c_width) {
                for k in 0..20u64 {
                    let mut at = crate::expr::Substitution::new();
                    let (bv, cv, kv) = (pool.bv(4, b), pool.bv(s.c_width, c), pool.bv(64, k));
                    at.insert(s.b, bv);
                    at.insert(s.c, cv);
                    at.insert(s.kappa, kv);
                    let got = at.apply(pool, qf);
                    let got = pool.as_bool(got).expect("constant");
                    let mut want = true;
                    for t in 0..k {
                        let mut at_t = at.clone();
                        let tv = pool.bv(64, t);
                        at_t.insert(s.tau, tv);
                        let v = at_t.apply(pool, test);
                        want &= pool.as_bool(v).expect("constant");
                    }
                    assert_eq!(got, want, "{what} b={b} c={c} κ={k}");
                }
            }
        }
    }

    #[test]
    fn the_rewrite_is_an_equivalence_on_small_bit_vectors() {
        use IntPredicate::*;
        let mut pool = ExprPool::new();
        let s = syms(&mut pool, 4);
        let t4 = pool.trunc(s.tau, 4);
        for up in [true, false] {
            let e = pool.bin(if up { BvOp::Add } else { BvOp::Sub }, s.b, t4);
            for p in [Slt, Sle, Sgt, Sge, Ult, Ule, Ugt, Uge] {
                for flipped in [false, true] {
                    let test = if flipped { pool.cmp(swap(p).unwrap(), s.c, e) } else { pool.cmp(p, e, s.c) };
                    agrees_everywhere(&mut pool, &s, test, &format!("{p:?} up={up} flipped={flipped}"));
                }
            }
        }
    }

    /// The same with the sequence compared after an extension to 6 bits (C's promotions):
    /// zero extension under every predicate, sign extension under the signed ones.
    #[test]
    fn the_rewrite_is_an_equivalence_through_extensions() {
        use IntPredicate::*;
        let mut pool = ExprPool::new();
        let s = syms(&mut pool, 6);
        let t4 = pool.trunc(s.tau, 4);
        for (signed_ext, preds) in [(false, vec![Slt, Sle, Sgt, Sge, Ult, Ule, Ugt, Uge]), (true, vec![Slt, Sle, Sgt, Sge])] {
            for up in [true, false] {
                let inner = pool.bin(if up { BvOp::Add } else { BvOp::Sub }, s.b, t4);
                let e = if signed_ext { pool.sext(inner, 6) } else { pool.zext(inner, 6) };
                for &p in &preds {
                    let test = pool.cmp(p, e, s.c);
                    agrees_everywhere(&mut pool, &s, test, &format!("{p:?} sext={signed_ext} up={up}"));
                }
            }
        }
        // Sign extension under an unsigned order skips values: not rewritten.
        let inner = pool.bin(BvOp::Add, s.b, t4);
        let e = pool.sext(inner, 6);
        let test = pool.cmp(Ult, e, s.c);
        assert!(forall_below(&mut pool, s.tau, s.kappa, test).is_none());
    }

    #[test]
    fn tests_of_other_shapes_are_left_alone() {
        let mut pool = ExprPool::new();
        let tau = pool.symbol("τ1", Sort::Bv(64), SymbolKind::Tau(1));
        let kappa = pool.symbol("κ1", Sort::Bv(64), SymbolKind::Kappa(1));
        let b = pool.symbol("b", Sort::Bv(32), SymbolKind::Input);
        let t = pool.trunc(tau, 32);
        let four = pool.bv(32, 4);
        let step4 = pool.bin(BvOp::Mul, t, four);
        let e = pool.bin(BvOp::Add, b, step4);
        let n = pool.bv(32, 100);
        let by_four = pool.cmp(IntPredicate::Slt, e, n);
        assert!(forall_below(&mut pool, tau, kappa, by_four).is_none(), "steps of 4 can jump over the bound");
        let e1 = pool.bin(BvOp::Add, b, t);
        let ne = pool.cmp(IntPredicate::Ne, e1, n);
        assert!(forall_below(&mut pool, tau, kappa, ne).is_none(), "≠ is not monotone");
    }
}
