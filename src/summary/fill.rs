//! What a fill loop leaves in memory, for any iteration count (facts about all elements).
//!
//! A loop whose one writing backbone stores, in iteration t, the value v(t) at the byte offset
//! o(t) = o₀ ± S·t (S a constant stride at least as wide as the store) leaves
//!
//! ```text
//! λp. ite(p is byte b < w of the slot of an iteration q < κ,  byte b of v(q),  M̲[p])
//! ```
//!
//! where q and b come from p by one division: q = (p − o₀) /ᵤ S, b = (p − o₀) %ᵤ S (upwards).
//! Z3 reduces every read of the λ to its body at the read's offset (and `ExprPool::load` does
//! so already), so a property of every element ("a[k] ≥ 0 for k < n") needs no quantifier and
//! no invariant: the read *is* v at the element's iteration.
//!
//! Exactness on bit-vectors: C indexes are narrower than offsets (`a[i]` with an `int i` is
//! o = base + 4·sext(i̲ + τ)), so o(t) is affine in t only while i̲ + t does not wrap in its own
//! width; and the decoding by division is one-to-one only while the written region does not
//! wrap around 2^64. Both are conditions on κ (and the entry values), returned as the `guard`
//! under which the λ is the memory; the caller keeps its coarser description otherwise.

use crate::expr::{mentions, BvOp, Expr, ExprId, ExprPool, Substitution};
use crate::ir::IntPredicate;

/// `e` (a 64-bit offset) as `base + scale·g(t)`, where g(t) = ext(b ± t) is the unit-step core
/// (see [`Core`]); `None` when `e` is not of that shape.
struct Affine {
    base: ExprId,
    scale: u64,
    core: Core,
}

/// g(t) = ext₆₄(b ± trunc_w(t)), ext being zero- or sign-extension (none when w = 64).
struct Core {
    /// b, of width `width`.
    b: ExprId,
    width: u32,
    up: bool,
    signed: Option<bool>,
}

/// `e` (width w) as b ± trunc_w(t).
fn step(pool: &mut ExprPool, e: ExprId, t: ExprId) -> Option<(ExprId, bool)> {
    let w = pool.width(e);
    let is_t = e == t || matches!(pool.get(e), Expr::Extract { hi, lo: 0, e: x } if *x == t && *hi + 1 == w);
    if is_t {
        return Some((pool.bv(w, 0), true));
    }
    match pool.get(e).clone() {
        Expr::Bin(BvOp::Add, x, y) if !mentions(pool, y, &[t]) => {
            let (b, up) = step(pool, x, t)?;
            Some((pool.bin(BvOp::Add, b, y), up))
        }
        Expr::Bin(BvOp::Add, x, y) if !mentions(pool, x, &[t]) => {
            let (b, up) = step(pool, y, t)?;
            Some((pool.bin(BvOp::Add, x, b), up))
        }
        Expr::Bin(BvOp::Sub, x, y) if !mentions(pool, y, &[t]) => {
            let (b, up) = step(pool, x, t)?;
            Some((pool.bin(BvOp::Sub, b, y), up))
        }
        // x − (b ± t) = (x − b) ∓ t
        Expr::Bin(BvOp::Sub, x, y) if !mentions(pool, x, &[t]) => {
            let (b, up) = step(pool, y, t)?;
            Some((pool.bin(BvOp::Sub, x, b), !up))
        }
        _ => None,
    }
}

fn affine(pool: &mut ExprPool, e: ExprId, t: ExprId) -> Option<Affine> {
    if pool.width(e) != 64 || !mentions(pool, e, &[t]) {
        return None;
    }
    match pool.get(e).clone() {
        Expr::Bin(BvOp::Add, x, y) if !mentions(pool, y, &[t]) => {
            let mut a = affine(pool, x, t)?;
            a.base = pool.bin(BvOp::Add, a.base, y);
            Some(a)
        }
        Expr::Bin(BvOp::Add, x, y) if !mentions(pool, x, &[t]) => {
            let mut a = affine(pool, y, t)?;
            a.base = pool.bin(BvOp::Add, x, a.base);
            Some(a)
        }
        Expr::Bin(BvOp::Sub, x, y) if !mentions(pool, y, &[t]) => {
            let mut a = affine(pool, x, t)?;
            a.base = pool.bin(BvOp::Sub, a.base, y);
            Some(a)
        }
        Expr::Bin(op @ (BvOp::Mul | BvOp::Shl), x, y) => {
            let (inner, c) = match (pool.as_const(x), pool.as_const(y)) {
                (_, Some(c)) => (x, c),
                (Some(c), None) if op == BvOp::Mul => (y, c),
                _ => return None,
            };
            let factor = if op == BvOp::Shl {
                if c >= 64 {
                    return None;
                }
                1u64 << c
            } else {
                c
            };
            let mut a = affine(pool, inner, t)?;
            let f = pool.bv(64, factor);
            a.base = pool.bin(BvOp::Mul, a.base, f);
            a.scale = a.scale.wrapping_mul(factor);
            Some(a)
        }
        Expr::ZExt(x, 64) | Expr::SExt(x, 64) => {
            let signed = matches!(pool.get(e), Expr::SExt(..));
            let (b, up) = step(pool, x, t)?;
            let width = pool.width(x);
            Some(Affine { base: pool.bv(64, 0), scale: 1, core: Core { b, width, up, signed: Some(signed) } })
        }
        _ => {
            let (b, up) = step(pool, e, t)?;
            Some(Affine { base: pool.bv(64, 0), scale: 1, core: Core { b, width: 64, up, signed: None } })
        }
    }
}

