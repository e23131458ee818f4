//! SMT-LIB 2 text of a formula, printed from the expression DAG itself.
//!
//! Why not Z3's `to_smt2`: it needs a Z3 context in the calling thread, and the first one of a
//! thread costs 15–30 ms (about 16 MB of tables to allocate and clear), which is a third of
//! the time of a small analysis. The text means exactly what [`super::Translator`] builds
//! (a unit test parses it back with Z3 and checks both are equivalent).
//!
//! Shape: `declare-fun` for every symbol, `define-fun` for each subterm that is shared or
//! long and mentions no bound variable (so a DAG prints in linear size), then one `assert`.
//! Terms under a binder that mention its variables print inline.

use crate::expr::{children_of, BvOp, Expr, ExprId, ExprPool, Sort};
use crate::ir::IntPredicate;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// A closed subterm whose text is longer than this gets a name even when used once: keeps
/// deep chains (and the memory for their texts) linear.
const INLINE_MAX: usize = 160;

fn sort_text(s: Sort) -> String {
    match s {
        Sort::Bool => "Bool".into(),
        Sort::Bv(w) => format!("(_ BitVec {w})"),
        Sort::Array { index, elem } => format!("(Array (_ BitVec {index}) (_ BitVec {elem}))"),
    }
}

/// A quoted SMT-LIB symbol (`|` and `\` cannot occur inside one: replaced).
fn quote(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c == '|' || c == '\\' { '_' } else { c })
        .collect();
    format!("|{clean}|")
}

/// The SMT-LIB function of a comparison.
pub fn cmp_symbol(p: IntPredicate) -> &'static str {
    use IntPredicate::*;
    match p {
        Eq => "=",
        Ne => "distinct",
        Ugt => "bvugt",
        Uge => "bvuge",
        Ult => "bvult",
        Ule => "bvule",
        Sgt => "bvsgt",
        Sge => "bvsge",
        Slt => "bvslt",
        Sle => "bvsle",
    }
}

fn bv_const(width: u32, value: u64) -> String {
    format!("(_ bv{value} {width})")
}

