//! The expression arena: interning (hash-consing) plus simplifying smart constructors.

use super::{mask, to_signed, BvOp, Expr, ExprId, Sort, SymbolKind};
use crate::ops::IntPredicate;
use std::collections::HashMap;
use std::sync::Arc;

/// Owns every expression; identical expressions get identical ids. Plain data, so an immutable
/// pool can be shared between solver threads.
#[derive(Clone, Debug, Default)]
pub struct ExprPool {
    nodes: Vec<Expr>,
    sorts: Vec<Sort>,
    index: HashMap<Expr, ExprId>,
    /// What the executors modelled as ⋆ and why (`the result of \`f\` (no definition)`):
    /// every ⋆ is one hash-consed node per sort, so its causes are kept beside it, for the
    /// reasons of an `unknown` verdict.
    star_causes: std::collections::BTreeSet<String>,
}

impl ExprPool {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn get(&self, id: ExprId) -> &Expr {
        &self.nodes[id.0 as usize]
    }

    pub fn sort(&self, id: ExprId) -> Sort {
        self.sorts[id.0 as usize]
    }

    pub fn width(&self, id: ExprId) -> u32 {
        self.sort(id).bv_width()
    }

    pub fn is_star(&self, id: ExprId) -> bool {
        matches!(self.get(id), Expr::Star(_))
    }

    pub fn as_const(&self, id: ExprId) -> Option<u64> {
        match self.get(id) {
            Expr::Const { value, .. } => Some(*value),
            _ => None,
        }
    }