/// The memory a fill loop leaves, with the condition under which it is exact.
#[derive(Clone, Copy, Debug)]
pub struct Fill {
    /// Holds when the loop ran κ iterations without the index wrapping and the written region
    /// fits below 2^64 bytes.
    pub guard: ExprId,
    /// λp. …, over the loop-entry memory.
    pub memory: ExprId,
    /// Upward fills: the region the loop may have written is `[start, start + extent)` (so
    /// an outer loop can lay such regions side by side, [`Block::Region`]).
    pub region: Option<(ExprId, ExprId)>,
}

/// What one iteration t writes, starting at its offset o(t).
#[derive(Clone, Copy, Debug)]
pub enum Block {
    /// One store of `value(t)`, `width` bits.
    Store { value: ExprId, width: u32 },
    /// An inner loop's fill: `memory(t)` (an array over the loop-entry memory) differs from
    /// it only in `[o(t), o(t) + extent)`, `extent` the same for every t.
    Region { memory: ExprId, extent: ExprId },
}

/// The memory after `count` iterations of a loop whose iteration t writes `block` at
/// `offset(t)` over `entry` (the loop-entry memory, written by nothing else), where `offset`
/// and the block are expressions in the 64-bit symbol `index` standing for t (for a loop with
/// one iteration backbone, its counter κ itself: θ^κ gives the state at iteration κ).
/// `var` is a fresh 64-bit symbol for the λ to bind.
pub fn fill(pool: &mut ExprPool, entry: ExprId, index: ExprId, count: ExprId, offset: ExprId, block: Block, var: ExprId) -> Option<Fill> {
    use IntPredicate::*;
    let kappa = count;
    let a = affine(pool, offset, index)?;
    if a.scale == 0 {
        return None;
    }
    // Upwards with stride s = scale when the core moves up, else downwards; a "negative" scale
    // (2^64 − s) moves the other way.
    let (stride, up) = if a.scale <= i64::MAX as u64 { (a.scale, a.core.up) } else { (a.scale.wrapping_neg(), !a.core.up) };
    let mut guard = vec![];
    // The bytes of one iteration's slot: a constant for a store, at most S for a region.
    let bytes = match block {
        Block::Store { value, width } => {
            let bytes = u64::from(width / 8);
            if pool.width(value) != width || stride < bytes {
                return None;
            }
            bytes
        }
        Block::Region { extent, .. } => {
            if !up || mentions(pool, extent, &[index]) {
                return None;
            }
            let s = pool.bv(64, stride);
            guard.push(pool.cmp(Ule, extent, s));
            stride
        }
    };
    let Core { b, width: cw, signed, .. } = a.core;
    let one = pool.bv(64, 1);
    let zero = pool.bv(64, 0);
    let k1 = pool.bin(BvOp::Sub, kappa, one);
    // No wrap of the core over t < κ: the room left in its width, in 64 bits.
    if let Some(signed) = signed {
        let all = if cw == 64 { u64::MAX } else { (1u64 << cw) - 1 };
        let (min, max) = if signed { ((1u64 << (cw - 1)).wrapping_neg(), all >> 1) } else { (0, all) };
        let b64 = if signed { pool.sext(b, 64) } else { pool.zext(b, 64) };
        let room = if a.core.up {
            let max = pool.bv(64, max);
            pool.bin(BvOp::Sub, max, b64)
        } else {
            let min = pool.bv(64, min);
            pool.bin(BvOp::Sub, b64, min)
        };
        guard.push(pool.cmp(Ule, k1, room));
    }
    // The region, S·(κ − 1) + bytes ≤ 2^64: the decoding below is one-to-one.
    let limit = pool.bv(64, (u64::MAX - bytes + 1) / stride);
    guard.push(pool.cmp(Ule, k1, limit));
    let some = pool.cmp(Ne, kappa, zero);
    let guard = pool.and(guard);
    let guard = pool.implies(some, guard);

    // o₀ = base + scale·g(0).
    let g0 = match signed {
        Some(true) => pool.sext(b, 64),
        Some(false) => pool.zext(b, 64),
        None => b,
    };
    let scale = pool.bv(64, a.scale);
    let scaled = pool.bin(BvOp::Mul, scale, g0);
    let o0 = pool.bin(BvOp::Add, a.base, scaled);
    let s = pool.bv(64, stride);
    // Upwards: p − o₀ = S·q + byte. Downwards: o₀ − p = S·q − byte, so
    // o₀ − p + S − 1 = S·q + (S − 1 − byte).
    let (d, byte_of) = if up {
        (pool.bin(BvOp::Sub, var, o0), None)
    } else {
        let diff = pool.bin(BvOp::Sub, o0, var);
        let s1 = pool.bv(64, stride - 1);
        (pool.bin(BvOp::Add, diff, s1), Some(stride - 1))
    };
    // A power-of-two stride (the usual case) divides by a shift and a mask, which bit-blast
    // to nothing; a division would be a circuit per read byte.
    let (q, r) = if stride.is_power_of_two() {
        let log = pool.bv(64, u64::from(stride.trailing_zeros()));
        let mask = pool.bv(64, stride - 1);
        (pool.bin(BvOp::LShr, d, log), pool.bin(BvOp::And, d, mask))
    } else {
        (pool.bin(BvOp::UDiv, d, s), pool.bin(BvOp::URem, d, s))
    };
    let mut at = Substitution::new();
    at.insert(index, q);
    let in_time = pool.cmp(Ult, q, kappa);
    let (in_slot, new_byte) = match block {
        Block::Store { value, width } => {
            let v = at.apply(pool, value);
            if pool.is_star(v) {
                return None;
            }
            let (in_slot, byte) = match byte_of {
                None => {
                    let n = pool.bv(64, bytes);
                    (pool.cmp(Ult, r, n), r)
                }
                Some(top) => {
                    let lo = pool.bv(64, stride - bytes);
                    let top = pool.bv(64, top);
                    (pool.cmp(Uge, r, lo), pool.bin(BvOp::Sub, top, r))
                }
            };
            let v_byte = if width == 8 {
                v
            } else {
                let b = pool.resize(byte, width);
                let eight = pool.bv(width, 8);
                let shift = pool.bin(BvOp::Mul, b, eight);
                let shifted = pool.bin(BvOp::LShr, v, shift);
                pool.trunc(shifted, 8)
            };
            (in_slot, v_byte)
        }
        Block::Region { memory, extent } => {
            let m = at.apply(pool, memory);
            if pool.is_star(m) {
                return None;
            }
            (pool.cmp(Ult, r, extent), pool.load(m, var, 8))
        }
    };
    let written = pool.and([in_slot, in_time]);
    let old = pool.load(entry, var, 8);
    let body = pool.ite(written, new_byte, old);
    // Upwards, iterations 0 … κ − 1 cover [o₀, o₀ + S·(κ − 1) + bytes).
    let region = up.then(|| {
        let last = pool.bin(BvOp::Mul, s, k1);
        let n = match block {
            Block::Store { .. } => pool.bv(64, bytes),
            Block::Region { extent, .. } => extent,
        };
        let span = pool.bin(BvOp::Add, last, n);
        let extent = pool.ite(some, span, zero);
        (o0, extent)
    });
    Some(Fill { guard, memory: pool.lambda(var, body), region })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{Sort, SymbolKind};

    /// Checks `f` valid with Z3 (its negation unsat).
    fn valid(pool: &ExprPool, f: ExprId) -> bool {
        let mut p = pool.clone();
        let nf = p.not(f);
        matches!(crate::solve::check(&p, nf, std::time::Duration::from_secs(10), |_| ()).outcome, crate::solve::Outcome::Unsat)
    }

    /// `for (int i = i0; i < n; i++) A[i] = 2 * i;` over 4-byte ints: after κ iterations,
    /// A[k] for i0 ≤ k < i0 + κ is 2k, and A[i0 + κ] is the entry memory's.
    #[test]
    fn an_int_fill_reads_back_each_iterations_value_and_nothing_else() {
        let mut p = ExprPool::new();
        let m = p.symbol("A", Sort::MEMORY, SymbolKind::Input);
        let i0 = p.symbol("i0", Sort::Bv(32), SymbolKind::Input);
        let kappa = p.symbol("κ1", Sort::Bv(64), SymbolKind::Kappa(1));
        let rho = p.symbol("ρ", Sort::Bv(64), SymbolKind::Aux);
        let t32 = p.trunc(kappa, 32);
        let i = p.bin(BvOp::Add, i0, t32);
        let four = p.bv(64, 4);
        let si = p.sext(i, 64);
        let offset = p.bin(BvOp::Mul, si, four);
        let two = p.bv(32, 2);
        let value = p.bin(BvOp::Mul, i, two);
        let f = fill(&mut p, m, kappa, kappa, offset, Block::Store { value, width: 32 }, rho).expect("an affine fill");
        // k = i0 + j for j < κ (no wrap): A[k] = 2k.
        let j = p.symbol("j", Sort::Bv(32), SymbolKind::Input);
        let k = p.bin(BvOp::Add, i0, j);
        let sk = p.sext(k, 64);
        let ok = p.bin(BvOp::Mul, sk, four);
        let read = p.load(f.memory, ok, 32);
        let twice = p.bin(BvOp::Mul, k, two);
        let j64 = p.zext(j, 64);
        let zero = p.bv(32, 0);
        let j_pos = p.cmp(IntPredicate::Sge, j, zero);
        let in_range = p.cmp(IntPredicate::Ult, j64, kappa);
        let no_wrap = p.cmp(IntPredicate::Sge, k, i0);
        let pre = p.and([f.guard, j_pos, in_range, no_wrap]);
        let eq = p.eq(read, twice);
        let claim = p.implies(pre, eq);
        assert!(valid(&p, claim), "every element written reads back its iteration's value");
        // The element after the last one is the entry memory's.
        let after = p.bin(BvOp::Add, i0, t32);
        let sa = p.sext(after, 64);
        let oa = p.bin(BvOp::Mul, sa, four);
        let read = p.load(f.memory, oa, 32);
        let old = p.load(m, oa, 32);
        let eq = p.eq(read, old);
        // (Unless the fill covered all 2^32 indexes and i0 + κ wrapped around to i0.)
        let all_indexes = p.bv(64, 1 << 32);
        let short = p.cmp(IntPredicate::Ult, kappa, all_indexes);
        let pre = p.and([f.guard, short]);
        let claim = p.implies(pre, eq);
        assert!(valid(&p, claim), "the element past the fill keeps the entry memory");
        // And the claim is not vacuous: A[i0] can differ from the entry memory's.
        let o_first = {
            let s = p.sext(i0, 64);
            p.bin(BvOp::Mul, s, four)
        };
        let first = p.load(f.memory, o_first, 32);
        let old_first = p.load(m, o_first, 32);
        let eq = p.eq(first, old_first);
        assert!(!valid(&p, eq), "the first element is written");
    }

    /// A descending byte fill `for (i = n; i > 0; i--) B[i - 1] = c;`: B[0] is c after n steps.
    #[test]
    fn a_descending_byte_fill_is_decoded() {
        let mut p = ExprPool::new();
        let m = p.symbol("B", Sort::MEMORY, SymbolKind::Input);
        let n = p.symbol("n", Sort::Bv(64), SymbolKind::Input);
        let c = p.symbol("c", Sort::Bv(8), SymbolKind::Input);
        let kappa = p.symbol("κ1", Sort::Bv(64), SymbolKind::Kappa(1));
        let rho = p.symbol("ρ", Sort::Bv(64), SymbolKind::Aux);
        let one = p.bv(64, 1);
        let i = p.bin(BvOp::Sub, n, kappa);
        let offset = p.bin(BvOp::Sub, i, one);
        let f = fill(&mut p, m, kappa, kappa, offset, Block::Store { value: c, width: 8 }, rho).expect("a descending fill");
        let zero = p.bv(64, 0);
        let read = p.load(f.memory, zero, 8);
        let eq = p.eq(read, c);
        let ran = p.eq(kappa, n);
        let some = p.cmp(IntPredicate::Ne, n, zero);
        let pre = p.and([f.guard, ran, some]);
        let claim = p.implies(pre, eq);
        assert!(valid(&p, claim));
        // B[n] (one past) is untouched.
        let read = p.load(f.memory, n, 8);
        let old = p.load(m, n, 8);
        let eq = p.eq(read, old);
        let claim = p.implies(pre, eq);
        assert!(valid(&p, claim));
    }

    #[test]
    fn overlapping_or_non_affine_writes_are_refused() {
        let mut p = ExprPool::new();
        let m = p.symbol("A", Sort::MEMORY, SymbolKind::Input);
        let kappa = p.symbol("κ1", Sort::Bv(64), SymbolKind::Kappa(1));
        let rho = p.symbol("ρ", Sort::Bv(64), SymbolKind::Aux);
        let v = p.bv(32, 7);
        // stride 1 for 4-byte stores: the slots overlap.
        assert!(fill(&mut p, m, kappa, kappa, kappa, Block::Store { value: v, width: 32 }, rho).is_none());
        // κ·κ: not affine.
        let sq = p.bin(BvOp::Mul, kappa, kappa);
        assert!(fill(&mut p, m, kappa, kappa, sq, Block::Store { value: v, width: 32 }, rho).is_none());
    }
}