/// The SMT-LIB 2 query `(assert formula)(check-sat)` with its declarations.
pub fn print(pool: &ExprPool, formula: ExprId) -> String {
    // Post-order of the DAG (iterative: deep formulas must not overflow the stack), use counts,
    // and the symbols bound by some quantifier or λ.
    let mut order = vec![];
    let mut uses: HashMap<ExprId, u32> = HashMap::new();
    let mut bound: HashSet<ExprId> = HashSet::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(formula, false)];
    while let Some((e, ready)) = stack.pop() {
        if ready {
            order.push(e);
            continue;
        }
        if !seen.insert(e) {
            continue;
        }
        stack.push((e, true));
        let node = pool.get(e);
        match node {
            Expr::Forall(vs, _) | Expr::Exists(vs, _) => bound.extend(vs.iter().copied()),
            Expr::Lambda { var, .. } => {
                bound.insert(*var);
            }
            _ => {}
        }
        for c in children_of(node) {
            *uses.entry(c).or_insert(0) += 1;
            stack.push((c, false));
        }
    }
    // Whether a node mentions a bound symbol (then it prints inline, under its binder).
    let mut open: HashMap<ExprId, bool> = HashMap::new();
    for &e in &order {
        let o = bound.contains(&e) || children_of(pool.get(e)).iter().any(|c| open[c]);
        open.insert(e, o);
    }

    let mut out = String::new();
    // Every symbol is declared, bound ones too: a binder shadows the constant of its name, and a
    // symbol can be bound in one place and free in another (a counter κ under an ∃ and outside).
    let mut declared = HashSet::new();
    for &e in order.iter().chain(bound.iter()) {
        if let Expr::Symbol { name, sort, .. } = pool.get(e) {
            if declared.insert(e) {
                let _ = writeln!(out, "(declare-fun {} () {})", quote(name), sort_text(*sort));
            }
        }
    }
    let mut text: HashMap<ExprId, String> = HashMap::new();
    let mut stars = 0u32;
    let mut defined = 0u32;
    for &e in &order {
        let node = pool.get(e);
        let t = |x: &ExprId| text[x].as_str();
        let s = match node {
            Expr::Bool(b) => b.to_string(),
            Expr::Const { width, value } => bv_const(*width, *value),
            Expr::Symbol { name, .. } => quote(name),
            Expr::Star(sort) => {
                // ⋆ never reaches the solver inside a formula; should one arrive, it is an
                // unconstrained constant (as in the translation).
                stars += 1;
                let name = quote(&format!("⋆{stars}"));
                let _ = writeln!(out, "(declare-fun {name} () {})", sort_text(*sort));
                name
            }
            Expr::Not(a) => format!("(not {})", t(a)),
            Expr::And(xs) if xs.is_empty() => "true".into(),
            Expr::Or(xs) if xs.is_empty() => "false".into(),
            Expr::And(xs) => format!("(and {})", xs.iter().map(t).collect::<Vec<_>>().join(" ")),
            Expr::Or(xs) => format!("(or {})", xs.iter().map(t).collect::<Vec<_>>().join(" ")),
            Expr::Ite(c, a, b) => format!("(ite {} {} {})", t(c), t(a), t(b)),
            Expr::Bin(op, a, b) => {
                let f = match op {
                    BvOp::Add => "bvadd",
                    BvOp::Sub => "bvsub",
                    BvOp::Mul => "bvmul",
                    BvOp::UDiv => "bvudiv",
                    BvOp::SDiv => "bvsdiv",
                    BvOp::URem => "bvurem",
                    BvOp::SRem => "bvsrem",
                    BvOp::Shl => "bvshl",
                    BvOp::LShr => "bvlshr",
                    BvOp::AShr => "bvashr",
                    BvOp::And => "bvand",
                    BvOp::Or => "bvor",
                    BvOp::Xor => "bvxor",
                };
                format!("({f} {} {})", t(a), t(b))
            }
            Expr::Cmp(p, a, b) => {
                format!("({} {} {})", cmp_symbol(*p), t(a), t(b))
            }
            Expr::ZExt(a, w) => format!("((_ zero_extend {}) {})", w - pool.width(*a), t(a)),
            Expr::SExt(a, w) => format!("((_ sign_extend {}) {})", w - pool.width(*a), t(a)),
            Expr::Extract { hi, lo, e: a } => format!("((_ extract {hi} {lo}) {})", t(a)),
            Expr::Load {
                array,
                offset,
                width,
            } => {
                // Little endian: byte k holds bits 8k..8k+7, so the last byte leads the concat.
                let byte = |k: u32| {
                    if k == 0 {
                        format!("(select {} {})", t(array), t(offset))
                    } else {
                        format!(
                            "(select {} (bvadd {} {}))",
                            t(array),
                            t(offset),
                            bv_const(64, k as u64)
                        )
                    }
                };
                let mut s = byte(0);
                for k in 1..width / 8 {
                    s = format!("(concat {} {s})", byte(k));
                }
                s
            }
            Expr::Store {
                array,
                offset,
                value,
                width,
            } => {
                let mut s = t(array).to_string();
                for k in 0..width / 8 {
                    let idx = if k == 0 {
                        t(offset).to_string()
                    } else {
                        format!("(bvadd {} {})", t(offset), bv_const(64, k as u64))
                    };
                    s = format!(
                        "(store {s} {idx} ((_ extract {} {}) {}))",
                        8 * k + 7,
                        8 * k,
                        t(value)
                    );
                }
                s
            }
            Expr::ConstArray { index, value } => {
                format!(
                    "((as const (Array (_ BitVec {index}) (_ BitVec {}))) {})",
                    pool.width(*value),
                    t(value)
                )
            }
            Expr::Select(a, i) => format!("(select {} {})", t(a), t(i)),
            Expr::Lambda { var, body } => format!("(lambda ({}) {})", binding(pool, *var), t(body)),
            Expr::Forall(vs, body) | Expr::Exists(vs, body) => {
                let q = if matches!(node, Expr::Forall(..)) {
                    "forall"
                } else {
                    "exists"
                };
                let vars: Vec<String> = vs.iter().map(|&v| binding(pool, v)).collect();
                format!("({q} ({}) {})", vars.join(" "), t(body))
            }
        };
        let leaf = children_of(node).is_empty();
        let shared = uses.get(&e).copied().unwrap_or(0) >= 2;
        let s = if !leaf && !open[&e] && e != formula && (shared || s.len() > INLINE_MAX) {
            defined += 1;
            let name = format!("|$t{defined}|");
            let _ = writeln!(
                out,
                "(define-fun {name} () {} {s})",
                sort_text(pool.sort(e))
            );
            name
        } else {
            s
        };
        text.insert(e, s);
    }
    let _ = writeln!(out, "(assert {})", text[&formula]);
    out.push_str("(check-sat)\n");
    out
}

