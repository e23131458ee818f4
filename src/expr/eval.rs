//! Concrete evaluation of expressions under an assignment of their symbols, and a cheap search
//! for an assignment that satisfies a formula.
//!
//! Why: most of the solver checks made while summarising loops ask "is this unsatisfiable?"
//! (an iteration's tests, a closed-form count's recurrence, an invariant candidate), and most of
//! those that are *not* unsatisfiable have satisfying assignments everywhere: `i < n`, a wrong
//! count candidate that fails for nearly every state. Each Z3 query costs milliseconds, and the
//! first one of a thread tens (its context). Trying a few concrete assignments first answers
//! those at once. The search can only ever say "satisfiable, here is the proof": a formula it
//! cannot evaluate (quantifiers, λ-arrays, ⋆) or for which no trial fits goes to the solver, so
//! using it before an unsat check costs no precision and no soundness.
//!
//! The semantics are those of the solver's translation (`solve::Translator`): SMT-LIB
//! bit-vectors (division by zero gives all ones / the dividend, shifts by at least the width give
//! 0 or the sign fill), memory as arrays of bytes, loads and stores little-endian.

use super::{children_of, Expr, ExprId, ExprPool, Sort};
use crate::ops::IntPredicate;
use std::collections::HashMap;
use std::rc::Rc;

/// A concrete value: a Boolean, a bit-vector of at most 64 bits (zero-extended), or an array.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Bv(u64),
    Array(Rc<ArrayValue>),
}

/// A concrete array: a default content plus the elements written over it.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayValue {
    base: ArrayBase,
    writes: HashMap<u64, u64>,
}

#[derive(Clone, Debug, PartialEq)]
enum ArrayBase {
    /// Every element is this value.
    Const(u64),
    /// An input array: element `i` is a pseudo-random function of (seed, i), masked to `elem` bits.
    Seeded { seed: u64, elem: u32 },
    /// Element `i` is 0 or 1, a pseudo-random function of (seed, i).
    Coins { seed: u64 },
    /// Bytes of memory holding `value` as a little-endian 4-byte word at every multiple of 4
    /// (an `int` array whose every element is `value`).
    Words(u64),
}

impl ArrayValue {
    fn get(&self, i: u64) -> u64 {
        if let Some(v) = self.writes.get(&i) {
            return *v;
        }
        match self.base {
            ArrayBase::Const(v) => v,
            ArrayBase::Words(value) => (value >> (8 * (i % 4))) & 0xff,
            ArrayBase::Seeded { seed, elem } => super::mask(elem, small_biased(mix(seed ^ mix(i)))),
            ArrayBase::Coins { seed } => mix(seed ^ mix(i)) >> 63,
        }
    }
}

/// How symbols get values in one evaluation: `None` leaves the expression unevaluated.
pub trait Assignment {
    fn value(&mut self, name: &str, sort: Sort) -> Option<Value>;
}

/// Stops evaluating: writes into one array beyond this make the evaluation give up.
const MAX_WRITES: usize = 4096;

/// The value of `root` under `assignment`, or `None` when some part cannot be evaluated
/// (quantifiers, λ-arrays, ⋆, widths above 64 bits, a symbol the assignment leaves open).
pub fn eval(pool: &ExprPool, root: ExprId, assignment: &mut dyn Assignment) -> Option<Value> {
    let mut memo: HashMap<ExprId, Value> = HashMap::new();
    // Post-order without recursion: deep expressions must not overflow the stack.
    let mut stack = vec![(root, false)];
    while let Some((e, ready)) = stack.pop() {
        if memo.contains_key(&e) {
            continue;
        }
        let node = pool.get(e);
        if !ready {
            stack.push((e, true));
            // A binder's body is evaluated per value of its variables (see `bounded`).
            if matches!(node, Expr::Forall(..) | Expr::Exists(..) | Expr::Lambda { .. }) {
                continue;
            }
            for k in children_of(node) {
                if !memo.contains_key(&k) {
                    stack.push((k, false));
                }
            }
            continue;
        }
        let v = node_value(pool, e, node, &memo, assignment)?;
        memo.insert(e, v);
    }
    memo.remove(&root)
}

