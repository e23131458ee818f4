//! Which blocks a state can still reach, given the values it already has: sparse conditional
//! constant propagation (Wegman–Zadeck) started from the state instead of the function entry.
//!
//! A state that left a string-search loop with `h = 0` can never pass `if (h == 1 && ...)`, but
//! the static distance to the target says it is as close as any other. Propagating the state's
//! constants forward, with branches on constants followed one way only, gives the blocks any
//! continuation of the state can execute (an over-approximation: loads, calls and symbolic
//! values are "any value"). No target among them: no continuation reaches it, and the state is
//! dropped without making the search inexact. Otherwise the shortest path to a target through
//! those blocks is a better distance than the static one.

use super::state::{Byte, DseState, Val};
use super::value::{IntV, MAX_WIDTH};
use crate::ir::{BlockId, CastOp, Function, InstKind, Operand, Terminator, ValueId};
use std::collections::VecDeque;

/// Functions larger than this are not analysed per state (the static distance is used).
pub const MAX_BLOCKS: usize = 4_000;

/// A value in the propagation: not (yet) defined on any path, one integer constant, a pointer
/// at a constant offset of a known object, or anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lat {
    Bot,
    C(u32, u64),
    P(u32, u64),
    Top,
}

impl Lat {
    fn join(self, o: Lat) -> Lat {
        match (self, o) {
            (Lat::Bot, x) | (x, Lat::Bot) => x,
            (a, b) if a == b => a,
            _ => Lat::Top,
        }
    }
}

struct Propagation<'a> {
    f: &'a Function,
    st: &'a DseState,
    lat: Vec<Lat>,
    /// Objects some executable store or call may write (their loads are then any value), and
    /// whether a write through an unknown pointer may hit any object.
    written: Vec<bool>,
    written_any: bool,
    /// Executable edges, per block: the predecessors it may be entered from.
    entered_from: Vec<Vec<Option<BlockId>>>,
    executable: Vec<bool>,
    work: VecDeque<BlockId>,
    queued: Vec<bool>,
}

