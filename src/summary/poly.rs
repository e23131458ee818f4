//! Candidate polynomial equalities among a loop's integer variables, fitted to sampled states.
//!
//! Loops such as `x += y; y += z; z += 6` (x = n³) or `k++; s += k` on one of several
//! backbones (2s = k² + k) keep polynomial relations that no template names. They are found
//! the way nla verifiers find them: run the loop's iterations concretely from its entry state
//! (the state θ at the entry where it was first summarised, with pseudo-random values for the
//! inputs and the input stream), collect the states at the loop head, and compute the null
//! space of the matrix of their monomials up to degree 3 (exactly, modulo a large prime, with
//! the coefficients brought back to small integers). Every vector of it is a polynomial that
//! vanishes on every sample. These are only candidates: the caller keeps those Z3 proves
//! inductive on the bit-vectors ([`super::invariant`]). Relations that hold over the integers
//! and are made of ring operations hold modulo 2^w too, so wrap-around does not break them;
//! samples are cut before the values grow large enough to wrap.

use super::invariant::Step;
use super::LoopVar;
use crate::expr::eval::{self, Assignment, Value};
use crate::expr::{BvOp, Expr, ExprId, ExprPool, Sort};
use std::collections::HashMap;

/// The prime of the linear algebra, 2^61 − 1.
const P: u64 = (1 << 61) - 1;
/// Highest degree of a monomial.
const MAX_DEGREE: u32 = 3;
/// Most monomials (columns): the degree is lowered until they fit.
const MAX_MONOMIALS: usize = 120;
/// Sampled executions, and iterations followed in each.
const RUNS: u64 = 64;
const MAX_ITERATIONS: usize = 40;
/// Most distinct sampled states.
const MAX_SAMPLES: usize = 500;
/// Most candidates returned (lowest degrees first).
const MAX_CANDIDATES: usize = 12;
/// Largest common denominator when a coefficient vector is brought back to integers.
const MAX_DENOMINATOR: i128 = 1 << 20;

/// A candidate: `formula` (an equality of bit-vector polynomials) and its degree.
pub struct Candidate {
    pub formula: ExprId,
    pub degree: u32,
}

