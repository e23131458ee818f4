//! Translation of pool expressions into Z3 terms.

use super::is_nonlinear;
use crate::expr::{BvOp, Expr, ExprId, ExprPool, Sort};
use crate::ir::IntPredicate;
use std::collections::HashMap;
use z3::ast::{Array, Ast, Bool, Dynamic, BV};

/// Translates pool expressions into Z3 terms, memoised.
pub(super) struct Translator<'a> {
    pub(super) pool: &'a ExprPool,
    memo: HashMap<ExprId, Dynamic>,
    fresh: u32,
    /// See [`Query::nonlinear_as_functions`].
    pub(super) nonlinear_as_functions: bool,
    /// The uninterpreted function standing for each nonlinear operation, by operation and width.
    functions: HashMap<(BvOp, u32), z3::FuncDecl>,
}

fn z3_sort(s: Sort) -> z3::Sort {
    match s {
        Sort::Bool => z3::Sort::bool(),
        Sort::Bv(w) => z3::Sort::bitvector(w),
        Sort::Array { index, elem } => z3::Sort::array(&z3::Sort::bitvector(index), &z3::Sort::bitvector(elem)),
    }
}

impl<'a> Translator<'a> {
    pub(super) fn new(pool: &'a ExprPool) -> Self {
        Translator { pool, memo: HashMap::new(), fresh: 0, nonlinear_as_functions: false, functions: HashMap::new() }
    }

    fn bv(&mut self, e: ExprId) -> BV {
        self.translate(e).as_bv().expect("bit-vector term")
    }
    pub(super) fn boolean(&mut self, e: ExprId) -> Bool {
        self.translate(e).as_bool().expect("Boolean term")
    }
    fn array(&mut self, e: ExprId) -> Array {
        self.translate(e).as_array().expect("array term")
    }

    pub(super) fn translate(&mut self, root: ExprId) -> Dynamic {
        // Post-order without recursion: deep expressions must not overflow the stack.
        let mut stack = vec![(root, false)];
        while let Some((e, ready)) = stack.pop() {
            if self.memo.contains_key(&e) {
                continue;
            }
            let node = self.pool.get(e);
            if !ready {
                stack.push((e, true));
                for k in crate::expr::children_of(node) {
                    if !self.memo.contains_key(&k) {
                        stack.push((k, false));
                    }
                }
                continue;
            }
            let t = self.node(e);
            self.memo.insert(e, t);
        }
        self.memo[&root].clone()
    }

