//! Symbolic expressions: a hash-consed DAG with LLVM's bit-precise semantics.
//!
//! * Integers are bit-vectors of their LLVM width; `i1` is the `Bool` sort.
//! * Memory objects are arrays from 64-bit byte offsets to bytes. [`Expr::Load`] and
//!   [`Expr::Store`] read and write `width` bits little-endian, so that mixed-width accesses stay
//!   exact while the common case prints as `A̲[o]:i32` and simplifies (load after store).
//! * ⋆ (unknown, [`Expr::Star`]) absorbs every expression it occurs in. A *test* that is ⋆ is
//!   dropped by whoever collects tests (see `apc`); a ⋆ inside a formula is never replaced by
//!   `true` here, which would be unsound under negation.
//! * Path counters κ and τ are 64-bit bit-vector variables; they meet program values through
//!   explicit truncation/extension.

pub mod eval;
mod pool;
mod print;
mod subst;

pub use pool::{children as children_of, ExprPool};
pub(crate) use pool::fold_cmp;
pub use print::Printer;
pub use subst::{alternates_quantifiers, mentions, quantified, visit, without_quantifiers, Substitution};

use crate::ops::IntPredicate;
use std::sync::Arc;

/// A handle to an expression in an [`ExprPool`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExprId(pub u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sort {
    Bool,
    Bv(u32),
    /// Array from `Bv(index)` to `Bv(elem)`.
    Array { index: u32, elem: u32 },
}

impl Sort {
    /// Memory: byte offsets to bytes.
    pub const MEMORY: Sort = Sort::Array { index: 64, elem: 8 };
    pub fn bv_width(self) -> u32 {
        match self {
            Sort::Bv(w) => w,
            other => panic!("expected a bit-vector sort, got {other:?}"),
        }
    }
}

/// Bit-vector operations: the IR's binary operators, with LLVM semantics (wrapping; division by
/// zero is left to the SMT semantics, which is sound because no native run survives it).
pub use crate::ops::BinOp as BvOp;

/// What a symbol stands for; decides how it is named and printed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    /// The initial value v̲ of a program variable or input.
    Input,
    /// A path counter κ_i (iterations of the i-th backbone of some loop).
    Kappa(u32),
    /// A bound iteration index τ_i.
    Tau(u32),
    /// An auxiliary constant (unfolding instances, artificial variables).
    Aux,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    Bool(bool),
    /// A constant of `width` ≤ 64 bits, value zero-extended.
    Const { width: u32, value: u64 },
    Symbol { name: Arc<str>, sort: Sort, kind: SymbolKind },
    Star(Sort),
    Not(ExprId),
    And(Vec<ExprId>),
    Or(Vec<ExprId>),
    Ite(ExprId, ExprId, ExprId),
    Bin(BvOp, ExprId, ExprId),
    /// Comparison; `Eq`/`Ne` also apply to Booleans.
    Cmp(IntPredicate, ExprId, ExprId),
    ZExt(ExprId, u32),
    SExt(ExprId, u32),
    /// Bits `hi..=lo`.
    Extract { hi: u32, lo: u32, e: ExprId },
    /// `width` bits little-endian from `array` at byte `offset`.
    Load { array: ExprId, offset: ExprId, width: u32 },
    /// `array` with `width` bits of `value` written little-endian at byte `offset`.
    Store { array: ExprId, offset: ExprId, value: ExprId, width: u32 },
    /// An array whose every element is `value`.
    ConstArray { index: u32, value: ExprId },
    /// Element of a non-memory array (e.g. the nondet input stream).
    Select(ExprId, ExprId),
    /// The array whose element at index `var` is `body` (λvar. body): memory given element-wise,
    /// e.g. what a fill loop leaves for any iteration count ([`crate::summary`]). `var` is a
    /// symbol of the index sort, bound here (not a child: substitution leaves it alone). Z3
    /// reduces a read of it to `body` at the index, so no quantifier reaches the solver.
    Lambda { var: ExprId, body: ExprId },
    Forall(Vec<ExprId>, ExprId),
    Exists(Vec<ExprId>, ExprId),
}

/// Masks `v` to `width` bits.
pub fn mask(width: u32, v: u64) -> u64 {
    if width >= 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

/// Interprets the low `width` bits of `v` as a signed number.
pub fn to_signed(width: u32, v: u64) -> i64 {
    if width == 0 {
        return 0;
    }
    if width >= 64 {
        v as i64
    } else {
        ((v << (64 - width)) as i64) >> (64 - width)
    }
}