/// Candidate equalities over the variables `chosen` (indices into `vars`, integers of width
/// `w`), fitted to states sampled by iterating `steps` from `entry` (each variable's value at
/// the loop's entry, over the enclosing function's symbols; `None`: unknown).
///
/// The first `independent` variables of `chosen` (loop bounds, counters) are the ones the
/// others are expressed in: each candidate is solved for a monomial of the others where it can
/// be (`x = n·n·n`, not `n·n·n − x = 0` over fractions), which is also the form in which the
/// solver eliminates the variable.
pub fn candidates(pool: &mut ExprPool, vars: &[LoopVar], steps: &[Step], entry: &[Option<ExprId>], chosen: &[usize], independent: usize, w: u32) -> Vec<Candidate> {
    let rows = sample(pool, vars, steps, entry, chosen, w);
    let n = chosen.len();
    tracing::debug!(samples = rows.len(), variables = n, "polynomial invariants: states sampled");
    // The highest degree whose monomials fit and are fewer than the samples (else the null
    // space holds relations that only the few samples satisfy).
    let Some(degree) = (1..=MAX_DEGREE).rev().find(|&d| {
        let m = monomials(n, d).len();
        m <= MAX_MONOMIALS && m + 8 <= rows.len()
    }) else {
        return vec![];
    };
    // Monomials of the independent variables first, then by degree in the dependent ones: a
    // free column of the null space is expressed in the columns before it.
    let mut monos = monomials(n, degree);
    monos.sort_by_key(|m| {
        let dependent: u32 = m[independent..].iter().sum();
        let reversed: Vec<u32> = m.iter().rev().copied().collect();
        (dependent, m.iter().sum::<u32>(), reversed)
    });
    let index: HashMap<Vec<u32>, usize> = monos.iter().enumerate().map(|(i, m)| (m.clone(), i)).collect();
    let values: Vec<Vec<u64>> = rows.iter().map(|r| monos.iter().map(|m| monomial_mod_p(r, m)).collect()).collect();
    let deg = |m: &Vec<u32>| m.iter().sum::<u32>();

    let dependent = |m: &Vec<u32>| m[independent..].iter().sum::<u32>();
    let null_vectors = |cols: &[usize]| -> Vec<Vec<u64>> {
        let matrix: Vec<Vec<u64>> = values.iter().map(|r| cols.iter().map(|&c| r[c]).collect()).collect();
        null_space(&matrix, cols.len())
            .into_iter()
            .map(|sub| {
                let mut v = vec![0u64; monos.len()];
                for (&c, &x) in cols.iter().zip(&sub) {
                    v[c] = x;
                }
                v
            })
            .collect()
    };
    // A null-space vector is kept only when the earlier ones times monomials do not imply it:
    // `n·(z − 6n − 6) = 0` says nothing new. `implied` spans those products.
    let mut implied = Echelon::default();
    let mut out = vec![];
    let mut consider = |pool: &mut ExprPool, v: Vec<u64>, implied: &mut Echelon| {
        if !implied.insert(v.clone()) {
            return;
        }
        let vd = v.iter().enumerate().filter(|(_, &c)| c != 0).map(|(i, _)| deg(&monos[i])).max().unwrap_or(0);
        for m in monos.iter().filter(|m| deg(m) >= 1 && deg(m) + vd <= degree) {
            let mut p = vec![0u64; monos.len()];
            for (i, &c) in v.iter().enumerate() {
                if c != 0 {
                    let prod: Vec<u32> = monos[i].iter().zip(m).map(|(a, b)| a + b).collect();
                    p[index[&prod]] = c;
                }
            }
            implied.insert(p);
        }
        let Some(ints) = to_integers(&v) else { return };
        if !vanishes(&rows, &monos, &ints) {
            return;
        }
        let f = formula(pool, vars, chosen, &monos, &ints, w);
        if pool.as_bool(f).is_none() && out.len() < MAX_CANDIDATES {
            out.push(Candidate { formula: f, degree: vd });
        }
    };
    // First the relations among the independent variables, then each dependent one as a
    // polynomial of those (`x = n·n·n` before `y·n = 3x + 3n² + n`, which it implies with
    // `y = 3n² + 3n + 1`), then whatever is left, degree by degree.
    let independent_cols: Vec<usize> = (0..monos.len()).filter(|&i| dependent(&monos[i]) == 0).collect();
    for v in null_vectors(&independent_cols) {
        consider(pool, v, &mut implied);
    }
    let mut solved = vec![false; n];
    for k in independent..n {
        let Some(own) = monos.iter().position(|m| deg(m) == 1 && m[k] == 1) else { continue };
        let cols: Vec<usize> = independent_cols.iter().copied().chain([own]).collect();
        for v in null_vectors(&cols).into_iter().filter(|v| v[own] != 0) {
            solved[k] = true;
            consider(pool, v, &mut implied);
        }
    }
    // A relation among independent and solved variables alone follows from the solved forms.
    let open_cols: Vec<usize> = (0..monos.len()).filter(|&i| (independent..n).any(|k| monos[i][k] > 0 && !solved[k])).collect();
    for d in 1..=degree {
        let cols: Vec<usize> = (0..monos.len()).filter(|&i| deg(&monos[i]) <= d).collect();
        for v in null_vectors(&cols) {
            if open_cols.iter().any(|&c| v[c] != 0) {
                consider(pool, v, &mut implied);
            }
        }
    }
    tracing::debug!(candidates = out.len(), degree, "polynomial invariants: candidates fitted");
    out
}

/// The values of the symbols of one sampled execution: the loop variables' current values,
/// and for every other symbol (inputs, the input stream, memory) a pseudo-random value fixed
/// for the run.
struct Run<'a> {
    seed: u64,
    state: &'a HashMap<String, Value>,
}

impl Assignment for Run<'_> {
    fn value(&mut self, name: &str, sort: Sort) -> Option<Value> {
        Some(self.state.get(name).cloned().unwrap_or_else(|| outer(self.seed, name, sort)))
    }
}