impl Propagation<'_> {
    fn value(&self, op: &Operand) -> Lat {
        match op {
            Operand::Value(v) => self.lat.get(v.0 as usize).copied().unwrap_or(Lat::Top),
            Operand::Int { width, value } if *width <= MAX_WIDTH => Lat::C(*width, *value),
            _ => Lat::Top,
        }
    }

    fn set(&mut self, v: ValueId, x: Lat) -> bool {
        let i = v.0 as usize;
        let new = self.lat[i].join(x);
        let changed = new != self.lat[i];
        self.lat[i] = new;
        changed
    }

    fn enter(&mut self, from: Option<BlockId>, to: BlockId) {
        let i = to.index();
        if !self.entered_from[i].contains(&from) {
            self.entered_from[i].push(from);
            self.executable[i] = true;
            self.queue(to);
        }
    }

    fn queue(&mut self, b: BlockId) {
        if !self.queued[b.index()] {
            self.queued[b.index()] = true;
            self.work.push_back(b);
        }
    }

    /// Evaluates one instruction over the lattice.
    fn eval(&self, kind: &InstKind, ty: &crate::ir::Ty) -> Lat {
        let c = |l: Lat| match l {
            Lat::C(w, v) => Some(IntV::c(w, v)),
            _ => None,
        };
        let of = |i: IntV| i.as_const().map_or(Lat::Top, |v| Lat::C(i.width(), v));
        let ops = kind.operands();
        let vals: Vec<Lat> = ops.iter().map(|o| self.value(o)).collect();
        if vals.contains(&Lat::Bot) && !matches!(kind, InstKind::Select { .. }) {
            return Lat::Bot;
        }
        match kind {
            InstKind::Binary { op, .. } => match (c(vals[0]), c(vals[1])) {
                (Some(a), Some(b)) => IntV::binary(*op, &a, &b).map_or(Lat::Top, |o| of(o.value)),
                _ => Lat::Top,
            },
            InstKind::ICmp { pred, .. } => match (c(vals[0]), c(vals[1])) {
                (Some(a), Some(b)) => of(IntV::cmp(*pred, &a, &b)),
                _ => Lat::Top,
            },
            InstKind::Select { .. } => match vals[0] {
                Lat::Bot => Lat::Bot,
                Lat::C(_, x) => {
                    if x != 0 {
                        vals[1]
                    } else {
                        vals[2]
                    }
                }
                Lat::Top | Lat::P(..) => vals[1].join(vals[2]),
            },
            InstKind::Cast { op: op @ (CastOp::ZExt | CastOp::SExt | CastOp::Trunc), .. } => {
                match (c(vals[0]), ty.int_width().filter(|w| *w <= MAX_WIDTH)) {
                    (Some(i), Some(w)) => of(match op {
                        CastOp::ZExt => i.zext(w),
                        CastOp::SExt => i.sext(w),
                        _ => i.trunc(w),
                    }),
                    _ => Lat::Top,
                }
            }
            InstKind::PtrOffset { const_offset, terms, .. } => {
                let Lat::P(o, mut off) = vals[0] else { return Lat::Top };
                off = off.wrapping_add(*const_offset as u64);
                for ((_, scale), v) in terms.iter().zip(&vals[1..]) {
                    let Some(i) = c(*v) else { return Lat::Top };
                    let i = if i.width() < 64 { i.sext(64) } else { i.trunc(64) };
                    off = off.wrapping_add(i.as_const().unwrap_or(0).wrapping_mul(*scale as u64));
                }
                Lat::P(o, off)
            }
            InstKind::Load { .. } => {
                let (Lat::P(o, off), Some(bits)) = (vals[0], ty.int_width().filter(|w| *w <= MAX_WIDTH)) else { return Lat::Top };
                if self.written_any || self.written.get(o as usize).copied().unwrap_or(true) {
                    return Lat::Top;
                }
                // The object's bytes as the state holds them: nothing executable writes them.
                let Some(obj) = self.st.objects.get(o as usize).filter(|ob| ob.alive) else { return Lat::Top };
                let n = bits.div_ceil(8) as u64;
                let Some(end) = off.checked_add(n).filter(|e| *e <= obj.bytes.len() as u64) else { return Lat::Top };
                let mut v = 0u64;
                for (k, b) in obj.bytes[off as usize..end as usize].iter().enumerate() {
                    match b {
                        Byte::Int(IntV::C { v: x, .. }) => v |= (x & 0xff) << (8 * k),
                        _ => return Lat::Top,
                    }
                }
                of(IntV::c(bits, v))
            }
            // Calls, allocations, addresses: any value.
            _ => Lat::Top,
        }
    }

    /// Records what `kind` may write; true when that is more than before.
    fn note_writes(&mut self, kind: &InstKind) -> bool {
        let before = (self.written_any, self.written.iter().filter(|w| **w).count());
        match kind {
            InstKind::Store { ptr, .. } => match self.value(ptr) {
                Lat::Bot => {}
                Lat::P(o, _) => {
                    if let Some(w) = self.written.get_mut(o as usize) {
                        *w = true;
                    }
                }
                _ => self.written_any = true,
            },
            // A lifetime marker makes its object's bytes undefined: a write to that object.
            InstKind::Call { callee: crate::ir::Callee::Direct(n), args } if n.starts_with("llvm.lifetime.") => match args.get(1).map(|p| self.value(p)) {
                Some(Lat::Bot) => {}
                Some(Lat::P(o, _)) => {
                    if let Some(w) = self.written.get_mut(o as usize) {
                        *w = true;
                    }
                }
                _ => self.written_any = true,
            },
            InstKind::Call { callee, .. } => {
                let harmless = matches!(callee, crate::ir::Callee::Direct(n)
                    if n.starts_with("__VERIFIER_nondet_") || n == crate::load::TARGET_MARKER || n == crate::load::comparisons::SIGN_OF || n == "__VERIFIER_assume" || n == "llvm.assume");
                if !harmless {
                    // Any other function may write any object: through its pointer arguments,
                    // globals, or a local whose address escaped earlier (`g = &x; ext();`).
                    self.written_any = true;
                }
            }
            // An instruction the IR does not model (atomics, ...) may write through a pointer.
            InstKind::Unknown { .. } => self.written_any = true,
            _ => {}
        }
        before != (self.written_any, self.written.iter().filter(|w| **w).count())
    }

    fn requeue_all(&mut self) {
        for (i, e) in self.executable.clone().into_iter().enumerate() {
            if e {
                self.queue(BlockId(i as u32));
            }
        }
    }

    fn visit(&mut self, b: BlockId) {
        let f = self.f;
        let block = f.block(b);
        for inst in &block.insts {
            if self.note_writes(&inst.kind) {
                // Loads anywhere may now read written memory.
                self.requeue_all();
            }
            let Some(r) = inst.result else { continue };
            let x = match &inst.kind {
                InstKind::Phi { incoming } => incoming
                    .iter()
                    .filter(|(p, _)| self.entered_from[b.index()].contains(&Some(*p)))
                    .fold(Lat::Bot, |acc, (_, op)| acc.join(self.value(op))),
                kind => self.eval(kind, &inst.ty),
            };
            if self.set(r, x) {
                // Users anywhere may change: revisit every executable block (functions are
                // small; the lattice has height 3, so this ends quickly).
                self.requeue_all();
            }
        }
        match &block.term {
            Terminator::Jump(t) => self.enter(Some(b), *t),
            Terminator::Branch { cond, then_bb, else_bb } => match self.value(cond) {
                Lat::Bot => {}
                Lat::C(_, x) => self.enter(Some(b), if x != 0 { *then_bb } else { *else_bb }),
                Lat::Top | Lat::P(..) => {
                    self.enter(Some(b), *then_bb);
                    self.enter(Some(b), *else_bb);
                }
            },
            Terminator::Switch { value, default, cases } => match self.value(value) {
                Lat::Bot => {}
                Lat::C(w, x) => {
                    let to = cases.iter().find(|(c, _)| IntV::c(w, *c).as_const() == Some(x)).map_or(*default, |(_, t)| *t);
                    self.enter(Some(b), to);
                }
                Lat::Top | Lat::P(..) => {
                    self.enter(Some(b), *default);
                    for (_, t) in cases {
                        self.enter(Some(b), *t);
                    }
                }
            },
            Terminator::Unknown { succs, .. } => {
                for t in succs {
                    self.enter(Some(b), *t);
                }
            }
            Terminator::Return(_) | Terminator::Unreachable => {}
        }
    }
}

