//! Printing expressions in the notation of the APC paper: x̲ for initial values, κ/τ for path
//! counters, ⋆, ite(·,·,·), ∀, ∃, ∧, ∨, ¬. Signed/unsigned operators carry a subscript letter.

use super::{to_signed, BvOp, Expr, ExprId, ExprPool, SymbolKind};
use crate::ops::IntPredicate;
use std::fmt::Write;

/// Prints expressions of one pool; output longer than `max_len` is cut with "…".
pub struct Printer<'a> {
    pool: &'a ExprPool,
    pub max_len: usize,
}

fn underline(name: &str) -> String {
    name.chars().flat_map(|c| [c, '\u{332}']).collect()
}

fn bvop(op: BvOp) -> &'static str {
    use BvOp::*;
    match op {
        Add => "+",
        Sub => "−",
        Mul => "·",
        UDiv => "/ᵤ",
        SDiv => "/",
        URem => "%ᵤ",
        SRem => "%",
        Shl => "<<",
        LShr => ">>ᵤ",
        AShr => ">>",
        And => "&",
        Or => "|",
        Xor => "^",
    }
}

fn pred(p: IntPredicate) -> &'static str {
    use IntPredicate::*;
    match p {
        Eq => "=",
        Ne => "≠",
        Ugt => ">ᵤ",
        Uge => "≥ᵤ",
        Ult => "<ᵤ",
        Ule => "≤ᵤ",
        Sgt => ">",
        Sge => "≥",
        Slt => "<",
        Sle => "≤",
    }
}

impl<'a> Printer<'a> {
    pub fn new(pool: &'a ExprPool) -> Self {
        Printer { pool, max_len: 20_000 }
    }

    pub fn print(&self, e: ExprId) -> String {
        let mut out = String::new();
        self.go(e, &mut out, 0);
        if out.len() > self.max_len {
            let mut cut = self.max_len;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
        }
        out
    }

    /// Symbol names as printed (for a symbol expression).
    pub fn symbol_name(&self, e: ExprId) -> String {
        let mut s = String::new();
        self.go(e, &mut s, 0);
        s
    }