/// A run's value of a symbol that is not a loop variable: integers mostly small (loop bounds
/// and counts), some negative, some large.
fn outer(seed: u64, name: &str, sort: Sort) -> Value {
    match sort {
        Sort::Bv(w) => {
            let r = eval::hash64(seed ^ eval::hash_name(name));
            let v: i64 = match r % 8 {
                0..=3 => ((r >> 8) % 48) as i64,
                4 => -(((r >> 8) % 16) as i64) - 1,
                5 => ((r >> 8) % 5000) as i64,
                _ => (r >> 8) as i64,
            };
            Value::Bv(crate::expr::mask(w, v as u64))
        }
        // A third of the runs take every branch on the input stream either way.
        Sort::Array { .. } if seed % 3 == 1 => eval::coin_array(seed),
        _ => eval::trial_value(seed, name, sort),
    }
}

fn symbol_name(pool: &ExprPool, e: ExprId) -> Option<String> {
    match pool.get(e) {
        Expr::Symbol { name, .. } => Some(name.to_string()),
        _ => None,
    }
}

/// Distinct states at the loop head (the `chosen` variables, signed), from executions of the
/// iterations on pseudo-random inputs.
fn sample(pool: &ExprPool, vars: &[LoopVar], steps: &[Step], entry: &[Option<ExprId>], chosen: &[usize], w: u32) -> Vec<Vec<i64>> {
    let Some(names) = vars.iter().map(|v| symbol_name(pool, v.symbol)).collect::<Option<Vec<String>>>() else { return vec![] };
    // A value this large may wrap around within a few iterations: the relation over the
    // integers that the null space finds would not fit the wrapped samples.
    let limit: i64 = 1i64 << w.min(64).saturating_sub(4).min(40);
    let mut rows: Vec<Vec<i64>> = vec![];
    let mut seen = std::collections::HashSet::new();
    'runs: for run in 0..RUNS {
        let seed = eval::hash64(run.wrapping_add(0x5eed));
        let empty = HashMap::new();
        let mut state: HashMap<String, Value> = HashMap::new();
        for (k, name) in names.iter().enumerate() {
            let at_entry = entry.get(k).copied().flatten().and_then(|e| eval::eval(pool, e, &mut Run { seed, state: &empty }));
            let v = match at_entry {
                Some(v) => v,
                // A chosen variable without an entry value: the run starts nowhere in particular.
                None if chosen.contains(&k) => continue 'runs,
                None => outer(seed, name, pool.sort(vars[k].symbol)),
            };
            state.insert(name.clone(), v);
        }
        for it in 0..MAX_ITERATIONS {
            let mut row = vec![];
            for &k in chosen {
                match state.get(&names[k]) {
                    Some(Value::Bv(v)) => row.push(crate::expr::to_signed(w, *v)),
                    _ => continue 'runs,
                }
            }
            if row.iter().any(|v| v.unsigned_abs() > limit as u64) {
                continue 'runs;
            }
            if seen.insert(row.clone()) {
                rows.push(row);
                if rows.len() >= MAX_SAMPLES {
                    break 'runs;
                }
            }
            // The iteration whose tests hold (one at random when several do: a choice the
            // analysis does not see).
            let mut holding = vec![];
            for (i, s) in steps.iter().enumerate() {
                let mut all = true;
                for &t in s.tests {
                    match eval::eval(pool, t, &mut Run { seed, state: &state }) {
                        Some(Value::Bool(true)) => {}
                        Some(Value::Bool(false)) => {
                            all = false;
                            break;
                        }
                        _ => continue 'runs,
                    }
                }
                if all {
                    holding.push(i);
                }
            }
            if holding.is_empty() {
                continue 'runs;
            }
            let step = &steps[holding[(eval::hash64(seed ^ it as u64) % holding.len() as u64) as usize]];
            let mut next = HashMap::new();
            for (k, name) in names.iter().enumerate() {
                let v = step.values[k].and_then(|e| eval::eval(pool, e, &mut Run { seed, state: &state }));
                match v {
                    Some(v) => {
                        next.insert(name.clone(), v);
                    }
                    None if chosen.contains(&k) => continue 'runs,
                    // Left out: a fresh value of the run from then on.
                    None => {}
                }
            }
            state = next;
        }
    }
    rows
}

/// Exponent vectors over `n` variables of total degree at most `d`, by degree.
fn monomials(n: usize, d: u32) -> Vec<Vec<u32>> {
    let mut all = vec![vec![0; n]];
    let mut last = vec![vec![0u32; n]];
    for _ in 0..d {
        let mut next = vec![];
        for m in &last {
            // Raise only variables at or after the last raised one: each monomial once.
            let start = m.iter().rposition(|&e| e > 0).unwrap_or(0);
            for v in start..n {
                let mut x = m.clone();
                x[v] += 1;
                next.push(x);
            }
        }
        all.extend(next.iter().cloned());
        last = next;
    }
    all
}

