//! Inductive strengthening of loop summaries: facts every iteration keeps,
//! for the loop variables the rules leave ⋆.
//!
//! The rules give θ^κ only where a variable moves in a way they can iterate (constant steps,
//! polynomials, fills). A variable that takes a value read from memory or the input stream
//! (`x += t; y += t` with `t` a fresh input, `if (v > m) m = v`) is ⋆ after the loop, although a
//! relation with the other variables holds in every iteration. Such relations are guessed from
//! templates and kept only when Z3 proves them inductive, bit-precisely, along every iteration
//! backbone (Houdini: drop the candidates a counterexample to induction refutes, until the rest
//! is preserved as a whole). Two kinds:
//!
//! - **Relational** ones speak of the current values and the values at the loop's entry
//!   (`x − y = x̲ − y̲`, `x ≥ x̲`, `x ≡ x̲ mod 4`). They hold at the entry by construction, so
//!   after the loop they are facts: `I(θ_after, v̲)`.
//! - **Conditional** ones speak of the current values alone (`x ≤ n`, `x ≥ 0`). Each is proved
//!   preserved on its own (with the relational ones as assumptions); whether it holds at the entry
//!   depends on the path, so the fact is `I(v̲) → I(θ_after)`.
//!
//! Both are necessary conditions of every run that reaches the loop's exit: the APC stays an
//! over-approximation, only stronger. A candidate that holds over the integers but not with
//! wrap-around (`s ≥ s̲` under `s += v` with `v > 0`) fails its check and is never used.
//! A variable the rules leave ⋆ and an invariant mentions is, after the loop, a fresh
//! existential symbol (like a counter) that the invariants constrain.

use super::{LoopVar, Var};
use crate::expr::{BvOp, Expr, ExprId, ExprPool, Printer, Sort, Substitution, SymbolKind};
use crate::ir::IntPredicate;
use crate::solve::Outcome;
use std::time::Duration;
use tracing::debug;

/// Most moving variables (carried, ⋆ or not) whose relations are guessed: the number of
/// candidates grows with their square.
const MAX_MOVERS: usize = 8;
/// Most loop-invariant values (parameters such as `n`) and constants compared with.
const MAX_BOUNDS: usize = 6;
/// One Houdini query's time limit.
const QUERY_MS: u64 = 250;
/// The same for the polynomial candidates: nonlinear bit-vector arithmetic is slower to decide.
const POLY_MS: u64 = 1000;
/// Most moving and loop-invariant variables a polynomial is fitted over: the monomials of
/// degree 3 grow with the cube of their number.
const MAX_POLY_MOVERS: usize = 5;
const MAX_POLY_FIXED: usize = 2;
/// The time limit of a query about one candidate, when the query about all was too hard.
const SINGLE_MS: u64 = 100;
/// The same for an array fact: Z3 4.8 takes 0.3 s for the preservation of `∀j < i: a[j] ≤ m`.
const ARRAY_SINGLE_MS: u64 = 1000;

/// A proved invariant of a loop.
#[derive(Clone, Debug)]
pub struct LoopInvariant {
    /// Over the loop variables' symbols (their current values) and, for a relational invariant,
    /// the entry copies in [`Invariants::entry`].
    pub formula: ExprId,
    /// Holds after the loop only if it held at the entry.
    pub conditional: bool,
}

/// The invariants of one loop.
#[derive(Clone, Debug, Default)]
pub struct Invariants {
    pub facts: Vec<LoopInvariant>,
    /// (entry copy x⁰, the variable's symbol x): x⁰ stands for the value at the loop's entry.
    pub entry: Vec<(ExprId, ExprId)>,
    /// The facts in the paper's notation: `x` is the current value, `x̲` the one at the loop's
    /// entry.
    pub shown: Vec<String>,
}

impl Invariants {
    /// The invariants for the report.
    pub fn describe(&self) -> Vec<String> {
        self.shown.clone()
    }

    /// The facts `keep` accepts, as they hold at a state of the loop: `current` maps each
    /// variable's symbol to its value there; the entry copies stand for the entry symbols, and a
    /// conditional fact becomes `I(entry) → I(state)`.
    pub fn at_state(&self, pool: &mut ExprPool, current: &Substitution, keep: impl Fn(&ExprPool, &LoopInvariant) -> bool) -> Vec<ExprId> {
        let mut to_state = current.clone();
        for &(e, x) in &self.entry {
            to_state.insert(e, x);
        }
        let mut out = vec![];
        for f in &self.facts {
            if !keep(pool, f) {
                continue;
            }
            let now = to_state.apply(pool, f.formula);
            out.push(if f.conditional { pool.implies(f.formula, now) } else { now });
        }
        out
    }