    fn list(&self, xs: &[ExprId], sep: &str, out: &mut String, depth: usize) {
        for (i, &x) in xs.iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            self.atom(x, out, depth);
        }
    }

    /// Prints `e`, parenthesised unless it is atomic.
    fn atom(&self, e: ExprId, out: &mut String, depth: usize) {
        let atomic = matches!(
            self.pool.get(e),
            Expr::Bool(_)
                | Expr::Const { .. }
                | Expr::Symbol { .. }
                | Expr::Star(_)
                | Expr::Ite(..)
                | Expr::Load { .. }
                | Expr::Select(..)
                | Expr::ZExt(..)
                | Expr::SExt(..)
                | Expr::Extract { .. }
                | Expr::Forall(..)
                | Expr::Exists(..)
        );
        if atomic {
            self.go(e, out, depth);
        } else {
            out.push('(');
            self.go(e, out, depth);
            out.push(')');
        }
    }

    fn go(&self, e: ExprId, out: &mut String, depth: usize) {
        if out.len() > self.max_len || depth > 400 {
            out.push('…');
            return;
        }
        let d = depth + 1;
        match self.pool.get(e) {
            Expr::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Expr::Const { width, value } => {
                if *width == 1 {
                    let _ = write!(out, "{value}");
                } else {
                    let _ = write!(out, "{}", to_signed(*width, *value));
                }
            }
            Expr::Symbol { name, kind, .. } => match kind {
                SymbolKind::Input => out.push_str(&underline(name)),
                _ => out.push_str(name),
            },
            Expr::Star(_) => out.push('⋆'),
            Expr::Not(a) => {
                out.push('¬');
                self.atom(*a, out, d);
            }
            Expr::And(xs) => self.list(xs, " ∧ ", out, d),
            Expr::Or(xs) => self.list(xs, " ∨ ", out, d),
            Expr::Ite(c, a, b) => {
                out.push_str("ite(");
                self.go(*c, out, d);
                out.push_str(", ");
                self.go(*a, out, d);
                out.push_str(", ");
                self.go(*b, out, d);
                out.push(')');
            }
            Expr::Bin(op, a, b) => {
                self.atom(*a, out, d);
                let _ = write!(out, " {} ", bvop(*op));
                self.atom(*b, out, d);
            }
            Expr::Cmp(p, a, b) => {
                self.atom(*a, out, d);
                let _ = write!(out, " {} ", pred(*p));
                self.atom(*b, out, d);
            }
            Expr::ZExt(a, w) => {
                let _ = write!(out, "zext{w}(");
                self.go(*a, out, d);
                out.push(')');
            }
            Expr::SExt(a, w) => {
                let _ = write!(out, "sext{w}(");
                self.go(*a, out, d);
                out.push(')');
            }
            Expr::Extract { hi, lo, e } => {
                if *lo == 0 {
                    let _ = write!(out, "trunc{}(", hi + 1);
                } else {
                    let _ = write!(out, "bits[{hi}:{lo}](");
                }
                self.go(*e, out, d);
                out.push(')');
            }
            Expr::Load { array, offset, width } => {
                self.atom(*array, out, d);
                out.push('[');
                self.go(*offset, out, d);
                let _ = write!(out, "]:i{width}");
            }
            Expr::Store { array, offset, value, width } => {
                self.atom(*array, out, d);
                out.push('{');
                self.go(*offset, out, d);
                let _ = write!(out, ":i{width} ↦ ");
                self.go(*value, out, d);
                out.push('}');
            }
            Expr::ConstArray { value, .. } => {
                out.push_str("λχ.");
                self.atom(*value, out, d);
            }
            Expr::Lambda { var, body } => {
                out.push('λ');
                self.go(*var, out, d);
                out.push_str(". ");
                self.atom(*body, out, d);
            }
            Expr::Select(a, i) => {
                self.atom(*a, out, d);
                out.push('(');
                self.go(*i, out, d);
                out.push(')');
            }
            Expr::Forall(vs, body) | Expr::Exists(vs, body) => {
                out.push(if matches!(self.pool.get(e), Expr::Forall(..)) { '∀' } else { '∃' });
                self.list(vs, ",", out, d);
                out.push_str(" (");
                self.go(*body, out, d);
                out.push(')');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Sort;

    #[test]
    fn prints_the_papers_notation() {
        let mut p = ExprPool::new();
        let i = p.symbol("i", Sort::Bv(32), SymbolKind::Input);
        let k1 = p.symbol("κ1", Sort::Bv(32), SymbolKind::Kappa(1));
        let n = p.symbol("n", Sort::Bv(32), SymbolKind::Input);
        let sum = p.bin(BvOp::Add, i, k1);
        let lt = p.cmp(IntPredicate::Slt, sum, n);
        let m1 = p.bv(32, u32::MAX as u64);
        let eq = p.cmp(IntPredicate::Eq, n, m1);
        let both = p.and([lt, eq]);
        let s = Printer::new(&p).print(both);
        assert_eq!(s, "((i\u{332} + κ1) < n\u{332}) ∧ (n\u{332} = -1)");
        let star = p.star(Sort::Bv(8));
        assert_eq!(Printer::new(&p).print(star), "⋆");
    }

    #[test]
    fn long_output_is_cut() {
        let mut p = ExprPool::new();
        let mut e = p.symbol("x", Sort::Bv(64), SymbolKind::Input);
        for k in 0..5000 {
            let c = p.bv(64, k * 7 + 1);
            e = p.bin(BvOp::Mul, e, c);
        }
        let mut pr = Printer::new(&p);
        pr.max_len = 100;
        let s = pr.print(e);
        assert!(s.ends_with('…') && s.len() < 120, "{s}");
    }
}
