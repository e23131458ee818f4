//! Bit-precise integer values of the DSE: a constant when the path fixes it (the common case for
//! loop counters and indices, which keeps loops cheap), a Z3 bit-vector term otherwise.
//!
//! `i1` is a 1-bit vector here (not Z3's Boolean sort) so that every integer has one shape;
//! [`IntV::truthy`] turns it into a Boolean where a condition is needed.

use crate::ir::{BinOp, IntPredicate};
use z3::ast::{Bool, BV};

/// Widest integer the engine models (wider values make the state give up).
pub const MAX_WIDTH: u32 = 64;

pub fn mask(w: u32, v: u64) -> u64 {
    if w >= 64 {
        v
    } else {
        v & ((1u64 << w) - 1)
    }
}

fn signed(w: u32, v: u64) -> i64 {
    if w >= 64 {
        v as i64
    } else {
        let s = 64 - w;
        ((v << s) as i64) >> s
    }
}

/// An integer of `w` bits: concrete or symbolic.
#[derive(Clone, Debug)]
pub enum IntV {
    C { w: u32, v: u64 },
    S { w: u32, t: BV },
}

/// Why an operation has no exact value on this state.
#[derive(Debug)]
pub struct NotExact(pub String);

/// The result of an operation: its value, and conditions every run continuing past it satisfies
/// (a division traps when its divisor is zero, so a run that goes on had a non-zero divisor).
pub struct Outcome {
    pub value: IntV,
    pub assume: Option<Bool>,
}

impl IntV {
    pub fn c(w: u32, v: u64) -> IntV {
        IntV::C { w, v: mask(w, v) }
    }
    pub fn width(&self) -> u32 {
        match self {
            IntV::C { w, .. } | IntV::S { w, .. } => *w,
        }
    }
    pub fn as_const(&self) -> Option<u64> {
        match self {
            IntV::C { v, .. } => Some(*v),
            IntV::S { .. } => None,
        }
    }
    /// The Z3 term of the value.
    pub fn term(&self) -> BV {
        match self {
            IntV::C { w, v } => BV::from_u64(*v, *w),
            IntV::S { t, .. } => t.clone(),
        }
    }
    /// A symbolic value, folded to a constant when Z3's simplifier finds one.
    pub fn sym(w: u32, t: BV) -> IntV {
        match t.as_u64() {
            Some(v) => IntV::c(w, v),
            None => IntV::S { w, t },
        }
    }
    pub fn from_bool(b: &Bool) -> IntV {
        match b.as_bool() {
            Some(x) => IntV::c(1, x as u64),
            None => IntV::S { w: 1, t: b.ite(&BV::from_u64(1, 1), &BV::from_u64(0, 1)) },
        }
    }
    /// `self ≠ 0` as a Boolean.
    pub fn truthy(&self) -> Bool {
        match self {
            IntV::C { v, .. } => Bool::from_bool(*v != 0),
            IntV::S { w, t } => t.eq(BV::from_u64(0, *w)).not(),
        }
    }

    pub fn zext(&self, to: u32) -> IntV {
        match self {
            IntV::C { v, .. } => IntV::c(to, *v),
            IntV::S { w, t } if to > *w => IntV::S { w: to, t: t.zero_ext(to - w) },
            IntV::S { w, .. } if to == *w => self.clone(),
            IntV::S { t, .. } => IntV::S { w: to, t: t.extract(to - 1, 0) },
        }
    }
    pub fn sext(&self, to: u32) -> IntV {
        match self {
            IntV::C { w, v } => IntV::c(to, signed(*w, *v) as u64),
            IntV::S { w, t } if to > *w => IntV::S { w: to, t: t.sign_ext(to - w) },
            _ => self.zext(to),
        }
    }
    pub fn trunc(&self, to: u32) -> IntV {
        self.zext(to)
    }

    pub fn ite(c: &IntV, a: &IntV, b: &IntV) -> IntV {
        match c.as_const() {
            Some(x) if x != 0 => a.clone(),
            Some(_) => b.clone(),
            None => IntV::S { w: a.width(), t: c.truthy().ite(&a.term(), &b.term()) },
        }
    }