fn node_value(
    pool: &ExprPool,
    e: ExprId,
    node: &Expr,
    memo: &HashMap<ExprId, Value>,
    assignment: &mut dyn Assignment,
) -> Option<Value> {
    use super::BvOp::*;
    let bv = |x: &ExprId| match memo.get(x) {
        Some(Value::Bv(v)) => Some(*v),
        _ => None,
    };
    let boolean = |x: &ExprId| match memo.get(x) {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    };
    let width = |x: ExprId| match pool.sort(x) {
        Sort::Bv(w) if w <= 64 => Some(w),
        _ => None,
    };
    Some(match node {
        Expr::Bool(b) => Value::Bool(*b),
        Expr::Const { width, value } if *width <= 64 => Value::Bv(*value),
        Expr::Const { .. } => return None,
        Expr::Symbol { name, sort, .. } => {
            if let Sort::Bv(w) = sort {
                if *w > 64 {
                    return None;
                }
            }
            assignment.value(name, *sort)?
        }
        Expr::Star(_) | Expr::Lambda { .. } => return None,
        Expr::Forall(vs, body) | Expr::Exists(vs, body) => Value::Bool(bounded(pool, matches!(node, Expr::Forall(..)), vs, *body, assignment)?),
        Expr::Not(a) => Value::Bool(!boolean(a)?),
        Expr::And(xs) => {
            let mut all = true;
            for x in xs {
                all &= boolean(x)?;
            }
            Value::Bool(all)
        }
        Expr::Or(xs) => {
            let mut any = false;
            for x in xs {
                any |= boolean(x)?;
            }
            Value::Bool(any)
        }
        Expr::Ite(c, a, b) => memo.get(if boolean(c)? { a } else { b })?.clone(),
        Expr::Bin(op, a, b) => {
            let w = width(*a)?;
            let (x, y) = (bv(a)?, bv(b)?);
            let m = |v: u64| super::mask(w, v);
            let sx = super::to_signed(w, x);
            let sy = super::to_signed(w, y);
            let ones = m(u64::MAX);
            Value::Bv(match op {
                Add => m(x.wrapping_add(y)),
                Sub => m(x.wrapping_sub(y)),
                Mul => m(x.wrapping_mul(y)),
                UDiv => {
                    if y == 0 {
                        ones
                    } else {
                        x / y
                    }
                }
                URem => {
                    if y == 0 {
                        x
                    } else {
                        x % y
                    }
                }
                SDiv => {
                    if y == 0 {
                        if sx < 0 {
                            1
                        } else {
                            ones
                        }
                    } else {
                        m(sx.wrapping_div(sy) as u64)
                    }
                }
                SRem => {
                    if y == 0 {
                        x
                    } else {
                        m(sx.wrapping_rem(sy) as u64)
                    }
                }
                Shl => {
                    if y >= w as u64 {
                        0
                    } else {
                        m(x << y)
                    }
                }
                LShr => {
                    if y >= w as u64 {
                        0
                    } else {
                        x >> y
                    }
                }
                AShr => {
                    let s = y.min(w as u64 - 1);
                    m((sx >> s) as u64)
                }
                And => x & y,
                Or => x | y,
                Xor => x ^ y,
            })
        }
        Expr::Cmp(p, a, b) => {
            if pool.sort(*a) == Sort::Bool {
                let eq = boolean(a)? == boolean(b)?;
                return Some(Value::Bool(if *p == IntPredicate::Eq { eq } else { !eq }));
            }
            let w = width(*a)?;
            let (x, y) = (bv(a)?, bv(b)?);
            Value::Bool(super::fold_cmp(*p, w, x, y))
        }
        Expr::ZExt(a, w) => {
            if *w > 64 {
                return None;
            }
            Value::Bv(bv(a)?)
        }
        Expr::SExt(a, w) => {
            let from = width(*a)?;
            if *w > 64 {
                return None;
            }
            Value::Bv(super::mask(*w, super::to_signed(from, bv(a)?) as u64))
        }
        Expr::Extract { hi, lo, e: a } => {
            width(*a)?;
            Value::Bv(super::mask(hi - lo + 1, bv(a)? >> lo))
        }
        Expr::Load {
            array,
            offset,
            width: w,
        } => {
            let (Some(Value::Array(arr)), Some(off)) = (memo.get(array), bv(offset)) else {
                return None;
            };
            if *w > 64 || *w % 8 != 0 {
                return None;
            }
            let mut out = 0u64;
            for k in 0..(*w / 8) as u64 {
                out |= (arr.get(off.wrapping_add(k)) & 0xff) << (8 * k);
            }
            Value::Bv(out)
        }
        Expr::Store {
            array,
            offset,
            value,
            width: w,
        } => {
            let (Some(Value::Array(arr)), Some(off), Some(val)) =
                (memo.get(array), bv(offset), bv(value))
            else {
                return None;
            };
            if *w > 64 || *w % 8 != 0 || arr.writes.len() >= MAX_WRITES {
                return None;
            }
            let mut next = (**arr).clone();
            for k in 0..(*w / 8) as u64 {
                next.writes
                    .insert(off.wrapping_add(k), (val >> (8 * k)) & 0xff);
            }
            Value::Array(Rc::new(next))
        }
        Expr::ConstArray { value, .. } => Value::Array(Rc::new(ArrayValue {
            base: ArrayBase::Const(bv(value)?),
            writes: HashMap::new(),
        })),
        Expr::Select(array, index) => {
            let Some(Value::Array(arr)) = memo.get(array) else {
                return None;
            };
            let Sort::Array { index: iw, .. } = pool.sort(*array) else {
                return None;
            };
            if iw > 64 {
                return None;
            }
            Value::Bv(arr.get(bv(index)?))
        }
    })
    .filter(|v| !matches!((v, pool.sort(e)), (Value::Bv(_), Sort::Bv(w)) if w > 64))
}