fn to_p(v: i64) -> u64 {
    (v as i128).rem_euclid(P as i128) as u64
}

fn mul(a: u64, b: u64) -> u64 {
    ((a as u128 * b as u128) % P as u128) as u64
}

fn sub(a: u64, b: u64) -> u64 {
    (a + P - b) % P
}

fn inverse(a: u64) -> u64 {
    // Fermat: a^(P−2).
    let (mut base, mut e, mut r) = (a, P - 2, 1u64);
    while e > 0 {
        if e & 1 == 1 {
            r = mul(r, base);
        }
        base = mul(base, base);
        e >>= 1;
    }
    r
}

fn monomial_mod_p(row: &[i64], m: &[u32]) -> u64 {
    let mut r = 1u64;
    for (&v, &e) in row.iter().zip(m) {
        for _ in 0..e {
            r = mul(r, to_p(v));
        }
    }
    r
}

/// A basis of the null space of `matrix` (its first `cols` columns) modulo P.
fn null_space(matrix: &[Vec<u64>], cols: usize) -> Vec<Vec<u64>> {
    let mut a: Vec<Vec<u64>> = matrix.to_vec();
    let mut pivots = vec![];
    let mut r = 0;
    for c in 0..cols {
        let Some(p) = (r..a.len()).find(|&i| a[i][c] != 0) else { continue };
        a.swap(r, p);
        let inv = inverse(a[r][c]);
        for x in a[r].iter_mut() {
            *x = mul(*x, inv);
        }
        for i in 0..a.len() {
            if i != r && a[i][c] != 0 {
                let f = a[i][c];
                for j in 0..cols {
                    let t = mul(f, a[r][j]);
                    a[i][j] = sub(a[i][j], t);
                }
            }
        }
        pivots.push(c);
        r += 1;
        if r == a.len() {
            break;
        }
    }
    let mut out = vec![];
    for free in (0..cols).filter(|c| !pivots.contains(c)) {
        let mut v = vec![0u64; cols];
        v[free] = 1;
        for (row, &pc) in pivots.iter().enumerate() {
            v[pc] = sub(0, a[row][free]);
        }
        out.push(v);
    }
    out
}

/// Vectors in echelon form modulo P.
#[derive(Default)]
struct Echelon {
    rows: Vec<(usize, Vec<u64>)>,
}

impl Echelon {
    /// Adds `v`; false when it is a combination of the vectors already there.
    fn insert(&mut self, mut v: Vec<u64>) -> bool {
        for (p, row) in &self.rows {
            if v[*p] != 0 {
                let f = v[*p];
                for (x, &y) in v.iter_mut().zip(row) {
                    *x = sub(*x, mul(f, y));
                }
            }
        }
        let Some(p) = v.iter().position(|&x| x != 0) else { return false };
        let inv = inverse(v[p]);
        for x in v.iter_mut() {
            *x = mul(*x, inv);
        }
        // Keep the rows reduced at the new pivot too.
        for (_, row) in self.rows.iter_mut() {
            if row[p] != 0 {
                let f = row[p];
                for (x, &y) in row.iter_mut().zip(&v) {
                    *x = sub(*x, mul(f, y));
                }
            }
        }
        self.rows.push((p, v));
        true
    }
}