    /// Fills `shown`: the variables' symbols (underlined, as they stand for entry values in θ^κ)
    /// become plain names, the entry copies underlined ones.
    fn show(&mut self, pool: &mut ExprPool, vars: &[LoopVar]) {
        let mut display = Substitution::new();
        for v in vars {
            let plain = pool.symbol(&v.name, pool.sort(v.symbol), SymbolKind::Aux);
            display.insert(v.symbol, plain);
        }
        for &(e, x) in &self.entry {
            display.insert(e, x);
        }
        self.shown = self
            .facts
            .iter()
            .map(|f| {
                let d = display.apply(pool, f.formula);
                let text = Printer::new(pool).print(d);
                if f.conditional {
                    format!("{text} (if it holds at the entry)")
                } else {
                    text
                }
            })
            .collect();
    }
}

/// One iteration backbone, as the inference sees it: its tests and each variable's value after
/// it (`None`: ⋆, or not an integer).
pub struct Step<'a> {
    pub tests: &'a [ExprId],
    pub values: Vec<Option<ExprId>>,
}

/// Infers the invariants of a loop whose variables are `vars`, iterated by `steps` (every feasible
/// iteration backbone: the enumeration must be complete). `wanted[k]`: variable k is ⋆ after the
/// loop, so invariants mentioning it are worth having; no other invariant is returned.
///
/// `entry[k]`: variable k's value at the entry where the loop is first summarised (over the
/// enclosing function's symbols), from which polynomial candidates are sampled; they are
/// conditional facts, so a summary reused at another entry stays sound.
pub fn infer(pool: &mut ExprPool, budget: &mut super::CheckBudget, vars: &[LoopVar], steps: &[Step], wanted: &[bool], entry: &[Option<ExprId>]) -> Invariants {
    let mut out = Invariants::default();
    if steps.is_empty() {
        return out;
    }
    // Quantified tests (inner loops' looping conditions) leave the premises: the checks are then
    // stronger than needed, and quick (Z3 spent its whole limit on them and answered unknown).
    let plain: Vec<Vec<ExprId>> = steps.iter().map(|s| s.tests.iter().copied().filter(|&t| !crate::expr::quantified(pool, t)).collect()).collect();
    let steps: Vec<Step> = steps.iter().zip(&plain).map(|(s, tests)| Step { tests, values: s.values.clone() }).collect();
    let steps = &steps[..];
    // Integer variables whose every iteration gives them a value.
    let int_width = |pool: &ExprPool, k: usize| match (&vars[k].var, pool.sort(vars[k].symbol)) {
        (Var::Value(_), Sort::Bv(w)) if w >= 2 => Some(w),
        _ => None,
    };
    let defined = |k: usize| steps.iter().all(|s| s.values[k].is_some());
    let movers: Vec<usize> = (0..vars.len())
        .filter(|&k| vars[k].carried && int_width(pool, k).is_some() && defined(k))
        .filter(|&k| steps.iter().any(|s| s.values[k] != Some(vars[k].symbol)))
        .take(MAX_MOVERS)
        .collect();
    let fixed: Vec<usize> = (0..vars.len())
        .filter(|&k| int_width(pool, k).is_some() && defined(k) && !movers.contains(&k))
        .filter(|&k| steps.iter().all(|s| s.values[k] == Some(vars[k].symbol)))
        .take(MAX_BOUNDS)
        .collect();
    let width = |pool: &ExprPool, k: usize| int_width(pool, k).expect("integer variable");
    let steps_of: Vec<Substitution> = steps
        .iter()
        .map(|s| {
            let mut step = Substitution::new();
            for &k in movers.iter().chain(&fixed) {
                step.insert(vars[k].symbol, s.values[k].expect("defined"));
            }
            step
        })
        .collect();
    if !movers.iter().any(|&k| wanted[k]) {
        // Nothing is ⋆, but a polynomial relation among the closed forms (cubic in the counter,
        // with shifts) is still far easier for the solver than the closed forms themselves.
        let widths: Vec<u32> = movers.iter().chain(&fixed).map(|&k| width(pool, k)).collect();
        out.facts.extend(polynomial(pool, budget, vars, steps, &steps_of, &movers, &fixed, &widths, entry, &[], wanted));
        out.show(pool, vars);
        return out;
    }

    // Entry copies x⁰ of the movers.
    let mut entry_of = std::collections::HashMap::new();
    for &k in &movers {
        let w = width(pool, k);
        let e = pool.symbol(&format!("{}⁰", vars[k].name), Sort::Bv(w), SymbolKind::Aux);
        entry_of.insert(k, e);
        out.entry.push((e, vars[k].symbol));
    }

    // Relational candidates: hold at the entry by construction.
    let mut relational = vec![];
    for (a, &x) in movers.iter().enumerate() {
        let (xs, x0) = (vars[x].symbol, entry_of[&x]);
        let w = width(pool, x);
        for p in [IntPredicate::Sge, IntPredicate::Sle, IntPredicate::Uge, IntPredicate::Ule] {
            relational.push(pool.cmp(p, xs, x0));
        }
        let d = pool.bin(BvOp::Sub, xs, x0);
        for m in [1u64, 3, 7] {
            let mm = pool.bv(w, m);
            let low = pool.bin(BvOp::And, d, mm);
            let zero = pool.bv(w, 0);
            relational.push(pool.eq(low, zero));
        }
        for &y in &movers[a + 1..] {
            if width(pool, y) != w {
                continue;
            }
            let (ys, y0) = (vars[y].symbol, entry_of[&y]);
            // x − c·y and y − c·x keep their entry value, for c = 1, −1 (x + y), 2 and the
            // factors the steps multiply by (`x += 3·t; y += t`).
            let mut factors: Vec<u64> = vec![1, crate::expr::mask(w, u64::MAX), 2];
            for s in steps {
                for k in [x, y] {
                    multipliers(pool, s.values[k].expect("defined"), w, &mut factors);
                }
            }
            for &c in &factors {
                let cc = pool.bv(w, c);
                let minus_one = crate::expr::mask(w, u64::MAX);
                for (u, v, u0, v0) in [(xs, ys, x0, y0), (ys, xs, y0, x0)] {
                    let comb = |pool: &mut ExprPool, u: ExprId, v: ExprId| match c {
                        1 => pool.bin(BvOp::Sub, u, v),
                        _ if c == minus_one => pool.bin(BvOp::Add, u, v),
                        _ => {
                            let cv = pool.bin(BvOp::Mul, cc, v);
                            pool.bin(BvOp::Sub, u, cv)
                        }
                    };
                    let now = comb(pool, u, v);
                    let then = comb(pool, u0, v0);
                    relational.push(pool.eq(now, then));
                }
            }
        }
    }
    let relational = dedup(pool, relational);
    let proved = houdini(pool, budget, relational, &[], steps, &steps_of, QUERY_MS, super::budget::Solver::Light);

    // Facts about every element read so far; relational (an empty range at the entry). Before
    // the conditional ones, which are many and cheap: these are few and worth more.
    let arrays = array_candidates(pool, vars, steps, &movers, &entry_of, wanted);
    let read = each_preserved(pool, budget, arrays, &proved, steps, &steps_of);

    // Conditional candidates: orders between movers and the loop's fixed values, and bounds by the
    // constants its tests compare with.
    let mut conditional = vec![];
    let mut constants: Vec<(u32, u64)> = vec![];
    for s in steps {
        for &t in s.tests {
            collect_constants(pool, t, &mut constants);
        }
    }
    // Each is checked on its own, so only those about a wanted variable are worth checking.
    for &x in movers.iter().filter(|&&x| wanted[x]) {
        let (xs, w) = (vars[x].symbol, width(pool, x));
        for &y in movers.iter().chain(&fixed) {
            if y == x || width(pool, y) != w || (wanted[y] && y < x) {
                continue;
            }
            let ys = vars[y].symbol;
            for p in [IntPredicate::Sle, IntPredicate::Ule, IntPredicate::Sge, IntPredicate::Uge] {
                conditional.push(pool.cmp(p, xs, ys));
            }
        }
        let mut bounds: Vec<u64> = vec![0];
        for &(cw, v) in &constants {
            if cw == w {
                if !bounds.contains(&v) && bounds.len() < MAX_BOUNDS {
                    bounds.push(v);
                }
            }
        }
        for b in bounds {
            let c = pool.bv(w, b);
            for p in [IntPredicate::Sle, IntPredicate::Ule, IntPredicate::Sge, IntPredicate::Uge] {
                conditional.push(pool.cmp(p, xs, c));
            }
        }
    }
    // Trivial ones (x ≤u 2^w − 1) fold to true.
    let conditional: Vec<ExprId> = dedup(pool, conditional).into_iter().filter(|&c| !trivial(pool, c)).collect();
    // At most half of what is left: the bounds are many, and may all fail.
    let kept = budget.share(0.5, |b| each_preserved(pool, b, conditional, &proved, steps, &steps_of));

    let widths: Vec<u32> = movers.iter().chain(&fixed).map(|&k| width(pool, k)).collect();
    let poly = polynomial(pool, budget, vars, steps, &steps_of, &movers, &fixed, &widths, entry, &proved, wanted);

    let wanted_symbols: Vec<ExprId> = (0..vars.len()).filter(|&k| wanted[k]).map(|k| vars[k].symbol).collect();
    let mut proved = proved;
    proved.extend(read);
    for (formulas, conditional) in [(proved, false), (kept, true)] {
        for f in formulas {
            if crate::expr::mentions(pool, f, &wanted_symbols) {
                debug!(invariant = %Printer::new(pool).print(f), conditional, "loop invariant proved");
                out.facts.push(LoopInvariant { formula: f, conditional });
            }
        }
    }
    out.facts.extend(poly);
    out.entry.retain(|&(e, _)| out.facts.iter().any(|f| crate::expr::mentions(pool, f.formula, &[e])));
    out.show(pool, vars);
    out
}