/// Most values a bounded quantifier's variable is evaluated at.
const MAX_QUANTIFIER_RANGE: u64 = 64;

/// `∀τ (τ ≥ᵤ e ∨ body)` or `∃τ (τ <ᵤ e ∧ body)` (the shapes of looping conditions, also with
/// `≤ᵤ`/`>ᵤ`), with `e` not mentioning τ and at most [`MAX_QUANTIFIER_RANGE`]: the body evaluated
/// at every τ in range. Any other quantifier cannot be evaluated.
fn bounded(pool: &ExprPool, forall: bool, vars: &[ExprId], body: ExprId, assignment: &mut dyn Assignment) -> Option<bool> {
    let [var] = vars else { return None };
    let Expr::Symbol { name, .. } = pool.get(*var) else { return None };
    let parts: Vec<ExprId> = match pool.get(body) {
        Expr::Or(xs) if forall => xs.clone(),
        Expr::And(xs) if !forall => xs.clone(),
        _ => vec![body],
    };
    // The guard: a comparison of τ with a bound free of τ (τ ≥ e / τ > e under ∀, τ < e /
    // τ ≤ e under ∃): the values in range are those for which the guard does not decide.
    let mut range = None;
    for &p in &parts {
        if let Expr::Cmp(pred, a, b) = pool.get(p) {
            if *a != *var || crate::expr::mentions(pool, *b, &[*var]) {
                continue;
            }
            let limit = match eval(pool, *b, assignment)? {
                Value::Bv(v) => v,
                _ => continue,
            };
            range = match (forall, pred) {
                (true, IntPredicate::Uge) | (false, IntPredicate::Ult) => Some(limit),
                (true, IntPredicate::Ugt) | (false, IntPredicate::Ule) => Some(limit.checked_add(1)?),
                _ => continue,
            };
            break;
        }
    }
    let range = range.filter(|r| *r <= MAX_QUANTIFIER_RANGE)?;
    struct Bound<'a> {
        name: &'a str,
        value: u64,
        outer: &'a mut dyn Assignment,
    }
    impl Assignment for Bound<'_> {
        fn value(&mut self, name: &str, sort: Sort) -> Option<Value> {
            if name == self.name {
                Some(Value::Bv(self.value))
            } else {
                self.outer.value(name, sort)
            }
        }
    }
    for t in 0..range {
        let mut inner = Bound { name, value: t, outer: &mut *assignment };
        let holds = match eval(pool, body, &mut inner)? {
            Value::Bool(b) => b,
            _ => return None,
        };
        if holds != forall {
            return Some(!forall);
        }
    }
    Some(forall)
}