/// a/b with |a|, |b| small and a ≡ c·b (mod P), by the extended Euclidean algorithm.
fn rational(c: u64) -> Option<(i128, i128)> {
    let bound: i128 = 1 << 30;
    let (mut r0, mut r1) = (P as i128, c as i128);
    let (mut t0, mut t1) = (0i128, 1i128);
    while r1 >= bound {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (t0, t1) = (t1, t0 - q * t1);
    }
    if t1 == 0 || t1.abs() >= bound {
        return None;
    }
    Some(if t1 < 0 { (-r1, -t1) } else { (r1, t1) })
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// The vector as coprime integers (a multiple of it), when its entries are small fractions.
fn to_integers(v: &[u64]) -> Option<Vec<i128>> {
    let fracs: Vec<(i128, i128)> = v.iter().map(|&c| if c == 0 { Some((0, 1)) } else { rational(c) }).collect::<Option<_>>()?;
    let mut l: i128 = 1;
    for &(_, b) in &fracs {
        l = l / gcd(l, b) * b;
        if l > MAX_DENOMINATOR {
            return None;
        }
    }
    let mut ints: Vec<i128> = fracs.iter().map(|&(a, b)| a * (l / b)).collect();
    let g = ints.iter().fold(0, |g, &x| gcd(g, x));
    if g == 0 {
        return None;
    }
    for x in ints.iter_mut() {
        *x /= g;
    }
    // The last monomial positive: `x = n·n·n` rather than `−x = −n·n·n`.
    if ints.iter().rev().find(|&&x| x != 0).is_some_and(|&x| x < 0) {
        for x in ints.iter_mut() {
            *x = -*x;
        }
    }
    Some(ints)
}

/// Whether the integer polynomial is 0 on every sample, exactly (no overflow).
fn vanishes(rows: &[Vec<i64>], monos: &[Vec<u32>], coeffs: &[i128]) -> bool {
    rows.iter().all(|r| {
        let mut sum: i128 = 0;
        for (m, &c) in monos.iter().zip(coeffs) {
            if c == 0 {
                continue;
            }
            let mut t: i128 = c;
            for (&v, &e) in r.iter().zip(m) {
                for _ in 0..e {
                    let Some(x) = t.checked_mul(v as i128) else { return false };
                    t = x;
                }
            }
            let Some(s) = sum.checked_add(t) else { return false };
            sum = s;
        }
        sum == 0
    })
}

/// `Σ c·m = Σ −c·m` (positive coefficients on the left), in `w` bits.
fn formula(pool: &mut ExprPool, vars: &[LoopVar], chosen: &[usize], monos: &[Vec<u32>], coeffs: &[i128], w: u32) -> ExprId {
    let mut sides: [Vec<ExprId>; 2] = [vec![], vec![]];
    // The solved-for monomial first.
    for (m, &c) in monos.iter().zip(coeffs).rev() {
        if c == 0 {
            continue;
        }
        let mut term: Option<ExprId> = None;
        for (i, &e) in m.iter().enumerate() {
            for _ in 0..e {
                let x = vars[chosen[i]].symbol;
                term = Some(match term {
                    None => x,
                    Some(t) => pool.bin(BvOp::Mul, t, x),
                });
            }
        }
        let magnitude = crate::expr::mask(w, c.unsigned_abs() as u64);
        let term = match term {
            None => pool.bv(w, magnitude),
            Some(t) if magnitude == 1 => t,
            Some(t) => {
                let k = pool.bv(w, magnitude);
                pool.bin(BvOp::Mul, k, t)
            }
        };
        sides[(c < 0) as usize].push(term);
    }
    let [l, r] = sides.map(|terms| {
        let mut it = terms.into_iter();
        let first = it.next();
        first.map(|f| it.fold(f, |acc, t| pool.bin(BvOp::Add, acc, t))).unwrap_or_else(|| pool.bv(w, 0))
    });
    pool.eq(l, r)
}

/// A polynomial over atoms (maximal non-polynomial subterms) modulo 2^w: monomial (its atoms,
/// sorted, with repetition) ↦ coefficient.
type Poly = std::collections::BTreeMap<Vec<ExprId>, u64>;

/// Most terms of an expansion: beyond it the expansion is not worth the solver's time.
const MAX_TERMS: usize = 64;

fn expand(pool: &ExprPool, e: ExprId, w: u32) -> Option<Poly> {
    let m = |v: u64| crate::expr::mask(w, v);
    let atom = || Some(Poly::from([(vec![e], 1)]));
    let add = |mut a: Poly, b: Poly, sign: u64| {
        for (k, v) in b {
            let c = a.entry(k).or_insert(0);
            *c = m(c.wrapping_add(v.wrapping_mul(sign)));
        }
        a.retain(|_, c| *c != 0);
        (a.len() <= MAX_TERMS).then_some(a)
    };
    match pool.get(e) {
        Expr::Const { value, .. } => Some(Poly::from([(vec![], m(*value))]).into_iter().filter(|(_, c)| *c != 0).collect()),
        Expr::Bin(BvOp::Add, a, b) => add(expand(pool, *a, w)?, expand(pool, *b, w)?, 1),
        Expr::Bin(BvOp::Sub, a, b) => add(expand(pool, *a, w)?, expand(pool, *b, w)?, u64::MAX),
        Expr::Bin(BvOp::Mul, a, b) => {
            let (pa, pb) = (expand(pool, *a, w)?, expand(pool, *b, w)?);
            let mut out = Poly::new();
            for (ka, va) in &pa {
                for (kb, vb) in &pb {
                    let mut k: Vec<ExprId> = ka.iter().chain(kb).copied().collect();
                    k.sort();
                    out = add(out, Poly::from([(k, m(va.wrapping_mul(*vb)))]), 1)?;
                }
            }
            Some(out)
        }
        Expr::Bin(BvOp::Shl, a, b) => match pool.as_const(*b) {
            Some(c) if c < w as u64 => {
                let pa = expand(pool, *a, w)?;
                Some(pa.into_iter().map(|(k, v)| (k, m(v << c))).filter(|(_, v)| *v != 0).collect())
            }
            _ => atom(),
        },
        _ => atom(),
    }
}

/// An equality `a = b` of `w`-bit terms with each side in sum-of-monomials form, each
/// monomial built in one canonical way: in this form the preservation of a polynomial
/// invariant is linear in its monomials, which the solver decides with them uninterpreted.
/// The sides are expanded apart (nothing moves across `=`), so that Z3's own
/// sum-of-monomials simplifier shows each form equivalent to its original.
pub fn normalised(pool: &mut ExprPool, f: ExprId) -> Option<ExprId> {
    let Expr::Cmp(crate::ir::IntPredicate::Eq, a, b) = pool.get(f).clone() else { return None };
    let Sort::Bv(w) = pool.sort(a) else { return None };
    let (pa, pb) = (expand(pool, a, w)?, expand(pool, b, w)?);
    let [l, r] = [pa, pb].map(|p| {
        let mut terms = vec![];
        for (k, c) in p {
            let mut it = k.into_iter();
            let term = it.next().map(|first| it.fold(first, |t, x| pool.bin(BvOp::Mul, t, x)));
            terms.push(match term {
                None => pool.bv(w, c),
                Some(t) if c == 1 => t,
                Some(t) => {
                    let kk = pool.bv(w, c);
                    pool.bin(BvOp::Mul, kk, t)
                }
            });
        }
        let mut it = terms.into_iter();
        let first = it.next();
        first.map(|f| it.fold(f, |acc, t| pool.bin(BvOp::Add, acc, t))).unwrap_or_else(|| pool.bv(w, 0))
    });
    Some(pool.eq(l, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monomials_are_listed_once_by_degree() {
        assert_eq!(monomials(2, 2), vec![vec![0, 0], vec![1, 0], vec![0, 1], vec![2, 0], vec![1, 1], vec![0, 2]]);
        assert_eq!(monomials(3, 3).len(), 20);
    }

    #[test]
    fn the_cube_relation_is_found_from_samples() {
        // (n, x) with x = n³: one relation of degree 3 over the monomials of two variables.
        let rows: Vec<Vec<i64>> = (0..20).map(|n| vec![n, n * n * n]).collect();
        let monos = monomials(2, 3);
        let values: Vec<Vec<u64>> = rows.iter().map(|r| monos.iter().map(|m| monomial_mod_p(r, m)).collect()).collect();
        let null = null_space(&values, monos.len());
        assert_eq!(null.len(), 1);
        let ints = to_integers(&null[0]).expect("small coefficients");
        assert!(vanishes(&rows, &monos, &ints));
        let x = monos.iter().position(|m| m == &vec![0, 1]).unwrap();
        let n3 = monos.iter().position(|m| m == &vec![3, 0]).unwrap();
        assert_eq!(ints[n3], -ints[x]);
        assert_eq!(ints.iter().filter(|&&c| c != 0).count(), 2);
    }

    #[test]
    fn fractions_come_back_as_integers() {
        // 2s = k² + k: s − k²/2 − k/2 = 0 modulo P.
        let half = inverse(2);
        let v = vec![0, sub(0, half), 1, sub(0, half)];
        assert_eq!(to_integers(&v), Some(vec![0, 1, -2, 1]));
    }
}