    fn node(&mut self, e: ExprId) -> Dynamic {
        let sort = self.pool.sort(e);
        match self.pool.get(e).clone() {
            Expr::Bool(b) => Bool::from_bool(b).into(),
            Expr::Const { width, value } => BV::from_u64(value, width).into(),
            Expr::Symbol { name, .. } => Dynamic::new_const(&*name, &z3_sort(sort)),
            Expr::Star(s) => {
                // ⋆ never reaches the solver inside a formula (it absorbs whatever contains it,
                // and ⋆ tests are dropped); should one arrive, an unconstrained constant is sound.
                self.fresh += 1;
                Dynamic::new_const(format!("⋆{}", self.fresh), &z3_sort(s))
            }
            Expr::Not(a) => self.boolean(a).not().into(),
            Expr::And(xs) => {
                let v: Vec<Bool> = xs.iter().map(|&x| self.boolean(x)).collect();
                Bool::and(&v).into()
            }
            Expr::Or(xs) => {
                let v: Vec<Bool> = xs.iter().map(|&x| self.boolean(x)).collect();
                Bool::or(&v).into()
            }
            Expr::Ite(c, a, b) => {
                let c = self.boolean(c);
                let (a, b) = (self.translate(a), self.translate(b));
                c.ite(&a, &b)
            }
            Expr::Bin(op, a, b) if self.nonlinear_as_functions && is_nonlinear(self.pool, op, a, b) => {
                let w = self.pool.width(a);
                let (mut a, mut b) = (self.bv(a), self.bv(b));
                if op == BvOp::Mul {
                    // Multiplication commutes: the function gets (min, max) of its operands, so
                    // `a·κ` and `n·a` are one term as soon as κ = n, whatever the order.
                    let lt = a.bvult(&b);
                    (a, b) = (lt.ite(&a, &b), lt.ite(&b, &a));
                }
                let f = self.functions.entry((op, w)).or_insert_with(|| {
                    let s = z3::Sort::bitvector(w);
                    z3::FuncDecl::new(format!("{op:?}{w}").to_lowercase(), &[&s, &s], &s)
                });
                f.apply(&[&a, &b])
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = (self.bv(a), self.bv(b));
                match op {
                    BvOp::Add => a.bvadd(&b),
                    BvOp::Sub => a.bvsub(&b),
                    BvOp::Mul => a.bvmul(&b),
                    BvOp::UDiv => a.bvudiv(&b),
                    BvOp::SDiv => a.bvsdiv(&b),
                    BvOp::URem => a.bvurem(&b),
                    BvOp::SRem => a.bvsrem(&b),
                    BvOp::Shl => a.bvshl(&b),
                    BvOp::LShr => a.bvlshr(&b),
                    BvOp::AShr => a.bvashr(&b),
                    BvOp::And => a.bvand(&b),
                    BvOp::Or => a.bvor(&b),
                    BvOp::Xor => a.bvxor(&b),
                }
                .into()
            }
            Expr::Cmp(p, a, b) => {
                if self.pool.sort(a) == Sort::Bool {
                    let (x, y) = (self.boolean(a), self.boolean(b));
                    let eq = x.iff(&y);
                    return if p == IntPredicate::Eq { eq.into() } else { eq.not().into() };
                }
                let (a, b) = (self.bv(a), self.bv(b));
                use IntPredicate::*;
                match p {
                    Eq => a.eq(&b),
                    Ne => a.eq(&b).not(),
                    Ugt => a.bvugt(&b),
                    Uge => a.bvuge(&b),
                    Ult => a.bvult(&b),
                    Ule => a.bvule(&b),
                    Sgt => a.bvsgt(&b),
                    Sge => a.bvsge(&b),
                    Slt => a.bvslt(&b),
                    Sle => a.bvsle(&b),
                }
                .into()
            }
            Expr::ZExt(a, w) => {
                let from = self.pool.width(a);
                self.bv(a).zero_ext(w - from).into()
            }
            Expr::SExt(a, w) => {
                let from = self.pool.width(a);
                self.bv(a).sign_ext(w - from).into()
            }
            Expr::Extract { hi, lo, e } => self.bv(e).extract(hi, lo).into(),
            Expr::Load { array, offset, width } => {
                let (arr, off) = (self.array(array), self.bv(offset));
                let mut out: Option<BV> = None;
                for k in 0..width / 8 {
                    let idx = off.bvadd(BV::from_u64(k as u64, 64));
                    let byte = arr.select(&idx).as_bv().expect("memory holds bytes");
                    // Little endian: byte k holds bits 8k..8k+7.
                    out = Some(match out {
                        None => byte,
                        Some(low) => byte.concat(&low),
                    });
                }
                out.expect("loads have at least one byte").into()
            }
            Expr::Store { array, offset, value, width } => {
                let (mut arr, off, val) = (self.array(array), self.bv(offset), self.bv(value));
                for k in 0..width / 8 {
                    let idx = off.bvadd(BV::from_u64(k as u64, 64));
                    arr = arr.store(&idx, &val.extract(8 * k + 7, 8 * k));
                }
                arr.into()
            }
            Expr::ConstArray { index, value } => {
                let v = self.translate(value);
                Array::const_array(&z3::Sort::bitvector(index), &v).into()
            }
            Expr::Select(a, i) => {
                let (a, i) = (self.array(a), self.bv(i));
                a.select(&i)
            }
            Expr::Lambda { var, body } => {
                let bound = self.translate(var);
                let body = self.translate(body);
                z3::ast::lambda_const(&[&bound as &dyn Ast], &body).into()
            }
            Expr::Forall(vars, body) | Expr::Exists(vars, body) => {
                let bound: Vec<Dynamic> = vars.iter().map(|&v| self.translate(v)).collect();
                let refs: Vec<&dyn Ast> = bound.iter().map(|d| d as &dyn Ast).collect();
                let body = self.boolean(body);
                if matches!(self.pool.get(e), Expr::Forall(..)) {
                    z3::ast::forall_const(&refs, &[], &body).into()
                } else {
                    z3::ast::exists_const(&refs, &[], &body).into()
                }
            }
        }
    }
}