/// Polynomial equalities among the movers and fixed values of the most common width
/// ([`super::poly`]), kept as one conditional fact: the largest subset that is inductive as a
/// whole (with `assumed`), since such relations lean on each other (`x = n³` is kept because
/// `y = 3n² + 3n + 1` is). Only when it says something the rules do not: a nonlinear relation
/// or one about a wanted variable.
#[allow(clippy::too_many_arguments)]
fn polynomial(
    pool: &mut ExprPool,
    budget: &mut super::CheckBudget,
    vars: &[LoopVar],
    steps: &[Step],
    steps_of: &[Substitution],
    movers: &[usize],
    fixed: &[usize],
    widths: &[u32],
    entry: &[Option<ExprId>],
    assumed: &[ExprId],
    wanted: &[bool],
) -> Option<LoopInvariant> {
    let width_of = |k: usize| widths[movers.iter().chain(fixed).position(|&j| j == k).expect("listed")];
    let w = *widths[..movers.len()].iter().max_by_key(|&&w| movers.iter().filter(|&&k| width_of(k) == w).count())?;
    // Flags and bits have no polynomial relations worth the sampling.
    if w < 8 {
        return None;
    }
    // Wanted variables first: those are what the rules leave ⋆.
    let ordered = movers.iter().filter(|&&k| wanted[k]).chain(movers.iter().filter(|&&k| !wanted[k]));
    let mut chosen: Vec<usize> = ordered.copied().filter(|&k| width_of(k) == w).take(MAX_POLY_MOVERS).collect();
    let fixed_w: Vec<usize> = fixed.iter().copied().filter(|&k| width_of(k) == w).take(MAX_POLY_FIXED).collect();
    if chosen.is_empty() || chosen.len() + fixed_w.len() < 2 {
        return None;
    }
    // Independent first: the loop-invariant values, then counters (moved by a constant on
    // every iteration), then the others, wanted ones last.
    let counter = |pool: &mut ExprPool, k: usize| {
        steps.iter().all(|s| {
            let v = s.values[k].expect("defined");
            v == vars[k].symbol || super::rules::increment(pool, vars[k].symbol, v).is_some_and(|d| pool.as_const(d).is_some())
        })
    };
    let counters: Vec<usize> = chosen.iter().copied().filter(|&k| counter(pool, k)).collect();
    // The counter of the smallest step first (`n += 1` before `z += 6`): the others are then
    // expressed in it with integer coefficients.
    let step_size = |pool: &mut ExprPool, k: usize| {
        let s = steps.iter().find_map(|s| s.values[k].filter(|&v| v != vars[k].symbol))?;
        let d = super::rules::increment(pool, vars[k].symbol, s)?;
        Some(crate::expr::to_signed(w, pool.as_const(d)?).unsigned_abs())
    };
    let sizes: Vec<u64> = counters.iter().map(|&k| step_size(pool, k).unwrap_or(u64::MAX)).collect();
    let mut order: Vec<usize> = (0..counters.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let counters: Vec<usize> = order.into_iter().map(|i| counters[i]).collect();
    chosen.retain(|k| !counters.contains(k));
    chosen.sort_by_key(|&k| wanted[k]);
    let independent = fixed_w.len() + counters.len();
    let chosen: Vec<usize> = fixed_w.into_iter().chain(counters).chain(chosen).collect();
    let candidates = super::poly::candidates(pool, vars, steps, entry, &chosen, independent, w);
    if candidates.is_empty() {
        return None;
    }
    for c in &candidates {
        tracing::trace!(candidate = %Printer::new(pool).print(c.formula), "polynomial candidate");
    }
    let degree: std::collections::HashMap<ExprId, u32> = candidates.iter().map(|c| (c.formula, c.degree)).collect();
    let formulas: Vec<ExprId> = candidates.iter().map(|c| c.formula).collect();
    let wanted_symbols: Vec<ExprId> = (0..vars.len()).filter(|&k| wanted[k]).map(|k| vars[k].symbol).collect();
    let useful = |pool: &ExprPool, fs: &[ExprId]| fs.iter().any(|f| degree[f] >= 2 || crate::expr::mentions(pool, *f, &wanted_symbols));
    // Linear relations among values the rules give anyway are worth no solver time on their own.
    if !useful(pool, &formulas) {
        return None;
    }
    let kept = budget.share(0.5, |b| houdini(pool, b, formulas, assumed, steps, steps_of, POLY_MS, super::budget::Solver::Polynomial));
    if !useful(pool, &kept) {
        return None;
    }
    let formula = pool.and(kept.iter().copied());
    debug!(invariant = %Printer::new(pool).print(formula), "polynomial loop invariant proved");
    Some(LoopInvariant { formula, conditional: true })
}

/// Whether comparison `c` holds of every value (`x ≥ᵤ 0`, `x ≤ 127` in 8 bits, ...): no use as
/// a candidate.
fn trivial(pool: &ExprPool, c: ExprId) -> bool {
    let Expr::Cmp(p, _, b) = pool.get(c) else { return pool.as_bool(c).is_some() };
    let (Some(v), Sort::Bv(w)) = (pool.as_const(*b), pool.sort(*b)) else { return false };
    let max = crate::expr::mask(w, u64::MAX);
    let smin = 1u64 << (w - 1);
    match p {
        IntPredicate::Uge => v == 0,
        IntPredicate::Ule => v == max,
        IntPredicate::Sge => v == smin,
        IntPredicate::Sle => v == smin - 1,
        _ => false,
    }
}

/// Constants of width `w` that multiply something in `e` (at most a few, into `out`).
fn multipliers(pool: &ExprPool, e: ExprId, w: u32, out: &mut Vec<u64>) {
    crate::expr::visit(pool, e, |_, node| {
        if let Expr::Bin(BvOp::Mul, a, b) = node {
            for side in [*a, *b] {
                if let (Some(c), Sort::Bv(cw)) = (pool.as_const(side), pool.sort(side)) {
                    if cw == w && c > 2 && !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
        }
        out.len() < 6
    });
}

/// Quantified facts about the elements a loop has read so far,
///
/// ```text
/// ∀j ((j − i⁰) <ᵤ (i − i⁰) → a[j] ⋈ x)
/// ```
///
/// for an index i that every iteration moves up by one, an array the loop never writes, and a
/// comparison `a[i] ⋈ x` (or of a value of `a[i]`, such as its zero extension) among its tests with x a variable the rules leave ⋆ (`if (a[i] > m)
/// m = a[i]` keeps every element read at most m). The range is empty at the entry, and its
/// unsigned form stays right when i wraps around.
fn array_candidates(
    pool: &mut ExprPool,
    vars: &[LoopVar],
    steps: &[Step],
    movers: &[usize],
    entry_of: &std::collections::HashMap<usize, ExprId>,
    wanted: &[bool],
) -> Vec<ExprId> {
    let unchanged = |k: usize| steps.iter().all(|s| s.values[k] == Some(vars[k].symbol));
    let read_only: Vec<ExprId> = (0..vars.len()).filter(|&k| matches!(vars[k].var, Var::Mem(_)) && unchanged(k)).map(|k| vars[k].symbol).collect();
    if read_only.is_empty() {
        return vec![];
    }
    let wanted_symbols: Vec<ExprId> = movers.iter().filter(|&&k| wanted[k]).map(|&k| vars[k].symbol).collect();
    let mut out = vec![];
    for &i in movers {
        let (is, w) = (vars[i].symbol, pool.value_bits(vars[i].symbol));
        let one = pool.bv(w, 1);
        let next = pool.bin(BvOp::Add, is, one);
        if !steps.iter().all(|s| s.values[i] == Some(next)) {
            continue;
        }
        let i0 = entry_of[&i];
        let j = pool.symbol(&format!("ι{}", vars[i].name), Sort::Bv(w), SymbolKind::Aux);
        let mut at_j = Substitution::new();
        at_j.insert(is, j);
        let dj = pool.bin(BvOp::Sub, j, i0);
        let di = pool.bin(BvOp::Sub, is, i0);
        let in_range = pool.cmp(IntPredicate::Ult, dj, di);
        for s in steps {
            for &t in s.tests {
                let Expr::Cmp(_, a, b) = pool.get(t).clone() else { continue };
                for (l, x) in [(a, b), (b, a)] {
                    // The element itself or a value of it (`zext(a[i])` of a byte compared in int).
                    let mut read = false;
                    crate::expr::visit(pool, l, |_, node| {
                        read |= matches!(node, Expr::Load { array, offset, .. }
                            if read_only.contains(array) && crate::expr::mentions(pool, *offset, &[is]));
                        !read
                    });
                    if !read || crate::expr::mentions(pool, x, &[is]) || !crate::expr::mentions(pool, x, &wanted_symbols) {
                        continue;
                    }
                    let lj = at_j.apply(pool, l);
                    for p in [IntPredicate::Sle, IntPredicate::Sge, IntPredicate::Ule, IntPredicate::Uge] {
                        let holds = pool.cmp(p, lj, x);
                        let body = pool.implies(in_range, holds);
                        let c = pool.forall(vec![j], body);
                        if !out.contains(&c) && out.len() < 4 * MAX_BOUNDS {
                            out.push(c);
                        }
                    }
                }
            }
        }
    }
    out
}

/// The candidates without duplicates and constants.
fn dedup(pool: &ExprPool, mut xs: Vec<ExprId>) -> Vec<ExprId> {
    let mut seen = std::collections::HashSet::new();
    xs.retain(|&x| pool.as_bool(x) != Some(true) && seen.insert(x));
    xs
}

/// Bit-vector constants compared with in `e` (width, value).
fn collect_constants(pool: &ExprPool, e: ExprId, out: &mut Vec<(u32, u64)>) {
    crate::expr::visit(pool, e, |_, node| {
        if let Expr::Cmp(_, a, b) = node {
            for side in [*a, *b] {
                if let Expr::Const { width, value } = pool.get(side) {
                    if !out.contains(&(*width, *value)) {
                        out.push((*width, *value));
                    }
                }
            }
        }
        out.len() < 4 * MAX_BOUNDS
    });
}

/// The largest subset of `candidates` that, with `assumed` (already inductive), is preserved by
/// every step: Houdini, one query per step and counterexample.
fn houdini(pool: &mut ExprPool, budget: &mut super::CheckBudget, mut candidates: Vec<ExprId>, assumed: &[ExprId], steps: &[Step], steps_of: &[Substitution], limit_ms: u64, solver: super::budget::Solver) -> Vec<ExprId> {
    loop {
        let mut changed = false;
        for (s, step) in steps.iter().zip(steps_of) {
            if candidates.is_empty() {
                return candidates;
            }
            let pre = pool.and(assumed.iter().chain(&candidates).chain(s.tests).copied());
            let posts: Vec<ExprId> = candidates.iter().map(|&c| step.apply(pool, c)).collect();
            let all = pool.and(posts.iter().copied());
            let broken = pool.not(all);
            let query = pool.and([pre, broken]);
            let t = std::time::Instant::now();
            // A concrete counterexample first (most candidates break at once): no solver.
            let trial = by_trial(pool, query, &posts);
            let polynomial = solver == super::budget::Solver::Polynomial;
            let answer = match trial {
                Some(holds) => Some(Outcome::Sat(holds)),
                None if polynomial && preserved_linearly(pool, budget, &candidates, &posts, assumed, s.tests) => Some(Outcome::Unsat),
                None => budget.check_as(pool, query, limit_ms, solver, |m| posts.iter().map(|&p| m.eval(p) == Some(1)).collect::<Vec<bool>>()),
            };
            tracing::trace!(candidates = candidates.len(), ms = t.elapsed().as_millis() as u64, sat = matches!(answer, Some(Outcome::Sat(_))), "houdini query");
            match answer {
                Some(Outcome::Unsat) => {}
                Some(Outcome::Sat(holds)) => {
                    let before = candidates.len();
                    let mut it = holds.iter();
                    candidates.retain(|_| *it.next().unwrap_or(&false));
                    if candidates.len() == before {
                        // The model could not be read: nothing is shown.
                        return vec![];
                    }
                    changed = true;
                }
                // Too hard together: the candidates preserved each on its own (a conjunction of
                // such is preserved too).
                Some(Outcome::Unknown(_)) => return each_preserved(pool, budget, candidates, assumed, steps, steps_of),
                None => return vec![],
            }
        }
        if !changed {
            return candidates;
        }
    }
}

/// Whether the polynomial `candidates` are preserved (`posts`: after the step), shown in their
/// sum-of-monomials forms ([`super::poly::normalised`]) with the monomials uninterpreted: then
/// the check is linear. Z3 confirms each form equivalent to its formula first, so the
/// conclusion is Z3's on the bit-vectors throughout.
fn preserved_linearly(pool: &mut ExprPool, budget: &mut super::CheckBudget, candidates: &[ExprId], posts: &[ExprId], assumed: &[ExprId], tests: &[ExprId]) -> bool {
    let mut forms = vec![];
    for &f in candidates.iter().chain(posts) {
        let Some(g) = super::poly::normalised(pool, f) else { return false };
        if f != g {
            let same = pool.eq(f, g);
            let differ = pool.not(same);
            if !matches!(budget.check_as(pool, differ, SINGLE_MS, super::budget::Solver::Polynomial, |_| ()), Some(Outcome::Unsat)) {
                return false;
            }
        }
        forms.push(g);
    }
    let (now, next) = forms.split_at(candidates.len());
    let pre = pool.and(assumed.iter().chain(tests).chain(now).copied());
    let all = pool.and(next.iter().copied());
    let broken = pool.not(all);
    let query = pool.and([pre, broken]);
    budget.unsat_abstracted(pool, query, QUERY_MS)
}

/// The values of `parts` under a concrete assignment that satisfies `query`, when trying a few
/// finds one (see [`crate::expr::eval`]) and every part can be evaluated in it.
fn by_trial(pool: &ExprPool, query: ExprId, parts: &[ExprId]) -> Option<Vec<bool>> {
    let mut model = crate::expr::eval::model_by_trial(pool, query, super::budget::TRIALS)?;
    parts.iter().map(|&p| model.holds(pool, p)).collect()
}

/// The candidates each preserved on its own by every step, given `assumed`.
fn each_preserved(pool: &mut ExprPool, budget: &mut super::CheckBudget, mut candidates: Vec<ExprId>, assumed: &[ExprId], steps: &[Step], steps_of: &[Substitution]) -> Vec<ExprId> {
    // Array facts: Z3's default solver (see `solve::check_portfolio`).
    let arrays = candidates.iter().any(|&c| matches!(pool.get(c), Expr::Forall(..)));
    for (s, step) in steps.iter().zip(steps_of) {
        loop {
            if candidates.is_empty() {
                return candidates;
            }
            // Some candidate c with c ∧ ¬c(step). For ∀j B(j), the body with j free: B(j) ∧
            // ¬B(j)(step) unsatisfiable shows more (each j kept on its own), and is
            // quantifier-free, where Z3 gave up on the quantified form.
            let broken: Vec<ExprId> = candidates
                .iter()
                .map(|&c| {
                    let c = match pool.get(c) {
                        Expr::Forall(_, body) => *body,
                        _ => c,
                    };
                    let post = step.apply(pool, c);
                    let not_post = pool.not(post);
                    pool.and([c, not_post])
                })
                .collect();
            let any = pool.or(broken.iter().copied());
            let query = pool.and(assumed.iter().chain(s.tests).copied().chain([any]));
            let t = std::time::Instant::now();
            let limit = match (arrays, candidates.len()) {
                (true, 1) => ARRAY_SINGLE_MS,
                (true, _) => 2 * QUERY_MS,
                (false, 1) => SINGLE_MS.max(QUERY_MS),
                _ => QUERY_MS,
            };
            let answer = match by_trial(pool, query, &broken) {
                Some(bad) => Some(Outcome::Sat(bad)),
                None => budget.check(pool, query, limit, arrays, |m| broken.iter().map(|&b| m.eval(b) == Some(1)).collect::<Vec<bool>>()),
            };
            tracing::trace!(candidates = candidates.len(), ms = t.elapsed().as_millis() as u64, sat = matches!(answer, Some(Outcome::Sat(_))), "preservation query");
            match answer {
                Some(Outcome::Unsat) => break,
                Some(Outcome::Sat(bad)) => {
                    let before = candidates.len();
                    let mut it = bad.iter();
                    candidates.retain(|_| !*it.next().unwrap_or(&true));
                    if candidates.len() == before {
                        return vec![];
                    }
                }
                Some(Outcome::Unknown(_)) if candidates.len() == 1 => return vec![],
                Some(Outcome::Unknown(_)) => {
                    // The disjunction was too hard: one query per candidate, each smaller.
                    candidates = candidates
                        .into_iter()
                        .zip(broken)
                        .filter(|&(_, b)| {
                            let query = pool.and(assumed.iter().chain(s.tests).copied().chain([b]));
                            let limit = if arrays { ARRAY_SINGLE_MS } else { SINGLE_MS };
                            matches!(budget.check(pool, query, limit, arrays, |_| ()), Some(Outcome::Unsat))
                        })
                        .map(|(c, _)| c)
                        .collect();
                    break;
                }
                None => return vec![],
            }
        }
    }
    candidates
}

/// Most solver time for inference per analysis, apart from the other summary checks.
const BUDGET: Duration = Duration::from_millis(2500);

/// Budget for inference per analysis: `BUDGET`, at most an eighth of the analysis's `timeout`.
pub fn budget_within(timeout: Option<Duration>) -> super::CheckBudget {
    super::CheckBudget::with(timeout.map_or(BUDGET, |t| BUDGET.min(t / 8)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ValueId;

    fn var(pool: &mut ExprPool, name: &str, id: u32) -> LoopVar {
        let symbol = pool.symbol(name, Sort::Bv(32), SymbolKind::Input);
        LoopVar { var: Var::Value(ValueId(id)), symbol, name: name.into(), carried: true, object: None }
    }

    fn infer_all(pool: &mut ExprPool, vars: &[LoopVar], steps: &[Step]) -> Vec<String> {
        let wanted = vec![true; vars.len()];
        let mut budget = super::super::CheckBudget::with(Duration::from_secs(5));
        infer(pool, &mut budget, vars, steps, &wanted, &vec![None; vars.len()]).describe()
    }

    #[test]
    fn a_difference_kept_by_equal_steps_is_found() {
        let mut p = ExprPool::new();
        let vars = [var(&mut p, "x", 0), var(&mut p, "y", 1)];
        let t = p.symbol("t", Sort::Bv(32), SymbolKind::Aux);
        let (x, y) = (vars[0].symbol, vars[1].symbol);
        let values = vec![Some(p.bin(BvOp::Add, x, t)), Some(p.bin(BvOp::Add, y, t))];
        let shown = infer_all(&mut p, &vars, &[Step { tests: &[], values }]);
        assert!(shown.iter().any(|s| s.contains('−') && s.contains('=') && !s.contains("if it holds")), "{shown:?}");
    }

    #[test]
    fn growth_that_wraps_around_is_no_invariant() {
        // s += v for v > 0: over the integers s ≥ s̲; in 32 bits s + v can wrap below s̲.
        let mut p = ExprPool::new();
        let vars = [var(&mut p, "s", 0)];
        let v = p.symbol("v", Sort::Bv(32), SymbolKind::Aux);
        let s = vars[0].symbol;
        let zero = p.bv(32, 0);
        let positive = p.cmp(IntPredicate::Sgt, v, zero);
        let values = vec![Some(p.bin(BvOp::Add, s, v))];
        let shown = infer_all(&mut p, &vars, &[Step { tests: &[positive], values }]);
        assert!(!shown.iter().any(|s| s.contains('≥') && !s.contains("if it holds")), "{shown:?}");
        // The same step without wrap-around (v ≤ 100 and s ≤ 1000 kept): s ≥ s̲ holds.
        let hundred = p.bv(32, 100);
        let small = p.cmp(IntPredicate::Sle, v, hundred);
        let thousand = p.bv(32, 1000);
        let below = p.cmp(IntPredicate::Slt, s, thousand);
        let values = vec![Some(p.bin(BvOp::Add, s, v))];
        let shown = infer_all(&mut p, &vars, &[Step { tests: &[positive, small, below], values }]);
        assert!(shown.iter().any(|s| s.starts_with("s ≥ s̲")), "{shown:?}");
    }

    #[test]
    fn a_bound_is_conditional_on_the_entry() {
        // if (x < 10) x++: x ≤ 10 is kept once it holds, but need not hold at the entry.
        let mut p = ExprPool::new();
        let vars = [var(&mut p, "x", 0)];
        let x = vars[0].symbol;
        let ten = p.bv(32, 10);
        let one = p.bv(32, 1);
        let below = p.cmp(IntPredicate::Slt, x, ten);
        let above = p.cmp(IntPredicate::Sge, x, ten);
        let steps = [Step { tests: &[below], values: vec![Some(p.bin(BvOp::Add, x, one))] }, Step { tests: &[above], values: vec![Some(x)] }];
        let shown = infer_all(&mut p, &vars, &steps);
        assert!(shown.iter().any(|s| s == "x ≤ 10 (if it holds at the entry)"), "{shown:?}");
    }
}
