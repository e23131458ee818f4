//! The `nav` engine: loop navigation ([`crate::dse::nav`]), symbolic execution steered through
//! loops by constraint systems over chain counters. A path it completes to the target is
//! replayed natively; it proves unreachability only when it explored every state exactly.

use super::{Context, Engine, EngineKind, EngineResult, Finding};
use crate::dse::{nav, DseConfig, DseEnd};
use crate::ir::Program;
use crate::replay::RunOutcome;
use crate::report::WitnessReport;
use crate::witness::Witness;
use std::sync::{Arc, Mutex};

pub struct NavEngine {
    pub program: Arc<Program>,
    /// Functions the native builds stub (see [`DseConfig::stubbed`]).
    pub stubbed: Vec<String>,
}

impl Engine for NavEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Nav
    }

    fn run(self: Box<Self>, cx: &Context) -> EngineResult {
        let reached: Mutex<Option<(Witness, RunOutcome)>> = Mutex::new(None);
        let last_miss: Mutex<Option<(Witness, RunOutcome)>> = Mutex::new(None);
        let replay = |w: &Witness| -> bool {
            match cx.replay(w) {
                Ok(Some(run)) if run.reached.is_some() => {
                    *reached.lock().unwrap_or_else(|e| e.into_inner()) = Some((w.clone(), run));
                    true
                }
                Ok(Some(run)) => {
                    *last_miss.lock().unwrap_or_else(|e| e.into_inner()) = Some((w.clone(), run));
                    false
                }
                _ => false,
            }
        };
        let limits = DseConfig { stubbed: self.stubbed.iter().cloned().collect(), ..DseConfig::new(cx.deadline) };
        let (end, stats) = nav::navigate(&self.program, &limits, &cx.cancel, &replay);
        let finding = match end {
            DseEnd::Reached(_) => match reached.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some((witness, run)) => {
                    let report = WitnessReport::replayed(&witness, &run, stats.models_tried as u32, Default::default());
                    Finding::Reached { witness, run, report }
                }
                None => Finding::Unknown("the navigation reported a witness that no replay confirmed".into()),
            },
            DseEnd::Exhausted => Finding::Unreachable("loop navigation explored every state exactly (merged at loop headers, pruned only by necessary constraint systems)".into()),
            DseEnd::GaveUp(why) => Finding::Unknown(why),
            DseEnd::NoReplayableWitness(why) => Finding::NoWitness(why),
        };
        let mut out = EngineResult::new(finding);
        out.attempt = last_miss.into_inner().unwrap_or_else(|e| e.into_inner()).map(|(w, run)| WitnessReport::replayed(&w, &run, stats.models_tried as u32, Default::default()));
        for (k, v) in [
            ("loops", stats.loops),
            ("chains", stats.chains),
            ("states_explored", stats.states_explored),
            ("states_merged", stats.states_merged),
            ("states_pruned_by_systems", stats.states_pruned_by_systems),
            ("oracle_calls", stats.oracle_calls),
            ("solver_calls", stats.solver_calls),
            ("models_tried", stats.models_tried),
        ] {
            out.stats.insert(k.into(), v);
        }
        out
    }
}