    pub fn as_bool(&self, id: ExprId) -> Option<bool> {
        match self.get(id) {
            Expr::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn intern(&mut self, e: Expr, sort: Sort) -> ExprId {
        if let Some(&id) = self.index.get(&e) {
            return id;
        }
        let id = ExprId(self.nodes.len() as u32);
        self.nodes.push(e.clone());
        self.sorts.push(sort);
        self.index.insert(e, id);
        id
    }

    // ----- leaves -----

    pub fn bool(&mut self, b: bool) -> ExprId {
        self.intern(Expr::Bool(b), Sort::Bool)
    }
    pub fn tt(&mut self) -> ExprId {
        self.bool(true)
    }
    pub fn ff(&mut self) -> ExprId {
        self.bool(false)
    }

    pub fn bv(&mut self, width: u32, value: u64) -> ExprId {
        assert!((1..=64).contains(&width), "bit-vector constants have 1..=64 bits, got {width}");
        self.intern(Expr::Const { width, value: mask(width, value) }, Sort::Bv(width))
    }

    /// The width of `id`'s value in bits: 1 for a Boolean.
    pub fn value_bits(&self, id: ExprId) -> u32 {
        if self.sort(id) == Sort::Bool {
            1
        } else {
            self.width(id)
        }
    }

    /// The constant `value` in `like`'s sort: a Boolean (bit 0) or a bit-vector of its width.
    pub fn constant_like(&mut self, like: ExprId, value: u64) -> ExprId {
        if self.sort(like) == Sort::Bool {
            self.bool(value & 1 == 1)
        } else {
            let w = self.width(like);
            self.bv(w, value)
        }
    }

    pub fn symbol(&mut self, name: &str, sort: Sort, kind: SymbolKind) -> ExprId {
        self.intern(Expr::Symbol { name: Arc::from(name), sort, kind }, sort)
    }

    pub fn star(&mut self, sort: Sort) -> ExprId {
        self.intern(Expr::Star(sort), sort)
    }

    /// Records why some value became ⋆ (see [`ExprPool::star_causes`]).
    pub fn note_star_cause(&mut self, cause: String) {
        if self.star_causes.len() < 64 {
            self.star_causes.insert(cause);
        }
    }

    /// The causes recorded with [`ExprPool::note_star_cause`].
    pub fn star_causes(&self) -> &std::collections::BTreeSet<String> {
        &self.star_causes
    }

    /// ⋆ of `sort` if any of `ops` is ⋆.
    fn absorb(&mut self, ops: &[ExprId], sort: Sort) -> Option<ExprId> {
        ops.iter().any(|&o| self.is_star(o)).then(|| self.star(sort))
    }

    // ----- Boolean structure -----

    pub fn not(&mut self, a: ExprId) -> ExprId {
        if let Some(s) = self.absorb(&[a], Sort::Bool) {
            return s;
        }
        match self.get(a).clone() {
            Expr::Bool(b) => self.bool(!b),
            Expr::Not(x) => x,
            Expr::Cmp(p, x, y) if matches!(self.sort(x), Sort::Bv(_)) || matches!(p, IntPredicate::Eq | IntPredicate::Ne) => {
                self.cmp(p.negate(), x, y)
            }
            _ => self.intern(Expr::Not(a), Sort::Bool),
        }
    }

    pub fn and(&mut self, items: impl IntoIterator<Item = ExprId>) -> ExprId {
        self.junction(items, true)
    }

    pub fn or(&mut self, items: impl IntoIterator<Item = ExprId>) -> ExprId {
        self.junction(items, false)
    }

    /// `and` (is_and) or `or`: flattened, constants absorbed, duplicates removed.
    fn junction(&mut self, items: impl IntoIterator<Item = ExprId>, is_and: bool) -> ExprId {
        let mut out: Vec<ExprId> = vec![];
        let mut star = false;
        let mut stack: Vec<ExprId> = items.into_iter().collect();
        stack.reverse();
        while let Some(x) = stack.pop() {
            match self.get(x) {
                Expr::Bool(b) if *b == is_and => continue, // neutral element
                Expr::Bool(_) => return self.bool(!is_and), // absorbing element
                Expr::Star(_) => star = true,
                Expr::And(xs) if is_and => stack.extend(xs.iter().rev()),
                Expr::Or(xs) if !is_and => stack.extend(xs.iter().rev()),
                _ => {
                    if !out.contains(&x) {
                        out.push(x);
                    }
                }
            }
        }
        if star {
            return self.star(Sort::Bool);
        }
        match out.len() {
            0 => self.bool(is_and),
            1 => out[0],
            _ => self.intern(if is_and { Expr::And(out) } else { Expr::Or(out) }, Sort::Bool),
        }
    }

    pub fn implies(&mut self, a: ExprId, b: ExprId) -> ExprId {
        let na = self.not(a);
        self.or([na, b])
    }

    pub fn ite(&mut self, c: ExprId, a: ExprId, b: ExprId) -> ExprId {
        let sort = self.sort(a);
        if let Some(k) = self.as_bool(c) {
            return if k { a } else { b };
        }
        if a == b {
            return a;
        }
        if let Some(s) = self.absorb(&[c, a, b], sort) {
            return s;
        }
        // ite(x ≠ 0, x, 0) is x (also as 0 <ᵤ x, x >ᵤ 0, and with x zero-extended in the then
        // branch): the iteration count of `for (i = 0; i < n; i++)` is ite(0 <ᵤ n, n, 0).
        if self.as_const(b) == Some(0) && self.nonzero_test_of(c).is_some_and(|x| a == x || matches!(self.get(a), Expr::ZExt(y, _) if *y == x)) {
            return a;
        }
        if sort == Sort::Bool {
            match (self.as_bool(a), self.as_bool(b)) {
                (Some(true), Some(false)) => return c,
                (Some(false), Some(true)) => return self.not(c),
                _ => {}
            }
        }
        self.intern(Expr::Ite(c, a, b), sort)
    }

    /// `x` when `c` says exactly that the bit-vector `x` is not zero.
    fn nonzero_test_of(&self, c: ExprId) -> Option<ExprId> {
        let Expr::Cmp(p, l, r) = self.get(c) else { return None };
        let (zero_l, zero_r) = (self.as_const(*l) == Some(0), self.as_const(*r) == Some(0));
        match p {
            IntPredicate::Ult if zero_l => Some(*r),
            IntPredicate::Ugt if zero_r => Some(*l),
            IntPredicate::Ne if zero_r => Some(*l),
            IntPredicate::Ne if zero_l => Some(*r),
            _ => None,
        }
    }

    // ----- bit-vectors -----

    pub fn bin(&mut self, op: BvOp, a: ExprId, b: ExprId) -> ExprId {
        let w = self.width(a);
        debug_assert_eq!(w, self.width(b), "operand widths of {op:?}");
        let sort = Sort::Bv(w);
        if let (Some(x), Some(y)) = (self.as_const(a), self.as_const(b)) {
            if let Some(v) = fold_bin(op, w, x, y) {
                return self.bv(w, v);
            }
        }
        if let Some(s) = self.absorb(&[a, b], sort) {
            return s;
        }
        use BvOp::*;
        let ones = mask(w, u64::MAX);
        let (ca, cb) = (self.as_const(a), self.as_const(b));
        // Constants to the right of commutative operators.
        if matches!(op, Add | Mul | And | Or | Xor) && ca.is_some() && cb.is_none() {
            return self.bin(op, b, a);
        }
        // Products of two non-constants in one order (the older operand first), so that `a·b`
        // and `b·a` are one node: the same value to Z3, and the same uninterpreted term where
        // products are abstracted (`solve::Query::nonlinear_as_functions`).
        if op == Mul && ca.is_none() && cb.is_none() && b < a {
            return self.bin(op, b, a);
        }
        match (op, cb) {
            (Add | Sub | Or | Xor | Shl | LShr | AShr, Some(0)) => return a,
            (Mul | UDiv | SDiv, Some(1)) => return a,
            (Mul | And, Some(0)) => return b,
            (And, Some(c)) if c == ones => return a,
            (Or, Some(c)) if c == ones => return b,
            // x - c  →  x + (−c): one linear form for the loop rules.
            (Sub, Some(c)) => {
                let neg = self.bv(w, c.wrapping_neg());
                return self.bin(Add, a, neg);
            }
            // (x + c1) + c2  →  x + (c1 + c2)
            (Add, Some(c2)) => {
                if let Expr::Bin(Add, x, c1) = self.get(a).clone() {
                    if let Some(c1) = self.as_const(c1) {
                        let c = self.bv(w, c1.wrapping_add(c2));
                        return self.bin(Add, x, c);
                    }
                }
            }
            _ => {}
        }
        // (x + y) − x → y and (x + y) − (x + z) → y − z: pointer differences `p − s` where both
        // are one object's address plus offsets.
        if op == Sub {
            if let Expr::Bin(Add, x, y) = self.get(a).clone() {
                if b == x {
                    return y;
                }
                if b == y {
                    return x;
                }
                if let Expr::Bin(Add, x2, y2) = self.get(b).clone() {
                    if x == x2 {
                        return self.bin(Sub, y, y2);
                    }
                    if y == y2 {
                        return self.bin(Sub, x, x2);
                    }
                }
            }
        }
        if a == b {
            match op {
                Sub | Xor => return self.bv(w, 0),
                And | Or => return a,
                _ => {}
            }
        }
        self.intern(Expr::Bin(op, a, b), sort)
    }

    pub fn cmp(&mut self, p: IntPredicate, a: ExprId, b: ExprId) -> ExprId {
        use IntPredicate::*;
        // ⋆ first: two unknowns are one hash-consed node, but not one value, so `⋆ = ⋆` must
        // not fold to `true` below.
        if let Some(s) = self.absorb(&[a, b], Sort::Bool) {
            return s;
        }
        if self.sort(a) == Sort::Bool {
            assert!(matches!(p, Eq | Ne), "only = and ≠ compare Booleans");
            let (ba, bb) = (self.as_bool(a), self.as_bool(b));
            let eq = match (ba, bb) {
                (Some(x), Some(y)) => Some(self.bool(x == y)),
                (_, Some(true)) => Some(a),
                (Some(true), _) => Some(b),
                (_, Some(false)) => Some(self.not(a)),
                (Some(false), _) => Some(self.not(b)),
                _ if a == b => Some(self.tt()),
                _ => None,
            };
            if let Some(eq) = eq {
                return if p == Eq { eq } else { self.not(eq) };
            }
        } else {
            let w = self.width(a);
            if let (Some(x), Some(y)) = (self.as_const(a), self.as_const(b)) {
                return self.bool(fold_cmp(p, w, x, y));
            }
            if a == b {
                return self.bool(matches!(p, Eq | Uge | Ule | Sge | Sle));
            }
            // ite(c, k1, k2) ⋈ k  →  ite(c, k1 ⋈ k, k2 ⋈ k): turns C's int-as-bool back into c.
            if let (Expr::Ite(c, x, y), Some(_)) = (self.get(a).clone(), self.as_const(b)) {
                if self.as_const(x).is_some() && self.as_const(y).is_some() {
                    let (l, r) = (self.cmp(p, x, b), self.cmp(p, y, b));
                    return self.ite(c, l, r);
                }
            }
        }
        self.intern(Expr::Cmp(p, a, b), Sort::Bool)
    }

    pub fn eq(&mut self, a: ExprId, b: ExprId) -> ExprId {
        self.cmp(IntPredicate::Eq, a, b)
    }

    pub fn zext(&mut self, a: ExprId, w: u32) -> ExprId {
        self.extend(a, w, false)
    }

    pub fn sext(&mut self, a: ExprId, w: u32) -> ExprId {
        self.extend(a, w, true)
    }

    /// Zero- or sign-extension to `w` bits, folding constants and nested extensions of one kind.
    fn extend(&mut self, a: ExprId, w: u32, signed: bool) -> ExprId {
        let from = self.width(a);
        assert!(w >= from, "extension to a narrower width");
        if w == from {
            return a;
        }
        if let Some(s) = self.absorb(&[a], Sort::Bv(w)) {
            return s;
        }
        if let Some(c) = self.as_const(a) {
            if w <= 64 {
                return self.bv(w, if signed { to_signed(from, c) as u64 } else { c });
            }
        }
        match (self.get(a).clone(), signed) {
            (Expr::ZExt(x, _), false) | (Expr::SExt(x, _), true) => self.extend(x, w, signed),
            _ => self.intern(if signed { Expr::SExt(a, w) } else { Expr::ZExt(a, w) }, Sort::Bv(w)),
        }
    }

    pub fn extract(&mut self, hi: u32, lo: u32, a: ExprId) -> ExprId {
        let from = self.width(a);
        assert!(hi >= lo && hi < from, "extract {hi}..{lo} of a {from}-bit value");
        let w = hi - lo + 1;
        if lo == 0 && w == from {
            return a;
        }
        if let Some(s) = self.absorb(&[a], Sort::Bv(w)) {
            return s;
        }
        if let Some(c) = self.as_const(a) {
            return self.bv(w, c >> lo);
        }
        match self.get(a).clone() {
            Expr::ZExt(x, _) | Expr::SExt(x, _) if hi < self.width(x) => return self.extract(hi, lo, x),
            Expr::ZExt(x, _) if lo >= self.width(x) => return self.bv(w, 0),
            Expr::Extract { lo: lo2, e, .. } => return self.extract(hi + lo2, lo + lo2, e),
            // The low bits of a ring operation are the operation on the low bits, and the low
            // bits of an extension wider than them are a narrower extension: C's integer
            // promotions (`unsigned char s; s += i` is trunc8(zext32(s) + zext32(i))) come out
            // as the narrow operation, which the loop rules recognise.
            Expr::Bin(op @ (BvOp::Add | BvOp::Sub | BvOp::Mul | BvOp::And | BvOp::Or | BvOp::Xor), x, y) if lo == 0 => {
                let (x, y) = (self.extract(hi, 0, x), self.extract(hi, 0, y));
                return self.bin(op, x, y);
            }
            Expr::ZExt(x, _) if lo == 0 && w > self.width(x) => return self.zext(x, w),
            Expr::SExt(x, _) if lo == 0 && w > self.width(x) => return self.sext(x, w),
            _ => {}
        }
        self.intern(Expr::Extract { hi, lo, e: a }, Sort::Bv(w))
    }

    pub fn trunc(&mut self, a: ExprId, w: u32) -> ExprId {
        self.extract(w - 1, 0, a)
    }

    /// Zero-extends or truncates to `w` bits.
    pub fn resize(&mut self, a: ExprId, w: u32) -> ExprId {
        let from = self.width(a);
        if w >= from {
            self.zext(a, w)
        } else {
            self.trunc(a, w)
        }
    }

    /// A Boolean as a `w`-bit 0/1 (`zext i1`), or all ones when `signed` (`sext i1`).
    pub fn bool_to_bv(&mut self, c: ExprId, w: u32, signed: bool) -> ExprId {
        let one = self.bv(w, if signed { u64::MAX } else { 1 });
        let zero = self.bv(w, 0);
        self.ite(c, one, zero)
    }

    /// The low bit of a bit-vector as a Boolean (`trunc to i1`).
    pub fn low_bit(&mut self, a: ExprId) -> ExprId {
        let bit = self.extract(0, 0, a);
        let one = self.bv(1, 1);
        self.eq(bit, one)
    }

    // ----- memory and arrays -----

    pub fn const_array(&mut self, index: u32, value: ExprId) -> ExprId {
        let elem = self.width(value);
        self.intern(Expr::ConstArray { index, value }, Sort::Array { index, elem })
    }

    pub fn select(&mut self, array: ExprId, index: ExprId) -> ExprId {
        let Sort::Array { elem, .. } = self.sort(array) else { panic!("select from a non-array") };
        if let Some(s) = self.absorb(&[array, index], Sort::Bv(elem)) {
            return s;
        }
        if let Expr::ConstArray { value, .. } = self.get(array) {
            return *value;
        }
        self.intern(Expr::Select(array, index), Sort::Bv(elem))
    }

    /// λ`var`. `body`: the array whose element at index `var` is `body` (`var` a bit-vector
    /// symbol, bound by it). A ⋆ body makes the whole array ⋆.
    pub fn lambda(&mut self, var: ExprId, body: ExprId) -> ExprId {
        let sort = Sort::Array { index: self.width(var), elem: self.width(body) };
        if let Some(s) = self.absorb(&[body], sort) {
            return s;
        }
        self.intern(Expr::Lambda { var, body }, sort)
    }

    /// `width` bits little-endian at byte `offset` of a memory array.
    pub fn load(&mut self, array: ExprId, offset: ExprId, width: u32) -> ExprId {
        assert!(width.is_multiple_of(8) && width > 0 && width <= 64, "loads are whole bytes, ≤ 64 bits");
        if let Some(s) = self.absorb(&[array, offset], Sort::Bv(width)) {
            return s;
        }
        match self.get(array).clone() {
            Expr::Store { array: inner, offset: o2, value, width: w2 } => {
                if o2 == offset && w2 == width {
                    return value;
                }
                if self.disjoint(offset, width, o2, w2) {
                    return self.load(inner, offset, width);
                }
            }
            // Through a choice between a λ and another array, so that the λ's read reduces.
            Expr::Ite(c, a, b) if matches!(self.get(a), Expr::Lambda { .. }) || matches!(self.get(b), Expr::Lambda { .. }) => {
                let (ra, rb) = (self.load(a, offset, width), self.load(b, offset, width));
                return self.ite(c, ra, rb);
            }
            // A read of λρ. body is body at the read's bytes (beta reduction), little endian.
            Expr::Lambda { var, body } => {
                let mut out: Option<ExprId> = None;
                for k in 0..width / 8 {
                    let step = self.bv(self.width(offset), k as u64);
                    let at = self.bin(BvOp::Add, offset, step);
                    let mut s = super::Substitution::new();
                    s.insert(var, at);
                    let byte = s.apply(self, body);
                    let byte = self.zext(byte, width);
                    out = Some(match out {
                        None => byte,
                        Some(low) => {
                            let shift = self.bv(width, 8 * k as u64);
                            let high = self.bin(BvOp::Shl, byte, shift);
                            self.bin(BvOp::Or, low, high)
                        }
                    });
                }
                return out.expect("loads have at least one byte");
            }
            Expr::ConstArray { value, .. } => {
                if let Some(byte) = self.as_const(value) {
                    let v = (0..width / 8).fold(0u64, |acc, k| acc | (byte << (8 * k)));
                    return self.bv(width, v);
                }
            }
            _ => {}
        }
        self.intern(Expr::Load { array, offset, width }, Sort::Bv(width))
    }

    pub fn store(&mut self, array: ExprId, offset: ExprId, value: ExprId, width: u32) -> ExprId {
        assert!(width.is_multiple_of(8) && width > 0 && width <= 64, "stores are whole bytes, ≤ 64 bits");
        let sort = self.sort(array);
        if let Some(s) = self.absorb(&[array, offset, value], sort) {
            return s;
        }
        // Overwriting the same cell: the older store is dead.
        if let Expr::Store { array: inner, offset: o2, width: w2, .. } = self.get(array).clone() {
            if o2 == offset && w2 == width {
                return self.store(inner, offset, value, width);
            }
        }
        self.intern(Expr::Store { array, offset, value, width }, sort)
    }

    /// Splits a byte offset into a symbolic base and a constant: `base + c`.
    fn split_offset(&self, e: ExprId) -> (Option<ExprId>, u64) {
        if let Some(c) = self.as_const(e) {
            return (None, c);
        }
        if let Expr::Bin(BvOp::Add, x, c) = self.get(e) {
            if let Some(c) = self.as_const(*c) {
                return (Some(*x), c);
            }
        }
        (Some(e), 0)
    }

    /// Whether `[o1, o1 + w1/8)` and `[o2, o2 + w2/8)` certainly do not overlap.
    fn disjoint(&self, o1: ExprId, w1: u32, o2: ExprId, w2: u32) -> bool {
        let (b1, c1) = self.split_offset(o1);
        let (b2, c2) = self.split_offset(o2);
        if b1 != b2 {
            return false;
        }
        let (c1, c2) = (c1 as i64 as i128, c2 as i64 as i128);
        c1 + (w1 / 8) as i128 <= c2 || c2 + (w2 / 8) as i128 <= c1
    }

    // ----- quantifiers -----

    pub fn forall(&mut self, vars: Vec<ExprId>, body: ExprId) -> ExprId {
        self.quantifier(vars, body, true)
    }

    pub fn exists(&mut self, vars: Vec<ExprId>, body: ExprId) -> ExprId {
        self.quantifier(vars, body, false)
    }

    fn quantifier(&mut self, vars: Vec<ExprId>, body: ExprId, universal: bool) -> ExprId {
        // Bit-vector domains are non-empty, so a constant body stays what it is.
        if vars.is_empty() || self.as_bool(body).is_some() || self.is_star(body) {
            return body;
        }
        let e = if universal { Expr::Forall(vars, body) } else { Expr::Exists(vars, body) };
        self.intern(e, Sort::Bool)
    }

    /// Rebuilds node `e` with new children through the smart constructors (used by substitution).
    pub fn rebuild(&mut self, e: &Expr, kids: &[ExprId]) -> ExprId {
        match e {
            Expr::Bool(_) | Expr::Const { .. } | Expr::Symbol { .. } | Expr::Star(_) => {
                unreachable!("leaves are not rebuilt")
            }
            Expr::Not(_) => self.not(kids[0]),
            Expr::And(_) => self.and(kids.iter().copied()),
            Expr::Or(_) => self.or(kids.iter().copied()),
            Expr::Ite(..) => self.ite(kids[0], kids[1], kids[2]),
            Expr::Bin(op, ..) => self.bin(*op, kids[0], kids[1]),
            Expr::Cmp(p, ..) => self.cmp(*p, kids[0], kids[1]),
            Expr::ZExt(_, w) => self.zext(kids[0], *w),
            Expr::SExt(_, w) => self.sext(kids[0], *w),
            Expr::Extract { hi, lo, .. } => self.extract(*hi, *lo, kids[0]),
            Expr::Load { width, .. } => self.load(kids[0], kids[1], *width),
            Expr::Store { width, .. } => self.store(kids[0], kids[1], kids[2], *width),
            Expr::ConstArray { index, .. } => self.const_array(*index, kids[0]),
            Expr::Select(..) => self.select(kids[0], kids[1]),
            Expr::Lambda { var, .. } => self.lambda(*var, kids[0]),
            Expr::Forall(vs, _) => self.forall(vs.clone(), kids[0]),
            Expr::Exists(vs, _) => self.exists(vs.clone(), kids[0]),
        }
    }
}

/// The children of a node, in the order [`ExprPool::rebuild`] expects.
pub fn children(e: &Expr) -> Vec<ExprId> {
    match e {
        Expr::Bool(_) | Expr::Const { .. } | Expr::Symbol { .. } | Expr::Star(_) => vec![],
        Expr::Not(a) | Expr::ZExt(a, _) | Expr::SExt(a, _) | Expr::Extract { e: a, .. } => vec![*a],
        Expr::ConstArray { value, .. } => vec![*value],
        Expr::And(xs) | Expr::Or(xs) => xs.clone(),
        Expr::Ite(c, a, b) => vec![*c, *a, *b],
        Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) | Expr::Select(a, b) => vec![*a, *b],
        Expr::Load { array, offset, .. } => vec![*array, *offset],
        Expr::Store { array, offset, value, .. } => vec![*array, *offset, *value],
        // Bound variables are not children: substitution must not touch them.
        Expr::Forall(_, body) | Expr::Exists(_, body) | Expr::Lambda { body, .. } => vec![*body],
    }
}

/// Constant folding with LLVM semantics; `None` where the result is undefined behaviour
/// (division by zero, signed overflow of division, over-wide shifts) and is left symbolic.
fn fold_bin(op: BvOp, w: u32, x: u64, y: u64) -> Option<u64> {
    use BvOp::*;
    let (sx, sy) = (to_signed(w, x), to_signed(w, y));
    let min = to_signed(w, 1u64 << (w - 1));
    Some(mask(
        w,
        match op {
            Add => x.wrapping_add(y),
            Sub => x.wrapping_sub(y),
            Mul => x.wrapping_mul(y),
            UDiv if y != 0 => x / y,
            URem if y != 0 => x % y,
            SDiv if y != 0 && !(sx == min && sy == -1) => sx.wrapping_div(sy) as u64,
            SRem if y != 0 && !(sx == min && sy == -1) => sx.wrapping_rem(sy) as u64,
            Shl if y < w as u64 => x << y,
            LShr if y < w as u64 => x >> y,
            AShr if y < w as u64 => (sx >> y) as u64,
            And => x & y,
            Or => x | y,
            Xor => x ^ y,
            _ => return None,
        },
    ))
}

/// `x p y` of two `w`-bit values.
pub(crate) fn fold_cmp(p: IntPredicate, w: u32, x: u64, y: u64) -> bool {
    use IntPredicate::*;
    let (sx, sy) = (to_signed(w, x), to_signed(w, y));
    match p {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn x32(p: &mut ExprPool) -> ExprId {
        p.symbol("x", Sort::Bv(32), SymbolKind::Input)
    }

    #[test]
    fn hash_consing_shares_identical_expressions() {
        let mut p = ExprPool::new();
        let x = x32(&mut p);
        let one = p.bv(32, 1);
        let a = p.bin(BvOp::Mul, x, one);
        assert_eq!(a, x, "x·1 = x");
        let two = p.bv(32, 2);
        let s1 = p.bin(BvOp::Mul, x, two);
        let s2 = p.bin(BvOp::Mul, two, x);
        assert_eq!(s1, s2, "commutative operands are normalised");
        let y = p.symbol("y", Sort::Bv(32), SymbolKind::Input);
        let xy = p.bin(BvOp::Mul, x, y);
        assert_eq!(xy, p.bin(BvOp::Mul, y, x), "so are two non-constant factors");
    }

    #[test]
    fn a_value_kept_only_when_nonzero_is_the_value() {
        let mut p = ExprPool::new();
        let x = x32(&mut p);
        let zero = p.bv(32, 0);
        let zero64 = p.bv(64, 0);
        let pos = p.cmp(IntPredicate::Ult, zero, x);
        assert_eq!(p.ite(pos, x, zero), x, "ite(0 <ᵤ x, x, 0) = x");
        let wide = p.zext(x, 64);
        assert_eq!(p.ite(pos, wide, zero64), wide, "also zero-extended");
        let ne = p.cmp(IntPredicate::Ne, x, zero);
        assert_eq!(p.ite(ne, x, zero), x);
        // Not for a signed test (x < 0 keeps 0), nor for another value.
        let spos = p.cmp(IntPredicate::Slt, zero, x);
        assert_ne!(p.ite(spos, x, zero), x);
        let one = p.bv(32, 1);
        assert_ne!(p.ite(pos, one, zero), one);
    }

    #[test]
    fn constant_folding_wraps_like_llvm() {
        let mut p = ExprPool::new();
        let a = p.bv(8, 250);
        let b = p.bv(8, 10);
        let s = p.bin(BvOp::Add, a, b);
        assert_eq!(p.as_const(s), Some(4));
        let m = p.bv(8, 0x80);
        let seven = p_bv(&mut p, 8, 7);
        let s = p.bin(BvOp::AShr, m, seven);
        assert_eq!(p.as_const(s), Some(0xff));
        let lt = p.cmp(IntPredicate::Slt, m, b);
        assert_eq!(p.as_bool(lt), Some(true), "-128 <s 10");
        let ult = p.cmp(IntPredicate::Ult, m, b);
        assert_eq!(p.as_bool(ult), Some(false), "128 >u 10");
        // Division by zero is undefined: not folded.
        let z = p.bv(8, 0);
        let d = p.bin(BvOp::UDiv, a, z);
        assert!(p.as_const(d).is_none());
    }

    fn p_bv(p: &mut ExprPool, w: u32, v: u64) -> ExprId {
        p.bv(w, v)
    }

    #[test]
    fn linear_normal_form_collects_constants() {
        let mut p = ExprPool::new();
        let x = x32(&mut p);
        let c3 = p.bv(32, 3);
        let c5 = p.bv(32, 5);
        let a = p.bin(BvOp::Add, x, c3);
        let b = p.bin(BvOp::Sub, a, c5);
        let two_neg = p.bv(32, (-2i64) as u64);
        assert_eq!(p.get(b), &Expr::Bin(BvOp::Add, x, two_neg));
    }

    #[test]
    fn star_absorbs_and_tests_keep_it() {
        let mut p = ExprPool::new();
        let x = x32(&mut p);
        let s = p.star(Sort::Bv(32));
        let sum = p.bin(BvOp::Add, x, s);
        assert!(p.is_star(sum));
        let c = p.cmp(IntPredicate::Eq, sum, x);
        assert!(p.is_star(c), "a predicate over ⋆ is ⋆ (the APC drops it as a test)");
        let n = p.not(c);
        assert!(p.is_star(n), "¬⋆ is ⋆, never ¬true");
        // Two unknowns share one node but are not one value: no comparison of them folds.
        let s2 = p.star(Sort::Bv(32));
        for pred in [IntPredicate::Eq, IntPredicate::Ne, IntPredicate::Sgt, IntPredicate::Ule] {
            let c = p.cmp(pred, s, s2);
            assert!(p.is_star(c), "⋆ {pred:?} ⋆ must stay ⋆");
        }
        let b = p.star(Sort::Bool);
        let c = p.eq(b, b);
        assert!(p.is_star(c), "⋆ = ⋆ on Booleans stays ⋆");
        let d = p.bin(BvOp::Sub, s, s2);
        assert!(p.is_star(d), "⋆ − ⋆ is ⋆, not 0");
        let f = p.ff();
        let conj = p.and([f, c]);
        assert_eq!(p.as_bool(conj), Some(false), "false ∧ ⋆ = false");
    }

    #[test]
    fn comparisons_distribute_over_constant_ites() {
        let mut p = ExprPool::new();
        let x = x32(&mut p);
        let c = p.bv(32, 100);
        let gt = p.cmp(IntPredicate::Sgt, x, c);
        let as_int = p.bool_to_bv(gt, 32, false);
        let zero = p.bv(32, 0);
        let back = p.cmp(IntPredicate::Ne, as_int, zero);
        assert_eq!(back, gt, "(ite(c,1,0) ≠ 0) = c");
        let eq0 = p.cmp(IntPredicate::Eq, as_int, zero);
        assert_eq!(p.get(eq0), &Expr::Cmp(IntPredicate::Sle, x, c));
    }

    #[test]
    fn common_terms_cancel_in_differences() {
        let mut p = ExprPool::new();
        let base = p.symbol("&s", Sort::Bv(64), SymbolKind::Input);
        let (i, j) = (p.symbol("i", Sort::Bv(64), SymbolKind::Input), p.symbol("j", Sort::Bv(64), SymbolKind::Input));
        let pi = p.bin(BvOp::Add, base, i);
        let pj = p.bin(BvOp::Add, base, j);
        assert_eq!(p.bin(BvOp::Sub, pi, base), i, "(&s + i) − &s = i");
        let d = p.bin(BvOp::Sub, pi, pj);
        assert_eq!(p.get(d), &Expr::Bin(BvOp::Sub, i, j), "(&s + i) − (&s + j) = i − j");
    }

    #[test]
    fn negation_flips_predicates() {
        let mut p = ExprPool::new();
        let x = x32(&mut p);
        let c = p.bv(32, 7);
        let lt = p.cmp(IntPredicate::Slt, x, c);
        let n = p.not(lt);
        assert_eq!(p.get(n), &Expr::Cmp(IntPredicate::Sge, x, c));
    }

    #[test]
    fn load_after_store_and_disjoint_cells() {
        let mut p = ExprPool::new();
        let mem = p.symbol("A", Sort::MEMORY, SymbolKind::Input);
        let i = p.symbol("i", Sort::Bv(64), SymbolKind::Input);
        let v = p.symbol("v", Sort::Bv(32), SymbolKind::Input);
        let m1 = p.store(mem, i, v, 32);
        assert_eq!(p.load(m1, i, 32), v);
        let four = p.bv(64, 4);
        let i4 = p.bin(BvOp::Add, i, four);
        let l = p.load(m1, i4, 32);
        assert_eq!(p.get(l), &Expr::Load { array: mem, offset: i4, width: 32 }, "i+4 does not overlap [i, i+4)");
        let two = p.bv(64, 2);
        let i2 = p.bin(BvOp::Add, i, two);
        let l = p.load(m1, i2, 32);
        assert!(matches!(p.get(l), Expr::Load { array, .. } if *array == m1), "overlap stays symbolic");
        let zero = p.bv(8, 0);
        let z = p.const_array(64, zero);
        let l = p.load(z, i, 32);
        assert_eq!(p.as_const(l), Some(0));
    }

    #[test]
    fn extract_and_extend_fold() {
        let mut p = ExprPool::new();
        let c = p.bv(8, 0xfe);
        let s = p.sext(c, 32);
        assert_eq!(p.as_const(s), Some(0xffff_fffe));
        let x = p.symbol("c", Sort::Bv(8), SymbolKind::Input);
        let z = p.zext(x, 32);
        assert_eq!(p.trunc(z, 8), x);
        let hi = p.extract(31, 8, z);
        assert_eq!(p.as_const(hi), Some(0));
    }
}