    pub fn cmp(p: IntPredicate, a: &IntV, b: &IntV) -> IntV {
        use IntPredicate::*;
        if let (IntV::C { w, v: x }, IntV::C { v: y, .. }) = (a, b) {
            let (sx, sy) = (signed(*w, *x), signed(*w, *y));
            let r = match p {
                Eq => x == y,
                Ne => x != y,
                Ugt => x > y,
                Uge => x >= y,
                Ult => x < y,
                Ule => x <= y,
                Sgt => sx > sy,
                Sge => sx >= sy,
                Slt => sx < sy,
                Sle => sx <= sy,
            };
            return IntV::c(1, r as u64);
        }
        let (x, y) = (a.term(), b.term());
        let r = match p {
            Eq => x.eq(&y),
            Ne => x.eq(&y).not(),
            Ugt => x.bvugt(&y),
            Uge => x.bvuge(&y),
            Ult => x.bvult(&y),
            Ule => x.bvule(&y),
            Sgt => x.bvsgt(&y),
            Sge => x.bvsge(&y),
            Slt => x.bvslt(&y),
            Sle => x.bvsle(&y),
        };
        IntV::from_bool(&r)
    }

    /// `a op b` with LLVM's wrapping semantics as x86-64 executes it: variable shift counts are
    /// masked like the hardware does; a constant count ≥ the width is poison the compiler may
    /// fold to anything, so it has no exact value; division traps on a zero divisor (and on
    /// `MIN / -1`), so runs that continue assume neither.
    pub fn binary(op: BinOp, a: &IntV, b: &IntV) -> Result<Outcome, NotExact> {
        let w = a.width();
        let plain = |value| Ok(Outcome { value, assume: None });
        if let (IntV::C { v: x, .. }, IntV::C { v: y, .. }) = (a, b) {
            let (x, y) = (*x, *y);
            let (sx, sy) = (signed(w, x), signed(w, y));
            let r = match op {
                BinOp::Add => x.wrapping_add(y),
                BinOp::Sub => x.wrapping_sub(y),
                BinOp::Mul => x.wrapping_mul(y),
                BinOp::And => x & y,
                BinOp::Or => x | y,
                BinOp::Xor => x ^ y,
                BinOp::Shl | BinOp::LShr | BinOp::AShr if y >= w as u64 => {
                    return Err(NotExact(format!("shift by {y} of an i{w}")));
                }
                BinOp::Shl => x << y,
                BinOp::LShr => x >> y,
                BinOp::AShr => (sx >> y) as u64,
                BinOp::UDiv | BinOp::URem | BinOp::SDiv | BinOp::SRem if y == 0 => {
                    return Err(NotExact("division by zero".into()));
                }
                BinOp::SDiv | BinOp::SRem if sy == -1 && sx == signed(w, 1u64 << (w - 1)) => {
                    return Err(NotExact("signed division overflow".into()));
                }
                BinOp::UDiv => x / y,
                BinOp::URem => x % y,
                BinOp::SDiv => sx.wrapping_div(sy) as u64,
                BinOp::SRem => sx.wrapping_rem(sy) as u64,
            };
            return plain(IntV::c(w, r));
        }
        if w == 1 {
            // i1 arithmetic: only the logical operations are common.
            let (x, y) = (a.term(), b.term());
            let t = match op {
                BinOp::And | BinOp::Mul => x.bvand(&y),
                BinOp::Or => x.bvor(&y),
                BinOp::Xor | BinOp::Add | BinOp::Sub => x.bvxor(&y),
                _ => return Err(NotExact(format!("{op:?} on i1"))),
            };
            return plain(IntV::sym(1, t));
        }
        // A constant zero divisor is undefined behaviour the compiler may fold to any value.
        if matches!(op, BinOp::UDiv | BinOp::URem | BinOp::SDiv | BinOp::SRem) && b.as_const() == Some(0) {
            return Err(NotExact("division by a constant zero".into()));
        }
        // Cheap algebraic identities that keep indices concrete (`0 * n`, `x + 0`).
        match (op, a.as_const(), b.as_const()) {
            (BinOp::Mul | BinOp::And, Some(0), _) | (BinOp::Mul | BinOp::And, _, Some(0)) => return plain(IntV::c(w, 0)),
            (BinOp::Mul, Some(1), _) | (BinOp::Add | BinOp::Or | BinOp::Xor, Some(0), _) => return plain(b.clone()),
            (BinOp::Mul, _, Some(1)) | (BinOp::Add | BinOp::Sub | BinOp::Or | BinOp::Xor, _, Some(0)) => return plain(a.clone()),
            _ => {}
        }
        let (x, y) = (a.term(), b.term());
        let shift_count = |y: &BV| -> Result<BV, NotExact> {
            if let Some(c) = b.as_const() {
                return if c < w as u64 { Ok(y.clone()) } else { Err(NotExact(format!("shift by {c} of an i{w}"))) };
            }
            let m = match w {
                ..=32 => 31,
                33..=64 => 63,
                _ => return Err(NotExact("wide shift".into())),
            };
            Ok(y.bvand(BV::from_u64(m, w)))
        };
        let zero = BV::from_u64(0, w);
        let nonzero = y.eq(&zero).not();
        let (t, assume) = match op {
            BinOp::Add => (x.bvadd(&y), None),
            BinOp::Sub => (x.bvsub(&y), None),
            BinOp::Mul => (x.bvmul(&y), None),
            BinOp::And => (x.bvand(&y), None),
            BinOp::Or => (x.bvor(&y), None),
            BinOp::Xor => (x.bvxor(&y), None),
            BinOp::Shl => (x.bvshl(&shift_count(&y)?), None),
            BinOp::LShr => (x.bvlshr(&shift_count(&y)?), None),
            BinOp::AShr => (x.bvashr(&shift_count(&y)?), None),
            BinOp::UDiv => (x.bvudiv(&y), Some(nonzero)),
            BinOp::URem => (x.bvurem(&y), Some(nonzero)),
            BinOp::SDiv | BinOp::SRem => {
                let min = BV::from_u64(1u64 << (w - 1), w);
                let minus_one = BV::from_u64(mask(w, u64::MAX), w);
                let overflow = Bool::and(&[x.eq(&min), y.eq(&minus_one)]);
                let ok = Bool::and(&[nonzero, overflow.not()]);
                let t = if op == BinOp::SDiv { x.bvsdiv(&y) } else { x.bvsrem(&y) };
                (t, Some(ok))
            }
        };
        let assume = match (op, b.as_const()) {
            // A constant non-zero divisor needs no assumption (MIN / -1 aside).
            (BinOp::UDiv | BinOp::URem, Some(_)) => None,
            (BinOp::SDiv | BinOp::SRem, Some(c)) if signed(w, c) != -1 => None,
            _ => assume,
        };
        Ok(Outcome { value: IntV::sym(w, t), assume })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_wrap_and_compare_signed() {
        let a = IntV::c(8, 200);
        let b = IntV::c(8, 100);
        let s = IntV::binary(BinOp::Add, &a, &b).unwrap().value;
        assert_eq!(s.as_const(), Some(44));
        assert_eq!(IntV::cmp(IntPredicate::Slt, &a, &b).as_const(), Some(1));
        assert_eq!(IntV::cmp(IntPredicate::Ult, &a, &b).as_const(), Some(0));
        assert_eq!(a.sext(16).as_const(), Some(0xffc8));
    }

    #[test]
    fn constant_shift_past_the_width_is_not_exact() {
        assert!(IntV::binary(BinOp::Shl, &IntV::c(32, 1), &IntV::c(32, 32)).is_err());
    }

    #[test]
    fn symbolic_division_assumes_a_nonzero_divisor() {
        let x = IntV::S { w: 32, t: BV::new_const("x", 32) };
        let out = IntV::binary(BinOp::UDiv, &IntV::c(32, 7), &x).unwrap();
        assert!(out.assume.is_some());
    }
}
