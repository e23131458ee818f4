//! The `nav` engine: loop navigation ([`crate::dse::nav`]), symbolic execution steered through
//! loops by constraint systems over chain counters. A path it completes to the target is
//! replayed natively; it proves unreachability only when it explored every state exactly.

use super::{Context, Engine, EngineKind, EngineResult};
use crate::dse::{nav, DseConfig};
use crate::ir::Program;
use crate::witness::Witness;
use std::sync::Arc;

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
        let replays = super::dse::Replays::default();
        let replay = |w: &Witness| replays.try_witness(cx, w);
        let limits = DseConfig { stubbed: self.stubbed.iter().cloned().collect(), ..DseConfig::new(cx.deadline) };
        let (end, stats) = nav::navigate(&self.program, &limits, &cx.cancel, &replay);
        let mut out = replays.conclude(end, stats.models_tried, "the navigation", "loop navigation explored every state exactly (merged at loop headers, pruned only by necessary constraint systems)");
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
