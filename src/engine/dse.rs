//! The `dse` engine: directed symbolic execution ([`crate::dse`]), pruned by the APC. A path
//! it completes to the target is replayed natively; it proves unreachability only when it
//! explored every path exactly.

use super::pending::Waited;
use super::{Context, Engine, EngineKind, EngineResult, Finding};
use crate::dse::{self, DseConfig, DseEnd, Guide};
use crate::ir::Program;
use crate::replay::RunOutcome;
use crate::report::WitnessReport;
use crate::witness::Witness;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Longest wait for the APC's quick check (its time limit, and a margin).
const QUICK_CHECK_WAIT: Duration = Duration::from_millis(50);

/// The longest the search waits for the APC's guide (and at most a quarter of the time left).
const GUIDE_WAIT: Duration = Duration::from_secs(5);

pub struct DseEngine {
    pub program: Arc<Program>,
    /// Pruning data from the APC, handed over by its build (none when the APC could not be
    /// built in time).
    pub guide: Arc<super::pending::Pending<Option<Guide>>>,
    /// Functions the native builds stub (see [`DseConfig::stubbed`]).
    pub stubbed: Vec<String>,
}

impl Engine for DseEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Dse
    }

    fn run(self: Box<Self>, cx: &Context) -> EngineResult {
        let replays = Replays::default();
        let replay = |w: &Witness| replays.try_witness(cx, w);
        // The guide comes with the APC; a build that takes long (a large function's many loop
        // summaries) is not waited for: the search starts without it.
        let guide = match self.guide.take_within(cx, (cx.left() / 4).min(GUIDE_WAIT)) {
            Waited::Got(g) => g,
            Waited::Cancelled => {
                cx.quick_check_helper_coming(false);
                return EngineResult::new(Finding::Unknown("cancelled while the abstract path condition was being built".into()));
            }
            Waited::NotYet => {
                tracing::debug!("dse: the APC is still being built; the search starts without its guide");
                cx.quick_check_helper_coming(false);
                None
            }
        };
        // The APC's quick check comes first (at most 40 ms), on this thread when the apc
        // engine hands it over (see `Context::quick_check`).
        let waiting = std::time::Instant::now();
        cx.wait_for_quick_check(Duration::from_millis(crate::priority::tune("QUICK_CHECK_WAIT_MS", QUICK_CHECK_WAIT.as_millis() as u64)));
        tracing::debug!(waited = ?waiting.elapsed(), "dse: the quick check is done");
        let limits = DseConfig { stubbed: self.stubbed.iter().cloned().collect(), ..DseConfig::new(cx.deadline) };
        let (end, stats) = dse::search(&self.program, guide.as_ref(), &limits, &cx.cancel, &replay);
        let mut out = replays.conclude(end, stats.models_tried, "the search", "directed symbolic execution explored every path exactly, without pruning or bounds");
        for (k, v) in [
            ("states_explored", stats.states_explored),
            ("states_pruned_by_apc", stats.states_pruned_by_apc),
            ("states_pruned_by_values", stats.states_pruned_by_values),
            ("solver_calls", stats.solver_calls),
            ("models_tried", stats.models_tried),
            ("apc_checks", stats.apc_checks),
        ] {
            out.stats.insert(k.into(), v);
        }
        out.timings.insert("dse_apc_checks".into(), stats.apc_check_seconds);
        out
    }
}

/// The native replays of a symbolic search's witnesses: the first that entered the target, and
/// the last that did not (the report's attempt when nothing did).
#[derive(Default)]
pub(super) struct Replays {
    reached: Mutex<Option<(Witness, RunOutcome)>>,
    last_miss: Mutex<Option<(Witness, RunOutcome)>>,
}

impl Replays {
    /// Replays `w`; whether the run entered the target.
    pub(super) fn try_witness(&self, cx: &Context, w: &Witness) -> bool {
        match cx.replay(w) {
            Ok(Some(run)) if run.reached.is_some() => {
                *self.reached.lock().unwrap_or_else(|e| e.into_inner()) = Some((w.clone(), run));
                true
            }
            Ok(Some(run)) => {
                *self.last_miss.lock().unwrap_or_else(|e| e.into_inner()) = Some((w.clone(), run));
                false
            }
            _ => false,
        }
    }

    /// The engine's result from how the search ended (`who` searched; `exhausted` is the
    /// proof's reason when it explored everything).
    pub(super) fn conclude(self, end: DseEnd, models_tried: u64, who: &str, exhausted: &str) -> EngineResult {
        let finding = match end {
            DseEnd::Reached(_) => match self.reached.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some((witness, run)) => {
                    let report = WitnessReport::replayed(&witness, &run, models_tried as u32, Default::default());
                    Finding::Reached { witness, run, report }
                }
                None => Finding::Unknown(format!("{who} reported a witness that no replay confirmed")),
            },
            DseEnd::Exhausted => Finding::Unreachable(exhausted.into()),
            DseEnd::GaveUp(why) => Finding::Unknown(why),
            DseEnd::NoReplayableWitness(why) => Finding::NoWitness(why),
        };
        let mut out = EngineResult::new(finding);
        out.attempt = self.last_miss.into_inner().unwrap_or_else(|e| e.into_inner()).map(|(w, run)| WitnessReport::replayed(&w, &run, models_tried as u32, Default::default()));
        out
    }
}