/// The distance (in blocks) from the state's next block to the nearest target block along
/// blocks some continuation of the state can execute; `None` when no continuation reaches a
/// target. Functions over [`MAX_BLOCKS`] blocks get `Some(static_distance)`.
pub fn distance(f: &Function, real_targets: u32, st: &DseState, static_distance: u32) -> Option<u32> {
    let n = f.blocks.len();
    if n > MAX_BLOCKS {
        return Some(static_distance);
    }
    let lat = (0..f.value_types.len())
        .map(|i| match st.regs.get(i).and_then(|r| r.as_ref()) {
            None => Lat::Bot,
            Some(Val::Int(IntV::C { w, v })) => Lat::C(*w, *v),
            Some(Val::Ptr { obj, off: IntV::C { v, .. } }) => Lat::P(*obj, *v),
            Some(_) => Lat::Top,
        })
        .collect();
    let mut p = Propagation { f, st, lat, written: vec![false; st.objects.len()], written_any: false, entered_from: vec![vec![]; n], executable: vec![false; n], work: VecDeque::new(), queued: vec![false; n] };
    // The state's next block defines its values anew before any later use can see them (its
    // definitions dominate those uses): their old registers would only blur the propagation.
    for inst in &f.block(st.block).insts {
        if let Some(r) = inst.result {
            p.lat[r.0 as usize] = Lat::Bot;
        }
    }
    // Parameters the state has not set (it always has) would be Bot: make them any value.
    for prm in &f.params {
        if p.lat[prm.value.0 as usize] == Lat::Bot {
            p.lat[prm.value.0 as usize] = Lat::Top;
        }
    }
    p.enter(st.prev, st.block);
    while let Some(b) = p.work.pop_front() {
        p.queued[b.index()] = false;
        p.visit(b);
    }
    // Shortest path from the state's block to a target over executable edges: a real one, else
    // a pseudo-target (ids from `real_targets` on), ranked behind every real one (see
    // `super::distances`).
    let mut dist = vec![u32::MAX; n];
    let mut queue = VecDeque::new();
    dist[st.block.index()] = 0;
    queue.push_back(st.block);
    let mut pseudo: Option<u32> = None;
    while let Some(b) = queue.pop_front() {
        match f.block(b).target {
            Some(t) if t < real_targets => return Some(dist[b.index()]),
            Some(_) => {
                pseudo.get_or_insert(dist[b.index()]);
            }
            None => {}
        }
        for s in f.block(b).term.successors() {
            let reachable = p.entered_from[s.index()].contains(&Some(b));
            if reachable && dist[s.index()] == u32::MAX {
                dist[s.index()] = dist[b.index()] + 1;
                queue.push_back(s);
            }
        }
    }
    pseudo.map(|d| super::PSEUDO_TARGET_DISTANCE.saturating_add(d))
}
