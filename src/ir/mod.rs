//! The owned, LLVM-independent program model.
//!
//! Everything after [`crate::load`] works on these types, never on inkwell values: they have no
//! lifetimes, can be built by hand in unit tests, and say only what the analysis needs. Aggregates
//! are gone: `getelementptr` is lowered to byte arithmetic ([`InstKind::PtrOffset`]) using the
//! module's data layout, so memory is a flat sequence of bytes per object.

pub use crate::ops::{BinOp, IntPredicate};
use std::fmt;

/// An SSA value of the analysed function: a parameter or an instruction result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

/// A basic block of the analysed function (index into [`Function::blocks`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

/// A global variable of the module (index into [`Program::globals`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId(pub u32);

impl BlockId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The types the analysis distinguishes. Integers carry their LLVM width; `i1` is `Int(1)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Int(u32),
    Ptr,
    Void,
    /// Anything else (floating point, vectors, aggregates held in registers): opaque to the analysis.
    Other(String),
}

impl Ty {
    pub fn int_width(&self) -> Option<u32> {
        match self {
            Ty::Int(w) => Some(*w),
            _ => None,
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Int(w) => write!(f, "i{w}"),
            Ty::Ptr => write!(f, "ptr"),
            Ty::Void => write!(f, "void"),
            Ty::Other(s) => write!(f, "{s}"),
        }
    }
}

/// An instruction operand.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    Value(ValueId),
    /// An integer constant of the given width (at most 64 bits), zero-extended into `value`.
    Int { width: u32, value: u64 },
    /// The address of a global plus a constant byte offset.
    Global { id: GlobalId, offset: i64 },
    /// The address of a function (for indirect calls or function pointers in data).
    Function(String),
    Null,
    /// `undef` or `poison`: any value of the type.
    Undef(Ty),
    /// A constant the loader cannot represent (float constants, exotic constant expressions).
    Unknown(Ty),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CastOp {
    ZExt,
    SExt,
    Trunc,
    PtrToInt,
    IntToPtr,
    /// `bitcast` and `addrspacecast` between types the analysis treats alike.
    BitCast,
}

/// The called function of a call instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Callee {
    /// A direct call by name. After normalisation the body is not in the analysed function:
    /// it is external, recursive, or the `--call` target function.
    Direct(String),
    /// A call through a function pointer.
    Indirect(Operand),
    /// A call through a function pointer that was compared with every function of the program
    /// of the call's type and matched none (see `load::devirt`): natively it runs only for a
    /// pointer from outside the program's functions, never for one a caller passed.
    Unmatched(Operand),
    /// Inline assembly: never interpreted.
    InlineAsm,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstKind {
    Binary { op: BinOp, lhs: Operand, rhs: Operand },
    ICmp { pred: IntPredicate, lhs: Operand, rhs: Operand },
    Select { cond: Operand, then_val: Operand, else_val: Operand },
    Cast { op: CastOp, val: Operand },
    /// Incoming value per predecessor block.
    Phi { incoming: Vec<(BlockId, Operand)> },
    /// A fresh stack object of `elem_size * count` bytes.
    Alloca { elem_size: u64, count: Operand },
    Load { ptr: Operand },
    Store { ptr: Operand, val: Operand, width: u32 },
    /// `getelementptr`, lowered: `base + const_offset + Σ index·scale` bytes.
    PtrOffset { base: Operand, const_offset: i64, terms: Vec<(Operand, i64)> },
    Call { callee: Callee, args: Vec<Operand> },
    /// An instruction the IR cannot represent (floating point, atomics, vector ops, ...).
    /// Kept, never dropped, so later stages make its result unknown (⋆).
    Unknown { opcode: String },
}

impl InstKind {
    /// Every operand the instruction reads.
    pub fn operands(&self) -> Vec<&Operand> {
        match self {
            InstKind::Binary { lhs, rhs, .. } | InstKind::ICmp { lhs, rhs, .. } => vec![lhs, rhs],
            InstKind::Select { cond, then_val, else_val } => vec![cond, then_val, else_val],
            InstKind::Cast { val, .. } => vec![val],
            InstKind::Phi { incoming } => incoming.iter().map(|(_, o)| o).collect(),
            InstKind::Alloca { count, .. } => vec![count],
            InstKind::Load { ptr } => vec![ptr],
            InstKind::Store { ptr, val, .. } => vec![ptr, val],
            InstKind::PtrOffset { base, terms, .. } => std::iter::once(base).chain(terms.iter().map(|(o, _)| o)).collect(),
            InstKind::Call { callee, args } => {
                let mut v: Vec<&Operand> = args.iter().collect();
                if let Callee::Indirect(o) | Callee::Unmatched(o) = callee {
                    v.push(o);
                }
                v
            }
            InstKind::Unknown { .. } => vec![],
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inst {
    /// The SSA value this instruction defines, if it produces one.
    pub result: Option<ValueId>,
    pub ty: Ty,
    pub kind: InstKind,
    /// Source line from debug info (`-g`).
    pub line: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Terminator {
    Jump(BlockId),
    Branch { cond: Operand, then_bb: BlockId, else_bb: BlockId },
    Switch { value: Operand, default: BlockId, cases: Vec<(u64, BlockId)> },
    Return(Option<Operand>),
    Unreachable,
    /// `indirectbr`, `invoke`, `callbr`, ...: successors listed, condition unknown.
    Unknown { opcode: String, succs: Vec<BlockId> },
}

impl Terminator {
    /// Every operand the terminator reads.
    pub fn operands(&self) -> Vec<&Operand> {
        match self {
            Terminator::Branch { cond, .. } => vec![cond],
            Terminator::Switch { value, .. } => vec![value],
            Terminator::Return(Some(v)) => vec![v],
            _ => vec![],
        }
    }

    /// Successor blocks in order, possibly with repetitions (a switch may jump to one block twice).
    pub fn successors(&self) -> Vec<BlockId> {
        match self {
            Terminator::Jump(b) => vec![*b],
            Terminator::Branch { then_bb, else_bb, .. } => vec![*then_bb, *else_bb],
            Terminator::Switch { default, cases, .. } => {
                let mut v = vec![*default];
                v.extend(cases.iter().map(|(_, b)| *b));
                v
            }
            Terminator::Return(_) | Terminator::Unreachable => vec![],
            Terminator::Unknown { succs, .. } => succs.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub id: BlockId,
    /// The IR label (`if.then`, `for.cond`, ...).
    pub label: String,
    pub insts: Vec<Inst>,
    pub term: Terminator,
    /// `Some(k)` when this block is (a copy of) the k-th requested target: entering it is reaching it.
    pub target: Option<u32>,
}

/// How the ABI extends a narrow integer parameter (`signext` / `zeroext` in LLVM).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ParamExt {
    #[default]
    None,
    Sign,
    Zero,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub value: ValueId,
    pub name: String,
    pub ty: Ty,
    pub ext: ParamExt,
    /// The parameter's C integer type, from debug information (`load::ctypes`): how its
    /// values are shown; for a pointer, the integer type it points to (how its buffer is
    /// shown). `None` without `-g` or for other types.
    pub c_type: Option<CType>,
    /// For a pointer parameter, the size in bytes of what it points to in C (1 for `char *`,
    /// 4 for `int *`), from debug information: a buffer's element size when no load of it says.
    pub pointee_bytes: Option<u64>,
    /// For a pointer parameter, the size of its buffer in bytes when the user gave it
    /// (`--arg-size`): witnesses get exactly that many bytes.
    pub buffer_bytes: Option<u64>,
    /// For a pointer parameter, how many bytes before the address the function reads or
    /// writes (a length header at `s[-1]`, `((struct hdr *)s - 1)->len`): witnesses put that
    /// many bytes in front of the buffer ([`bytes_before`]).
    pub front_bytes: u64,
}

/// Whether an integer parameter's name says it is the length of a buffer (`len`, `length`,
/// `size`, `n`, `count`, `buf_len`, `nbytes`, ...).
fn is_length_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let n = n.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    ["len", "length", "size", "sz", "n", "count", "cnt", "num", "nbytes", "bytes", "cap", "capacity", "nmemb", "avail"].contains(&n)
        || ["len", "length", "size", "count", "_n", "bytes"].iter().any(|s| n.ends_with(s))
}

/// `(buffer parameter, length parameter)` index pairs among `params` (name, type): an integer
/// parameter named like a length (see `is_length_name`) tied to the nearest pointer parameter
/// before it (`char *s, size_t len`; `const uint8_t *buf, int n`), else after it; one length
/// per buffer. Witnesses size buffers by them, and `--arg-size` bounds them.
pub fn length_ties(params: &[(&str, &Ty)]) -> Vec<(usize, usize)> {
    let mut out = vec![];
    for (k, (name, ty)) in params.iter().enumerate() {
        if !matches!(ty, Ty::Int(w) if *w >= 8) || !is_length_name(name) {
            continue;
        }
        let before = (0..k).rev().find(|&j| matches!(params[j].1, Ty::Ptr));
        let after = (k + 1..params.len()).find(|&j| matches!(params[j].1, Ty::Ptr));
        if let Some(b) = before.or(after) {
            out.push((b, k));
        }
    }
    // One length per buffer: the nearest (`char *s, size_t len, int n` ties `len`, not `n`).
    let mut kept: Vec<(usize, usize)> = vec![];
    for (b, l) in out {
        match kept.iter_mut().find(|(kb, _)| *kb == b) {
            Some(t) if b.abs_diff(l) < b.abs_diff(t.1) => t.1 = l,
            Some(_) => {}
            None => kept.push((b, l)),
        }
    }
    kept
}

/// Most bytes in front of a parameter's buffer a witness provides.
pub const MAX_FRONT_BYTES: u64 = 4096;

/// Lowest and highest (exclusive) address of an object that is not on the heap: x86-64 Linux
/// maps nothing below the first page, and user space ends at 2^47.
pub const LOWEST_ADDRESS: u64 = 4096;
pub const ADDRESS_LIMIT: u64 = 1 << 47;

/// How many bytes before `param` (a pointer parameter) the function accesses: the largest
/// `-c` over loads, stores and call arguments at `param + c` with a constant `c < 0`, reached
/// through `getelementptr`s with constant offsets and casts; rounded up to 8, at most
/// [`MAX_FRONT_BYTES`]. Variable offsets do not count (the solver cannot be given an unbounded
/// front; such reads stay in the APC as before, they just find no input bytes natively).
pub fn bytes_before(f: &Function, param: ValueId) -> u64 {
    let mut offset: std::collections::HashMap<ValueId, i64> = std::collections::HashMap::from([(param, 0)]);
    let of = |o: &Operand, offset: &std::collections::HashMap<ValueId, i64>| match o {
        Operand::Value(v) => offset.get(v).copied(),
        _ => None,
    };
    let mut front = 0i64;
    // Blocks in layout order define values before their uses except through phis, which do
    // not carry offsets here: one pass suffices.
    for b in &f.blocks {
        for inst in &b.insts {
            match &inst.kind {
                InstKind::PtrOffset { base, const_offset, terms } if terms.is_empty() => {
                    if let (Some(c), Some(r)) = (of(base, &offset), inst.result) {
                        offset.insert(r, c.saturating_add(*const_offset));
                    }
                }
                InstKind::Cast { op: CastOp::BitCast, val } => {
                    if let (Some(c), Some(r)) = (of(val, &offset), inst.result) {
                        offset.insert(r, c);
                    }
                }
                InstKind::Load { ptr } | InstKind::Store { ptr, .. } => {
                    if let Some(c) = of(ptr, &offset) {
                        front = front.max(c.saturating_neg());
                    }
                }
                InstKind::Call { args, .. } => {
                    for a in args {
                        if let Some(c) = of(a, &offset) {
                            front = front.max(c.saturating_neg());
                        }
                    }
                }
                _ => {}
            }
        }
    }
    (front.max(0) as u64).next_multiple_of(8).min(MAX_FRONT_BYTES)
}

/// A C integer type as the source names it (`size_t`, `unsigned long`, `enum mode`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CType {
    pub name: String,
    pub signed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub params: Vec<Param>,
    pub ret: Ty,
    /// `blocks[0]` is the entry block.
    pub blocks: Vec<Block>,
    /// The type of every SSA value, indexed by `ValueId`.
    pub value_types: Vec<Ty>,
    /// Human-readable names of SSA values (from IR names or `instnamer`), indexed by `ValueId`.
    pub value_names: Vec<String>,
    /// Per block: whether it lies on a cycle of the CFG. An allocation there has many dynamic
    /// instances, which one symbolic object cannot stand for (see [`Function::compute_cycles`]).
    pub in_cycle: Vec<bool>,
}

impl Function {
    pub fn entry(&self) -> BlockId {
        BlockId(0)
    }
    pub fn block(&self, id: BlockId) -> &Block {
        &self.blocks[id.index()]
    }
    pub fn label(&self, id: BlockId) -> &str {
        &self.blocks[id.index()].label
    }
    pub fn value_name(&self, v: ValueId) -> &str {
        &self.value_names[v.0 as usize]
    }
    pub fn value_type(&self, v: ValueId) -> &Ty {
        &self.value_types[v.0 as usize]
    }
    /// Fills [`Function::in_cycle`]: a block is on a cycle when its strongly connected component
    /// has several blocks or it jumps to itself.
    pub fn compute_cycles(&mut self) {
        let mut g = petgraph::graph::DiGraph::<(), ()>::new();
        let nodes: Vec<_> = self.blocks.iter().map(|_| g.add_node(())).collect();
        let mut in_cycle = vec![false; self.blocks.len()];
        for b in &self.blocks {
            for s in b.term.successors() {
                g.add_edge(nodes[b.id.index()], nodes[s.index()], ());
                if s == b.id {
                    in_cycle[s.index()] = true;
                }
            }
        }
        for scc in petgraph::algo::tarjan_scc(&g) {
            if scc.len() > 1 {
                for n in scc {
                    in_cycle[n.index()] = true;
                }
            }
        }
        self.in_cycle = in_cycle;
    }

    /// Whether `b` lies on a cycle (false before [`Function::compute_cycles`] ran).
    pub fn is_in_cycle(&self, b: BlockId) -> bool {
        self.in_cycle.get(b.index()).copied().unwrap_or(false)
    }

    /// Blocks marked as targets.
    pub fn target_blocks(&self) -> Vec<BlockId> {
        self.blocks.iter().filter(|b| b.target.is_some()).map(|b| b.id).collect()
    }
}

/// A global variable: its size and, when known, its initial bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Global {
    pub id: GlobalId,
    pub name: String,
    pub size: u64,
    /// Initial content byte by byte; `None` bytes are unknown (e.g. addresses of other objects),
    /// and `init == None` means the whole content is unknown (external or too large).
    pub init: Option<Vec<Option<u8>>>,
    pub is_constant: bool,
    /// A constant whose address is not significant (`unnamed_addr`, as clang marks string
    /// literals): the linker may fold it into an equal constant or the tail of a longer string
    /// (`"llo" == "hello" + 2` natively), so it may share addresses with another such global.
    pub may_share_address: bool,
    /// Offsets of the initialiser's function addresses (a table of callbacks), with the
    /// functions' names: their bytes are `None` in `init`.
    pub functions: Vec<(u64, String)>,
}

/// What the analysis works on: the normalised `--function` with its targets marked, and the
/// globals it refers to.
#[derive(Clone, Debug)]
pub struct Program {
    pub function: Function,
    pub globals: Vec<Global>,
    /// Human descriptions of the requested targets, indexed by target number.
    pub target_names: Vec<String>,
    /// Functions whose calls are left to mixed concrete-symbolic solving (`--pure`).
    pub pure_functions: Vec<PureSignature>,
}

/// A function the user declared pure (`--pure`): the same arguments always give the same
/// result, and it writes no memory of the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PureSignature {
    pub name: String,
    pub params: Vec<PureParam>,
    /// Width of the integer result.
    pub ret: u32,
    /// Whether the bitcode has its body (else it comes from the native link, e.g. libc).
    pub defined: bool,
}

/// An integer parameter of a [`PureSignature`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PureParam {
    pub width: u32,
    /// Sign-extended by the caller (`signext`: `signed char`, `short`).
    pub signed: bool,
}

impl Program {
    pub fn global(&self, id: GlobalId) -> &Global {
        &self.globals[id.0 as usize]
    }

    /// Whether block `b` is a store's clobber site (`load::bounds`): a pseudo-target's marker
    /// (an id from `target_names.len()` on) and nothing after it.
    pub fn is_clobber_site(&self, b: BlockId) -> bool {
        let block = self.function.block(b);
        block.target.is_some_and(|t| t as usize >= self.target_names.len()) && matches!(block.term, Terminator::Unreachable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_successors_keep_default_first() {
        let t = Terminator::Switch {
            value: Operand::Int { width: 32, value: 0 },
            default: BlockId(3),
            cases: vec![(1, BlockId(1)), (2, BlockId(2))],
        };
        assert_eq!(t.successors(), vec![BlockId(3), BlockId(1), BlockId(2)]);
    }
}
