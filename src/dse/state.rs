//! One DSE state: where it is, its registers, its byte-exact memory, its path condition and how
//! far into the nondet stream it has read. Forking clones a state cheaply: memory objects and
//! the path condition are shared (`Rc`) until written.

use super::value::IntV;
use crate::ir::{BlockId, ValueId};
use std::rc::Rc;
use z3::ast::Bool;

/// A register value.
#[derive(Clone, Debug)]
pub enum Val {
    Int(IntV),
    /// A pointer into object `obj` at a 64-bit byte offset.
    Ptr { obj: u32, off: IntV },
    Null,
}

/// One byte of memory.
#[derive(Clone, Debug)]
pub enum Byte {
    Int(IntV),
    /// Byte `k` (little endian) of a pointer stored in memory: loading all eight in order gives
    /// the pointer back exactly.
    Ptr { obj: u32, off: IntV, k: u8 },
    /// Contents the engine does not know exactly (a global's relocated bytes): reading gives up.
    Unknown,
}

/// What kind of object, for witnesses and for the exactness of the search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjKind {
    /// The buffer behind pointer parameter number `param`: its bytes are inputs.
    ParamBuffer { param: usize },
    /// An input buffer created when the program first loaded a pointer from input bytes at
    /// `offset` of object `parent` (lazy initialisation, as KLEE and Java PathFinder do): the
    /// witness lists it among the parent's pointees.
    Pointee { parent: u32, offset: u64 },
    Global,
    Stack,
    Heap,
}

/// A memory object: a fixed number of bytes.
#[derive(Clone, Debug)]
pub struct Obj {
    pub name: String,
    pub kind: ObjKind,
    pub bytes: Vec<Byte>,
    /// False once the object is freed (or its stack frame is gone): accesses give up.
    pub alive: bool,
}

/// The path condition: a persistent list, shared between a state and its forks. Each node has a
/// Boolean guard literal; the solver holds `guard → cond` once, and a state's condition is the
/// list of its guards passed as assumptions (see [`super::solver::PathSolver`]).
#[derive(Debug)]
pub struct PcNode {
    pub parent: Option<Rc<PcNode>>,
    pub guard: Bool,
    /// The condition the guard stands for (models of earlier queries are tried on it; see
    /// [`super::solver::PathSolver::check_within`]).
    pub cond: Bool,
    pub depth: usize,
}

#[derive(Clone, Debug, Default)]
pub struct PathCondition {
    pub head: Option<Rc<PcNode>>,
}

impl PathCondition {
    pub fn guards(&self) -> Vec<Bool> {
        let mut out = vec![];
        let mut n = self.head.clone();
        while let Some(node) = n {
            out.push(node.guard.clone());
            n = node.parent.clone();
        }
        out
    }
    /// The conditions, newest first.
    pub fn conds(&self) -> impl Iterator<Item = &Bool> {
        std::iter::successors(self.head.as_deref(), |n| n.parent.as_deref()).map(|n| &n.cond)
    }
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.head.as_ref().map_or(0, |n| n.depth)
    }
}

/// Iteration counts of one top-level loop on this path (for the APC's counter constraints).
#[derive(Clone, Debug)]
pub struct LoopProgress {
    /// Completed iterations per iteration backbone of the loop.
    pub counts: Vec<u64>,
    /// Blocks visited in the current iteration.
    pub visited: Vec<BlockId>,
    pub inside: bool,
    pub exited: bool,
    /// An iteration matched no single backbone, or the loop was entered twice: no constraint.
    pub unreliable: bool,
}

/// A symbolic execution state.
#[derive(Clone, Debug)]
pub struct DseState {
    pub block: BlockId,
    pub prev: Option<BlockId>,
    pub regs: Vec<Option<Val>>,
    pub objects: Vec<Rc<Obj>>,
    pub pc: PathCondition,
    /// Number of nondet calls made so far: the next call reads stream position `nondet`.
    pub nondet: u64,
    /// Blocks executed so far.
    pub steps: u64,
    /// Per guided loop (index into the guide's loops).
    pub loops: Vec<LoopProgress>,
    /// Symbolic branches this path took on their preferred side (the equal side of `A[j] ==
    /// H[k]`, the side toward `++k` under a later `k > 15`; see `prefer`): the search prefers
    /// paths that matched more (see `Frontier`).
    pub matched: u32,
    /// Whether the path condition changed since its satisfiability was last checked.
    pub unchecked: bool,
}

impl DseState {
    pub fn reg(&self, v: ValueId) -> Option<&Val> {
        self.regs.get(v.0 as usize).and_then(|x| x.as_ref())
    }
    pub fn set_reg(&mut self, v: ValueId, val: Val) {
        let i = v.0 as usize;
        if i >= self.regs.len() {
            self.regs.resize(i + 1, None);
        }
        self.regs[i] = Some(val);
    }
    pub fn obj_mut(&mut self, id: u32) -> &mut Obj {
        Rc::make_mut(&mut self.objects[id as usize])
    }
}