/// Whether the conjunction `f` contains a literal and its negation (`x = 0` and `x ≠ 0`, `b` and
/// `¬b`): unsatisfiable without a solver. `false` says nothing.
pub fn contradictory(pool: &ExprPool, f: ExprId) -> bool {
    let conjuncts: Vec<ExprId> = match pool.get(f) {
        Expr::And(xs) => xs.clone(),
        _ => return false,
    };
    let present: std::collections::HashSet<ExprId> = conjuncts.iter().copied().collect();
    let nodes: std::collections::HashSet<&Expr> = conjuncts.iter().map(|&c| pool.get(c)).collect();
    conjuncts.iter().any(|&c| match pool.get(c) {
        Expr::Not(x) => present.contains(x),
        Expr::Cmp(p, a, b) => nodes.contains(&Expr::Cmp(p.negate(), *a, *b)),
        _ => false,
    })
}

/// splitmix64's finaliser: a well-mixed 64-bit hash of `x`.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// A random value biased to the small ones programs compare with: a quarter are 0..=3, a quarter
/// −4..=−1, the rest arbitrary.
fn small_biased(r: u64) -> u64 {
    match r & 3 {
        0 => (r >> 2) & 3,
        1 => ((r >> 2) & 3).wrapping_add(1).wrapping_neg(),
        _ => r >> 2 ^ r << 62,
    }
}

/// One trial: every symbol gets a value that depends only on (trial, name), so a symbol that
/// occurs twice has one value.
struct Trial {
    seed: u64,
    /// Constants of the formula: a symbol often has to equal one (or be next to one).
    constants: Rc<Vec<u64>>,
}

impl Assignment for Trial {
    fn value(&mut self, name: &str, sort: Sort) -> Option<Value> {
        let r = mix(self.seed ^ name_hash(name));
        Some(match sort {
            Sort::Bool => Value::Bool(r & 1 == 1),
            Sort::Bv(w) => {
                // The first trials: everything 0, then everything 1. Then each symbol on its
                // own: mostly small (counters, indices), often next to a constant of the
                // formula, sometimes small negative or arbitrary.
                let v = match r >> 59 {
                    _ if self.seed == 0 => 0,
                    _ if self.seed == 1 => 1,
                    0..=11 => r & 3,
                    12..=21 if !self.constants.is_empty() => {
                        let c = self.constants[(r >> 8) as usize % self.constants.len()];
                        c.wrapping_add([0, 0, 0, 0, 0, u64::MAX, 1, 2][(r & 7) as usize])
                    }
                    12..=25 => (r & 3).wrapping_add(1).wrapping_neg(),
                    _ => r.rotate_left(17),
                };
                Value::Bv(super::mask(w, v))
            }
            // Every other trial, all arrays hold one small nonzero value everywhere, so that
            // reads of different cells or arrays can be equal (`A[j] = H[k]`).
            // Every fourth, memory holds `int`s equal to a constant of the formula (`A[i] = 1`
            // read as 4 bytes).
            Sort::Array { elem: 8, .. } if self.seed % 4 == 2 && !self.constants.is_empty() => Value::Array(Rc::new(ArrayValue {
                base: ArrayBase::Words(self.constants[(mix(self.seed) >> 8) as usize % self.constants.len()] & 0xffff_ffff),
                writes: HashMap::new(),
            })),
            Sort::Array { elem, .. } if self.seed >= 2 && self.seed % 2 == 0 => Value::Array(Rc::new(ArrayValue {
                base: ArrayBase::Const(super::mask(elem, 1 + (mix(self.seed) & 3))),
                writes: HashMap::new(),
            })),
            Sort::Array { elem, .. } => Value::Array(Rc::new(ArrayValue {
                base: ArrayBase::Seeded { seed: r, elem },
                writes: HashMap::new(),
            })),
        })
    }
}

/// The value trial `seed` gives a symbol `name` of `sort` (see [`model_by_trial`]): a
/// pseudo-random assignment for sampling executions, consistent within one seed.
pub fn trial_value(seed: u64, name: &str, sort: Sort) -> Value {
    let mut trial = Trial { seed: seed.max(2), constants: Rc::new(vec![]) };
    trial.value(name, sort).expect("trials give every sort a value")
}

