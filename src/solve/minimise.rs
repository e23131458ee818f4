//! Smaller models: the search for a model of least [`super::Objective`] value by incremental
//! bounded checks.

use super::{ModelView, Objective};
use std::time::{Duration, Instant};
use z3::ast::{Bool, BV};

/// The search of [`Objective`]: `view` is the solver's first model and `first` what `extract`
/// made of it. Every check is incremental (push, bound, check, pop) and has the budget left as its
/// timeout; a timeout, an interrupt or an unknown ends the search with the best model so far.
/// Also says whether that model is known to be the least (or small enough). `searching` gets
/// `first` when the search starts.
pub(super) fn minimise<T>(
    solver: &z3::Solver,
    view: ModelView,
    first: T,
    objective: &Objective,
    stopped: &dyn Fn() -> bool,
    searching: &dyn Fn(&T),
    extract: &mut dyn FnMut(&mut ModelView) -> T,
) -> (T, bool) {
    let ModelView { model, mut tr } = view;
    let terms: Vec<BV> = objective.terms.iter().filter_map(|&t| tr.translate(t).as_bv()).collect();
    let Some(bounded) = BoundedSum::new(&terms) else { return (first, true) };
    let hi = bounded.value(&model);
    if hi <= objective.above {
        return (first, true);
    }
    searching(&first);
    let mut best = first;
    let mut tr = Some(tr);
    let (_, proved) = least_value(hi, objective.budget, stopped, |s, left| {
        let mut params = z3::Params::new();
        params.set_u32("timeout", left.as_millis().clamp(1, u32::MAX as u128) as u32);
        solver.set_params(&params);
        solver.push();
        for b in bounded.at_most(s) {
            solver.assert(&b);
        }
        let probe = match solver.check() {
            z3::SatResult::Sat if !stopped() => match (solver.get_model(), tr.take()) {
                (Some(model), Some(t)) => {
                    let value = bounded.value(&model).min(s);
                    let mut view = ModelView { model, tr: t };
                    best = extract(&mut view);
                    tr = Some(view.tr);
                    Probe::Found(value)
                }
                _ => Probe::Unknown,
            },
            z3::SatResult::Unsat => Probe::Empty,
            _ => Probe::Unknown,
        };
        solver.pop(1);
        probe
    });
    (best, proved)
}

/// A sum of unsigned bit-vector terms taken 8 bits wider than the widest term, so that it
/// cannot wrap around (for [`Objective`] and the DSE's least tied lengths).
pub struct BoundedSum {
    wide: Vec<BV>,
    sum: BV,
}

impl BoundedSum {
    /// `None` for no terms, or more than 256.
    pub fn new(terms: &[BV]) -> Option<BoundedSum> {
        if terms.is_empty() || terms.len() > 1 << 8 {
            return None;
        }
        let width = terms.iter().map(|t| t.get_size()).max().unwrap_or(1) + 8;
        let wide: Vec<BV> = terms.iter().map(|t| t.zero_ext(width - t.get_size())).collect();
        let sum = wide.iter().skip(1).fold(wide[0].clone(), |a, b| a.bvadd(b));
        Some(BoundedSum { wide, sum })
    }

    /// The sum in `model`; a sum past 64 bits counts as the largest value.
    pub fn value(&self, model: &z3::Model) -> u64 {
        model.eval(&self.sum, true).and_then(|v| v.as_u64()).unwrap_or(u64::MAX)
    }

    /// Every term and the sum at most `s`.
    pub fn at_most(&self, s: u64) -> Vec<Bool> {
        let bound = BV::from_u64(s, self.sum.get_size());
        self.wide.iter().chain(std::iter::once(&self.sum)).map(|t| t.bvule(&bound)).collect()
    }
}

/// What one probe of [`least_value`] found for "a model with value at most s".
pub enum Probe {
    /// A model, with its value (at most s).
    Found(u64),
    /// No model.
    Empty,
    /// No answer (timeout, interrupt): the search ends.
    Unknown,
}

/// The search for the least value with a model, given one with value `hi`: probes at most
/// s = 0, 1, 3, 7, ... up to the first model, then bisects between the largest value known to
/// have none and the smallest found, for at most `budget` (each probe gets what is left).
/// Returns the smallest value found, and whether it is proved the least (every value below it
/// had no model).
pub fn least_value(mut hi: u64, budget: Duration, stopped: &dyn Fn() -> bool, mut probe: impl FnMut(u64, Duration) -> Probe) -> (u64, bool) {
    let started = Instant::now();
    let end = started + budget;
    // Every value below `lo` is known to have no model; `hi` has one.
    let (mut lo, mut next, mut galloping) = (0u64, 0u64, true);
    let mut checks = 0u32;
    while lo < hi && !stopped() {
        let left = end.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(2) {
            break;
        }
        let s = if galloping { next.min(hi - 1) } else { lo + (hi - lo) / 2 };
        checks += 1;
        match probe(s, left) {
            Probe::Found(v) => {
                hi = v.min(s);
                galloping = false;
            }
            Probe::Empty => {
                lo = s + 1;
                if galloping {
                    next = next.saturating_mul(2).saturating_add(1);
                }
            }
            Probe::Unknown => break,
        }
    }
    tracing::debug!(checks, smallest = hi, proved_least = lo, seconds = started.elapsed().as_secs_f64(), "objective minimised");
    (hi, lo >= hi)
}
