//! Loop summaries (processLoop, section 3 of the APC paper): for a loop C entered at v, the
//! iterated symbolic state θ^κ (values after κ_i iterations along each iteration backbone π_i)
//! and the looping condition φ^κ.
//!
//! A summary is computed once per loop (and binding of pointer variables to objects) over
//! symbols that stand for the values at the loop's entry, and applied at each entry node by
//! substitution: apc ∧= θ⟨φ^κ⟩, θ ← θ⟨θ^κ⟩.

mod apply;
mod budget;
mod counts;
mod fill;
pub mod invariant;
mod monotone;
mod poly;
mod rules;
mod summarise;
mod writes;

pub use budget::CheckBudget;

use crate::cfg::LoopId;
use crate::expr::{ExprId, Printer};
use crate::ir::ValueId;
use crate::symex::{ObjectId, SymVal};

/// A variable of a loop: what the iterated state gives a value to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Var {
    /// An integer SSA value: a phi node of the entry (loop-carried) or a value defined outside
    /// the loop (invariant).
    Value(ValueId),
    /// The offset of a pointer SSA value whose object is fixed by the context.
    PtrOffset(ValueId),
    /// The address of a pointer SSA value whose object is not known at the loop's entry (null,
    /// or an [`SymVal::Addr`]): offsets from the entry value stay exact.
    PtrAddr(ValueId),
    /// The contents of a memory object.
    Mem(ObjectId),
    /// The position in the nondet input stream.
    Nondet,
}

/// A loop variable with the symbol that stands for its value at the loop's entry.
#[derive(Clone, Debug)]
pub struct LoopVar {
    pub var: Var,
    pub symbol: ExprId,
    pub name: String,
    /// Carried from iteration to iteration (phi, memory, stream), as opposed to invariant.
    pub carried: bool,
    /// For `PtrOffset`: the object pointed into.
    pub object: Option<ObjectId>,
}

/// What a pointer variable of a loop points to at the loop's entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PtrBinding {
    /// Into this object: the variable is its offset ([`Var::PtrOffset`]).
    Object(ObjectId),
    /// Null or an address of an unknown object: the variable is its address ([`Var::PtrAddr`]).
    Address,
    /// Nothing the analysis follows: ⋆ in and after the loop.
    Lost,
}

impl PtrBinding {
    fn of(v: Option<&SymVal>) -> PtrBinding {
        match v {
            Some(SymVal::Ptr { obj, .. }) => PtrBinding::Object(*obj),
            Some(SymVal::Addr(_) | SymVal::Null) => PtrBinding::Address,
            _ => PtrBinding::Lost,
        }
    }
}

/// Identifies a summary: the loop, what its pointer variables point into, and how many objects
/// exist and have escaped (an unknown call in the loop forgets the escaped ones).
pub type SummaryKey = (LoopId, Vec<(ValueId, PtrBinding)>, usize, usize);

/// Iterations of an array-writing loop whose writes the summary keeps exactly (see
/// `last_writes`): enough for fill loops over buffers of a few dozen elements, small enough that
/// the chain of stores stays cheap for Z3.
pub const EXACT_WRITES: u64 = 64;

/// The summary (θ^κ, φ^κ) of a loop.
#[derive(Clone, Debug)]
pub struct LoopSummary {
    pub loop_id: LoopId,
    pub vars: Vec<LoopVar>,
    /// θ^κ after the loop, per variable (index as `vars`); `None` is ⋆.
    pub after: Vec<Option<ExprId>>,
    /// φ^κ.
    pub looping: ExprId,
    /// κ_1 … κ_k, one per feasible iteration backbone.
    pub counters: Vec<ExprId>,
    /// The counter of each iteration backbone of the loop, `None` for infeasible ones.
    pub backbone_counters: Vec<Option<ExprId>>,
    /// The total number of iterations Σκ as a function of the loop-entry symbols, proved by the
    /// recurrence check of `summarise::closed_form`.
    pub closed_form: Option<ExprId>,
    /// With several iteration backbones: variables moved uniformly (by the same d on each), and
    /// their value after the loop, v̲ + d·Σκ, over the loop-entry symbols and Σκ's closed form.
    pub uniform_after: Vec<(usize, ExprId)>,
    /// Fresh symbols standing for memory written by the loop (existential, like counters).
    pub aux: Vec<ExprId>,
    /// Preferences for models (never facts): fills within their objects (`note_fill`).
    pub hints: Vec<ExprId>,
    /// Objects allocated inside the loop: unknown after it.
    pub created_objects: Vec<ObjectId>,
    /// The fill λs in `after` whose region is known (`ApcBuilder::fill_regions`).
    pub fills: Vec<ExprId>,
    /// Inductive invariants of the variables the rules leave ⋆ ([`invariant`]), for the report.
    pub invariants: invariant::Invariants,
    /// The same as facts after the loop, over the loop-entry symbols, the counters and the
    /// symbols in `aux` that name the values they constrain (applied like `after`).
    pub invariant_facts: Vec<ExprId>,
}

impl LoopSummary {
    /// θ^κ and φ^κ in the paper's notation, for the report: carried variables only.
    pub fn describe(&self, pool: &crate::expr::ExprPool) -> (Vec<(String, String)>, String) {
        let pr = Printer::new(pool);
        let theta = self
            .vars
            .iter()
            .zip(&self.after)
            .filter(|(v, _)| v.carried)
            .map(|(v, e)| {
                // A value only invariants constrain is still ⋆ as far as θ^κ goes.
                let e = e.filter(|e| matches!(v.var, Var::Mem(_)) || !self.aux.contains(e));
                (v.name.clone(), e.map_or("⋆".to_string(), |e| pr.print(e)))
            })
            .collect();
        (theta, pr.print(self.looping))
    }
}

/// What the iterations of a loop being summarised do: its variables, θ^κ, each iteration
/// backbone's θ and tests (with their fresh symbols), and the counters.
#[derive(Clone, Copy)]
struct Iterations<'a> {
    vars: &'a [LoopVar],
    iterated: &'a [Option<ExprId>],
    thetas: &'a [Vec<Option<ExprId>>],
    tests: &'a [(Vec<ExprId>, Vec<ExprId>)],
    counters: &'a [ExprId],
}