/// An array of pseudo-random zeros and ones (seeded): an input stream whose every test goes
/// either way, to sample many paths of a loop.
pub fn coin_array(seed: u64) -> Value {
    Value::Array(Rc::new(ArrayValue { base: ArrayBase::Coins { seed }, writes: HashMap::new() }))
}

/// splitmix64 of `x`, for callers that derive their own pseudo-random choices.
pub fn hash64(x: u64) -> u64 {
    mix(x)
}

/// A stable hash of a symbol's name.
pub fn hash_name(name: &str) -> u64 {
    name_hash(name)
}

/// Whether one of `trials` cheap concrete assignments satisfies the formula `f`: `true` proves
/// `f` satisfiable; `false` says nothing.
pub fn satisfiable_by_trial(pool: &ExprPool, f: ExprId, trials: u64) -> bool {
    model_by_trial(pool, f, trials).is_some()
}

/// A concrete assignment (one of `trials`) under which `f` holds, to evaluate other expressions
/// in (a counterexample's view of them, as from a solver's model).
pub fn model_by_trial(pool: &ExprPool, f: ExprId, trials: u64) -> Option<TrialModel> {
    let mut constants = vec![];
    super::visit(pool, f, |_, node| {
        if let Expr::Const { value, .. } = node {
            constants.push(*value);
        }
        true
    });
    constants.sort_unstable();
    constants.dedup();
    constants.truncate(64);
    let constants = Rc::new(constants);
    for seed in 0..trials {
        let mut trial = Trial {
            seed,
            constants: constants.clone(),
        };
        match eval(pool, f, &mut trial) {
            Some(Value::Bool(true)) => return Some(TrialModel(trial)),
            // All zeros cannot be evaluated: something no assignment makes evaluable (⋆, a
            // λ-array, a wide integer, a quantifier without a small range) is in the way.
            None if seed == 0 => return None,
            _ => {}
        }
    }
    None
}

/// The assignment [`model_by_trial`] found.
pub struct TrialModel(Trial);