fn binding(pool: &ExprPool, var: ExprId) -> String {
    match pool.get(var) {
        Expr::Symbol { name, sort, .. } => format!("({} {})", quote(name), sort_text(*sort)),
        _ => format!("(|$bad| {})", sort_text(pool.sort(var))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::SymbolKind;

    /// The printed text, parsed back by Z3, is equivalent to the translation of the formula.
    fn assert_faithful(pool: &ExprPool, f: ExprId) {
        let text = print(pool, f);
        let solver = z3::Solver::new();
        solver.from_string(text.as_str());
        let parsed = z3::ast::Bool::and(&solver.get_assertions());
        assert_eq!(solver.get_assertions().len(), 1, "{text}");
        let direct = super::super::to_z3(pool, f);
        let check = z3::Solver::new();
        check.assert(parsed.iff(&direct).not());
        assert_eq!(
            check.check(),
            z3::SatResult::Unsat,
            "not equivalent:\n{text}"
        );
    }

    #[test]
    fn printed_formulas_mean_what_the_translation_means() {
        let mut p = ExprPool::new();
        let x = p.symbol("x.0", Sort::Bv(32), SymbolKind::Input);
        let n = p.symbol("n̲", Sort::Bv(32), SymbolKind::Input);
        let tau = p.symbol("τ1", Sort::Bv(64), SymbolKind::Tau(1));
        let kappa = p.symbol("κ1", Sort::Bv(64), SymbolKind::Kappa(1));
        let mem = p.symbol("A̲", Sort::MEMORY, SymbolKind::Input);
        let four = p.bv(32, 4);
        // ∀τ (τ ≥ κ ∨ x + trunc(τ)·4 < n): a quantifier over a shared closed term.
        let t32 = p.trunc(tau, 32);
        let step = p.bin(BvOp::Mul, t32, four);
        let xs = p.bin(BvOp::Add, x, step);
        let lt = p.cmp(IntPredicate::Slt, xs, n);
        let done = p.cmp(IntPredicate::Uge, tau, kappa);
        let body = p.or([done, lt]);
        let all = p.forall(vec![tau], body);
        // A load after a store of a shared value, a sign extension and an extract.
        let off = p.zext(x, 64);
        let v = p.bin(BvOp::Xor, x, n);
        let stored = p.store(mem, off, v, 32);
        let one = p.bv(64, 1);
        let off1 = p.bin(BvOp::Add, off, one);
        let back = p.load(stored, off1, 16);
        let wide = p.sext(back, 64);
        let low = p.extract(7, 0, wide);
        let c = p.bv(8, 200);
        let cmp = p.cmp(IntPredicate::Ne, low, c);
        let shared = p.cmp(IntPredicate::Ule, v, n);
        let not_shared = p.not(shared);
        let ite = p.ite(shared, x, n);
        let z = p.bv(32, 0);
        let ite_nz = p.cmp(IntPredicate::Ne, ite, z);
        let either = p.or([shared, not_shared]);
        let f = p.and([all, cmp, either, ite_nz, shared]);
        assert_faithful(&p, f);
        assert!(print(&p, f).contains("(forall ((|τ1| (_ BitVec 64)))"));
    }

    #[test]
    fn lambda_arrays_and_constant_arrays_print() {
        let mut p = ExprPool::new();
        let j = p.symbol("j", Sort::Bv(64), SymbolKind::Aux);
        let x = p.symbol("x", Sort::Bv(8), SymbolKind::Input);
        let jl = p.trunc(j, 8);
        let body = p.bin(BvOp::Add, jl, x);
        let arr = p.lambda(j, body);
        let zero = p.bv(8, 0);
        let blank = p.const_array(64, zero);
        let at = p.bv(64, 3);
        let a = p.load(arr, at, 8);
        let b = p.load(blank, at, 8);
        let c = p.cmp(IntPredicate::Ugt, a, b);
        assert_faithful(&p, c);
    }
}