impl TrialModel {
    /// The value of the formula `e` under this assignment (`None`: it cannot be evaluated).
    pub fn holds(&mut self, pool: &ExprPool, e: ExprId) -> Option<bool> {
        match eval(pool, e, &mut self.0)? {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{BvOp, SymbolKind};

    struct Fixed(HashMap<&'static str, u64>);
    impl Assignment for Fixed {
        fn value(&mut self, name: &str, _: Sort) -> Option<Value> {
            self.0.get(name).map(|v| Value::Bv(*v))
        }
    }

    #[test]
    fn wrapping_and_division_follow_smt_lib() {
        let mut p = ExprPool::new();
        let x = p.symbol("x", Sort::Bv(8), SymbolKind::Input);
        let y = p.symbol("y", Sort::Bv(8), SymbolKind::Input);
        let cases = [
            (BvOp::Add, 250, 10, 4),
            (BvOp::UDiv, 7, 0, 255),
            (BvOp::URem, 7, 0, 7),
            (BvOp::SDiv, 0x80, 0xff, 0x80),
            (BvOp::Shl, 1, 8, 0),
            (BvOp::AShr, 0x80, 9, 0xff),
            (BvOp::SRem, 0xf9, 2, 0xff),
        ];
        for (op, a, b, want) in cases {
            let e = p.bin(op, x, y);
            let mut asg = Fixed(HashMap::from([("x", a), ("y", b)]));
            assert_eq!(
                eval(&p, e, &mut asg),
                Some(Value::Bv(want)),
                "{op:?} {a} {b}"
            );
        }
    }

    #[test]
    fn memory_reads_what_was_stored_little_endian() {
        let mut p = ExprPool::new();
        let zero = p.bv(8, 0);
        let mem = p.const_array(64, zero);
        let off = p.bv(64, 4);
        let v = p.bv(32, 0x1122_3344);
        let stored = p.store(mem, off, v, 32);
        let at5 = p.bv(64, 5);
        let byte = p.load(stored, at5, 8);
        assert_eq!(
            eval(&p, byte, &mut Fixed(HashMap::new())),
            Some(Value::Bv(0x33))
        );
    }

    #[test]
    fn bounded_quantifiers_are_evaluated_over_their_range() {
        let mut p = ExprPool::new();
        let tau = p.symbol("τ1", Sort::Bv(64), SymbolKind::Tau(1));
        let kappa = p.symbol("κ1", Sort::Bv(64), SymbolKind::Kappa(1));
        let a = p.symbol("A", Sort::MEMORY, SymbolKind::Input);
        let byte = p.load(a, tau, 8);
        let zero = p.bv(8, 0);
        let nonzero = p.cmp(IntPredicate::Ne, byte, zero);
        let guard = p.cmp(IntPredicate::Uge, tau, kappa);
        let body = p.or([guard, nonzero]);
        let all = p.forall(vec![tau], body);
        let at_end = p.load(a, kappa, 8);
        let ends = p.cmp(IntPredicate::Eq, at_end, zero);
        // A string of κ nonzero bytes ended by a zero: found by trying (κ and A concrete).
        let f = p.and([all, ends]);
        assert!(satisfiable_by_trial(&p, f, 64));
        struct Ones;
        impl Assignment for Ones {
            fn value(&mut self, name: &str, sort: Sort) -> Option<Value> {
                Some(match sort {
                    Sort::Array { .. } => Value::Array(Rc::new(ArrayValue { base: ArrayBase::Const(if name == "A" { 1 } else { 0 }), writes: HashMap::new() })),
                    _ => Value::Bv(if name == "κ1" { 5 } else { 0 }),
                })
            }
        }
        assert_eq!(eval(&p, all, &mut Ones), Some(Value::Bool(true)));
        assert_eq!(eval(&p, f, &mut Ones), Some(Value::Bool(false)), "A[5] = 1, not 0");
    }

    #[test]
    fn a_literal_and_its_negation_contradict() {
        let mut p = ExprPool::new();
        let x = p.symbol("x", Sort::Bv(8), SymbolKind::Input);
        let y = p.symbol("y", Sort::Bv(8), SymbolKind::Input);
        let zero = p.bv(8, 0);
        let eq = p.cmp(IntPredicate::Eq, x, zero);
        let ne = p.cmp(IntPredicate::Ne, x, zero);
        let lt = p.cmp(IntPredicate::Ult, x, y);
        let f = p.and([eq, lt, ne]);
        assert!(contradictory(&p, f));
        let g = p.and([eq, lt]);
        assert!(!contradictory(&p, g));
    }

    #[test]
    fn trials_find_easy_models_and_never_claim_unsat_ones() {
        let mut p = ExprPool::new();
        let i = p.symbol("i", Sort::Bv(32), SymbolKind::Input);
        let n = p.symbol("n", Sort::Bv(32), SymbolKind::Input);
        let lt = p.cmp(IntPredicate::Slt, i, n);
        assert!(satisfiable_by_trial(&p, lt, 16));
        let fifteen = p.bv(32, 15);
        let eq = p.cmp(IntPredicate::Eq, n, fifteen);
        assert!(
            satisfiable_by_trial(&p, eq, 16),
            "constants of the formula are tried"
        );
        // An `int` array element equal to a constant: 4 bytes at once.
        let a = p.symbol("A", Sort::MEMORY, SymbolKind::Input);
        let i64_ = p.zext(i, 64);
        let four = p.bv(64, 4);
        let at = p.bin(BvOp::Mul, i64_, four);
        let elem = p.load(a, at, 32);
        let one = p.bv(32, 1);
        let is_one = p.cmp(IntPredicate::Eq, elem, one);
        let g = p.and([lt, is_one]);
        assert!(satisfiable_by_trial(&p, g, 32), "int arrays of a constant are tried");
        let zero = p.bv(32, 0);
        let never = p.cmp(IntPredicate::Ult, i, zero);
        assert!(!satisfiable_by_trial(&p, never, 64));
        let not_lt = p.not(lt);
        let both = p.and([lt, not_lt]);
        assert!(!satisfiable_by_trial(&p, both, 64));
    }
}
