//! Instruction semantics of the DSE: one block at a time, exactly or not at all.
//!
//! Whatever cannot be executed exactly (unknown instructions and external calls, pointer
//! arithmetic across objects, reads of unknown bytes, out-of-bounds accesses) ends the state with
//! [`Step::GiveUp`]: the engine never invents a value. Symbolic offsets are made concrete only
//! when the path condition fixes them; otherwise memory is read through a Z3 array and written
//! with one `ite` per byte, both exact.

use super::solver::{PathSolver, Sat};
use super::state::{Byte, DseState, Obj, ObjKind, Val};
use super::value::{IntV, MAX_WIDTH};
use crate::ir::{BlockId, CastOp, Callee, InstKind, IntPredicate, Operand, Program, Terminator, Ty};
use std::rc::Rc;
use z3::ast::{Array, Bool, BV};

/// Bytes of the fresh buffer behind a pointer parameter. Accesses beyond it give up (a real
/// caller's buffer may be longer), so the space explored stays honest.
pub const PARAM_BUFFER_BYTES: u64 = 256;
/// Largest object a symbolic-offset write rewrites byte by byte.
const MAX_SYMBOLIC_WRITE_OBJECT: usize = 4096;
/// Largest `memset`/`memcpy`/allocation modelled.
const MAX_CONST_LEN: u64 = 1 << 16;

/// Names of the input symbols, shared with the APC when a guide is used (so that the APC and the
/// path condition speak about the same inputs).
#[derive(Clone, Debug)]
pub struct Names {
    /// The nondet stream: an array from call number (64 bits) to a 64-bit value.
    pub stream: String,
    /// Per parameter of the function: the symbol of an integer parameter or the array of the
    /// initial bytes of a pointer parameter's buffer.
    pub params: Vec<String>,
}

impl Names {
    pub fn defaults(program: &Program) -> Names {
        Names {
            stream: "dse.nondet".into(),
            params: program.function.params.iter().map(|p| format!("dse.param.{}", p.name)).collect(),
        }
    }
    pub fn stream_array(&self) -> Array {
        Array::new_const(self.stream.as_str(), &z3::Sort::bitvector(64), &z3::Sort::bitvector(64))
    }
    pub fn buffer_array(&self, param: usize) -> Array {
        Array::new_const(self.params[param].as_str(), &z3::Sort::bitvector(64), &z3::Sort::bitvector(8))
    }
    /// The term of nondet call number `k` (64 bits; each call keeps its low bits): a plain
    /// constant, so that path queries stay free of array theory.
    pub fn nondet(&self, k: u64) -> BV {
        BV::new_const(format!("dse.nd{k}"), 64)
    }
    /// `nondet(k) = stream[k]`: ties the path's inputs to the APC's stream.
    pub fn nondet_link(&self, k: u64) -> Bool {
        let cell = self.stream_array().select(&BV::from_u64(k, 64)).as_bv().expect("the stream holds bit-vectors");
        self.nondet(k).eq(&cell)
    }
}

/// What executing one block led to.
pub enum Step {
    /// The state moved on to its next block.
    Continue,
    /// A symbolic branch: each feasible-looking successor with its condition.
    Fork(Vec<(BlockId, Bool)>),
    /// The state entered a target block.
    Target,
    /// The path ends without reaching the target (return, trap, exit, failed assumption).
    Dead,
    /// The state cannot be executed exactly.
    GiveUp(String),
}

/// Why executing an instruction stopped.
enum Stop {
    Dead,
    GiveUp(String),
}

/// Stack bytes nobody wrote (a fresh `alloca`, a local whose lifetime starts again): whatever
/// the machine has there. Fresh symbols cover every value, so the space stays complete; the
/// witness may miss.
fn uninitialised_bytes(name: &str, size: u64) -> Vec<Byte> {
    (0..size).map(|k| Byte::Int(IntV::S { w: 8, t: BV::fresh_const(&format!("dse.uninit.{name}.{k}"), 8) })).collect()
}

fn give_up<T>(why: impl Into<String>) -> Result<T, Stop> {
    Err(Stop::GiveUp(why.into()))
}

/// Executes blocks of one program.
pub struct Executor<'a> {
    pub program: &'a Program,
    pub names: &'a Names,
    /// Functions the native builds stub (see [`super::DseConfig::stubbed`]).
    pub stubbed: &'a std::collections::BTreeSet<String>,
    /// The stubbed functions a path called: the search explored the replayed program, not
    /// necessarily the real one (see [`super::DseEnd::NoReplayableWitness`]).
    pub stubbed_calls: std::collections::BTreeSet<String>,
    /// Set when the engine explored something less than every run exactly (it then must not
    /// answer `Exhausted`), with the reason.
    pub inexact: Option<String>,
    /// Library comparison results given a constant of their own so far (`dse.cmp#k`).
    pub comparison_results: u32,
}

/// Whether `bytes[range]` still hold the input array's own bytes (nobody wrote to them).
fn untouched(input: &Array, bytes: &[Byte], range: std::ops::Range<u64>) -> bool {
    range.into_iter().all(|k| match bytes.get(k as usize) {
        Some(Byte::Int(IntV::S { w: 8, t })) => *t == input.select(&BV::from_u64(k, 64)).as_bv().expect("bytes"),
        _ => false,
    })
}

impl<'a> Executor<'a> {
    /// The state at the function's entry: parameters and globals as the native run starts.
    pub fn initial_state(&self) -> Result<DseState, String> {
        let f = &self.program.function;
        let mut st = DseState {
            block: f.entry(),
            prev: None,
            regs: vec![None; f.value_types.len()],
            objects: vec![],
            pc: Default::default(),
            nondet: 0,
            steps: 0,
            loops: vec![],
            matched: 0,
            unchecked: false,
        };
        for g in &self.program.globals {
            let bytes = match &g.init {
                Some(init) => init.iter().map(|b| b.map_or(Byte::Unknown, |v| Byte::Int(IntV::c(8, v as u64)))).collect(),
                None => vec![Byte::Unknown; g.size.min(MAX_CONST_LEN) as usize],
            };
            st.objects.push(Rc::new(Obj { name: g.name.clone(), kind: ObjKind::Global, bytes, alive: true }));
        }
        for (k, p) in f.params.iter().enumerate() {
            let v = match &p.ty {
                Ty::Int(w) if *w <= MAX_WIDTH => Val::Int(IntV::S { w: *w, t: BV::new_const(self.names.params[k].as_str(), *w) }),
                Ty::Ptr => {
                    let arr = self.names.buffer_array(k);
                    // Bytes the function reads in front of the address (a header at `s[-1]`)
                    // are the array's at negative indices: the object starts there, and the
                    // parameter points `front_bytes` into it.
                    let front = p.front_bytes;
                    let bytes = (0..front + p.buffer_bytes.unwrap_or(PARAM_BUFFER_BYTES))
                        .map(|i| Byte::Int(IntV::S { w: 8, t: arr.select(&BV::from_u64(i.wrapping_sub(front), 64)).as_bv().expect("bytes") }))
                        .collect();
                    let obj = st.objects.len() as u32;
                    st.objects.push(Rc::new(Obj { name: p.name.clone(), kind: ObjKind::ParamBuffer { param: k }, bytes, alive: true }));
                    Val::Ptr { obj, off: IntV::c(64, front) }
                }
                other => return Err(format!("parameter '{}' of type {other}", p.name)),
            };
            st.set_reg(p.value, v);
        }
        Ok(st)
    }

    /// The input array behind an input object: a parameter's buffer, or a lazily created
    /// pointee, named by its path from the parameter (the same in every state).
    fn input_array(&self, st: &DseState, obj: u32) -> Option<(Array, usize)> {
        let mut path = vec![];
        let mut at = obj;
        loop {
            match st.objects.get(at as usize)?.kind {
                // A buffer with bytes in front of its address is the array shifted by them: no
                // plain array stands for it (its reads go through its bytes, and pointers read
                // from it are not lazily initialised).
                ObjKind::ParamBuffer { param } if self.program.function.params[param].front_bytes > 0 => return None,
                ObjKind::ParamBuffer { param } => {
                    if path.is_empty() {
                        return Some((self.names.buffer_array(param), 0));
                    }
                    path.reverse();
                    let name = format!("dse.pt.{param}.{}", path.iter().map(|o: &u64| o.to_string()).collect::<Vec<_>>().join("."));
                    let depth = path.len();
                    return Some((Array::new_const(name, &z3::Sort::bitvector(64), &z3::Sort::bitvector(8)), depth));
                }
                ObjKind::Pointee { parent, offset } => {
                    path.push(offset);
                    at = parent;
                }
                _ => return None,
            }
        }
    }

    /// The flag that input object `obj` (a parameter's buffer or a pointee) is NULL: a caller
    /// may pass NULL for any pointer, and a pointer field may hold it. `None` for the program's
    /// own objects. The name follows the object's path from its parameter, as its array's does.
    pub fn null_flag(&self, st: &DseState, obj: u32) -> Option<Bool> {
        let mut path = vec![];
        let mut at = obj;
        loop {
            match st.objects.get(at as usize)?.kind {
                ObjKind::ParamBuffer { param } => {
                    path.reverse();
                    let tail: String = path.iter().map(|o: &u64| format!(".{o}")).collect();
                    return Some(Bool::new_const(format!("dse.null.{param}{tail}")));
                }
                ObjKind::Pointee { parent, offset } => {
                    path.push(offset);
                    at = parent;
                }
                _ => return None,
            }
        }
    }

    /// The offset at which a pointer into input object `obj` is the pointer the input passes.
    fn input_start(&self, st: &DseState, obj: u32) -> u64 {
        match st.objects[obj as usize].kind {
            ObjKind::ParamBuffer { param } => self.program.function.params[param].front_bytes,
            _ => 0,
        }
    }

    /// Lazy initialisation: a pointer loaded from eight untouched input bytes at `offset` of
    /// input object `obj` points to a fresh input buffer of its own (never NULL and never into
    /// another object: so the search is no longer exhaustive, see `inexact`). The parent's bytes
    /// then hold that pointer, so later loads see the same buffer.
    fn lazy_pointee(&mut self, st: &mut DseState, obj: u32, offset: u64) -> Option<Val> {
        let (arr, depth) = self.input_array(st, obj)?;
        if depth >= crate::witness::MAX_POINTEE_DEPTH {
            return None;
        }
        let parent = &st.objects[obj as usize];
        if !untouched(&arr, &parent.bytes, offset..offset + 8) {
            return None;
        }
        let child = st.objects.len() as u32;
        let name = format!("{}+{offset}", parent.name);
        st.objects.push(Rc::new(Obj { name, kind: ObjKind::Pointee { parent: obj, offset }, bytes: vec![], alive: true }));
        let (carr, _) = self.input_array(st, child)?;
        let bytes = (0..PARAM_BUFFER_BYTES).map(|i| Byte::Int(IntV::S { w: 8, t: carr.select(&BV::from_u64(i, 64)).as_bv().expect("bytes") })).collect();
        Rc::make_mut(&mut st.objects[child as usize]).bytes = bytes;
        let p = Rc::make_mut(&mut st.objects[obj as usize]);
        for k in 0..8u8 {
            p.bytes[(offset + k as u64) as usize] = Byte::Ptr { obj: child, off: IntV::c(64, 0), k };
        }
        self.inexact.get_or_insert_with(|| "pointers read from input buffers were taken to point to fresh buffers".into());
        Some(Val::Ptr { obj: child, off: IntV::c(64, 0) })
    }

    /// Bytes of lazily created pointee `obj` in `model`, with their own pointees (for witnesses).
    pub fn pointees_of(&self, st: &DseState, obj: u32, model: &z3::Model) -> Vec<crate::witness::Pointee> {
        let mut out = vec![];
        for (k, o) in st.objects.iter().enumerate() {
            if let ObjKind::Pointee { parent, offset } = o.kind {
                if parent == obj {
                    let Some((arr, _)) = self.input_array(st, k as u32) else { continue };
                    let mut bytes: Vec<u8> = (0..PARAM_BUFFER_BYTES)
                        .map(|i| model.eval(&arr.select(&BV::from_u64(i, 64)).as_bv().expect("bytes"), true).and_then(|v| v.as_u64()).unwrap_or(0) as u8)
                        .collect();
                    bytes.extend(std::iter::repeat_n(0, crate::witness::BUFFER_SLACK));
                    let null = self.null_flag(st, k as u32).and_then(|f| model.eval(&f, true)).and_then(|b| b.as_bool()) == Some(true);
                    out.push(if null {
                        crate::witness::Pointee::holding(offset, crate::witness::SlotValue::Null)
                    } else {
                        crate::witness::Pointee::buffer(offset, bytes, self.pointees_of(st, k as u32, model))
                    });
                }
            }
        }
        out
    }

    fn operand(&self, st: &DseState, op: &Operand) -> Result<Val, Stop> {
        Ok(match op {
            Operand::Value(v) => match st.reg(*v) {
                Some(x) => x.clone(),
                None => return give_up(format!("value '{}' is not defined on this path", self.program.function.value_name(*v))),
            },
            Operand::Int { width, value } if *width <= MAX_WIDTH => Val::Int(IntV::c(*width, *value)),
            Operand::Global { id, offset } => Val::Ptr { obj: id.0, off: IntV::c(64, *offset as u64) },
            Operand::Null => Val::Null,
            // undef/poison: any value natively; the engine does not choose one for the run.
            other => return give_up(format!("operand {other:?}")),
        })
    }

    fn int(&self, st: &DseState, op: &Operand) -> Result<IntV, Stop> {
        match self.operand(st, op)? {
            Val::Int(i) => Ok(i),
            Val::Null => Ok(IntV::c(64, 0)),
            Val::Ptr { .. } => give_up("a pointer used as an integer"),
        }
    }

    /// Adds `cond` to the path condition (a run continuing past this point satisfies it).
    fn assume(&self, st: &mut DseState, solver: &mut PathSolver, cond: &Bool) {
        if cond.as_bool() == Some(true) {
            return;
        }
        st.pc = solver.extend(&st.pc, cond);
        st.unchecked = true;
    }

    /// The value of a symbolic offset when the path condition fixes it.
    fn unique(&self, st: &DseState, solver: &mut PathSolver, v: &IntV) -> Option<u64> {
        if let Some(c) = v.as_const() {
            return Some(c);
        }
        if solver.check(&st.pc, &[]) != Sat::Yes {
            return None;
        }
        let m = solver.model()?;
        let val = m.eval(&v.term(), true)?.as_u64()?;
        let other = v.term().eq(BV::from_u64(val, v.width())).not();
        (solver.check(&st.pc, &[other]) == Sat::No).then_some(val)
    }

    /// Executes the block `st.block` (entered from `st.prev`) and its terminator.
    pub fn step(&mut self, st: &mut DseState, solver: &mut PathSolver) -> Step {
        let f = &self.program.function;
        let Some(block) = f.blocks.get(st.block.index()) else { return Step::GiveUp("no such block".into()) };
        if block.target.is_some() {
            // A store's clobber site (`load::bounds`): the store before it may have written past
            // its object on this path, which the search cannot follow. Not replayed here (the
            // apc engine and the fuzzer do); no proof while such a path exists.
            if self.program.is_clobber_site(st.block) {
                return Step::GiveUp("a store may write past its object".into());
            }
            return Step::Target;
        }
        st.steps += 1;
        // Phis in parallel.
        let mut phis = vec![];
        for inst in &block.insts {
            let InstKind::Phi { incoming } = &inst.kind else { continue };
            let Some(pred) = st.prev else { return Step::GiveUp("phi in the entry block".into()) };
            let Some((_, op)) = incoming.iter().find(|(b, _)| *b == pred) else {
                return Step::GiveUp("phi without a value for its predecessor".into());
            };
            match self.operand(st, op) {
                Ok(v) => phis.push((inst.result, v)),
                Err(Stop::GiveUp(w)) => return Step::GiveUp(w),
                Err(Stop::Dead) => return Step::Dead,
            }
        }
        for (r, v) in phis {
            if let Some(r) = r {
                st.set_reg(r, v);
            }
        }
        for inst in &block.insts {
            if matches!(inst.kind, InstKind::Phi { .. }) {
                continue;
            }
            match self.exec(st, solver, &inst.kind, &inst.ty, inst.result) {
                Ok(Some(v)) => {
                    if let Some(r) = inst.result {
                        st.set_reg(r, v);
                    }
                }
                Ok(None) => {}
                Err(Stop::Dead) => return Step::Dead,
                Err(Stop::GiveUp(w)) => return Step::GiveUp(w),
            }
        }
        let here = st.block;
        let go = |st: &mut DseState, to: BlockId| {
            st.prev = Some(here);
            st.block = to;
            Step::Continue
        };
        match &block.term {
            Terminator::Jump(b) => go(st, *b),
            Terminator::Branch { then_bb, else_bb, .. } if then_bb == else_bb => go(st, *then_bb),
            Terminator::Branch { cond, then_bb, else_bb } => {
                let c = match self.int(st, cond) {
                    Ok(c) => c,
                    Err(Stop::GiveUp(w)) => return Step::GiveUp(w),
                    Err(Stop::Dead) => return Step::Dead,
                };
                match c.as_const() {
                    Some(x) => go(st, if x != 0 { *then_bb } else { *else_bb }),
                    None => {
                        let t = c.truthy();
                        Step::Fork(vec![(*then_bb, t.clone()), (*else_bb, t.not())])
                    }
                }
            }
            Terminator::Switch { value, default, cases } => {
                let v = match self.int(st, value) {
                    Ok(v) => v,
                    Err(Stop::GiveUp(w)) => return Step::GiveUp(w),
                    Err(Stop::Dead) => return Step::Dead,
                };
                let w = v.width();
                if let Some(x) = v.as_const() {
                    let to = cases.iter().find(|(c, _)| IntV::c(w, *c).as_const() == Some(x)).map_or(*default, |(_, b)| *b);
                    return go(st, to);
                }
                let t = v.term();
                let mut succ: Vec<(BlockId, Vec<Bool>)> = vec![];
                let mut add = |b: BlockId, c: Bool| match succ.iter_mut().find(|(x, _)| *x == b) {
                    Some((_, cs)) => cs.push(c),
                    None => succ.push((b, vec![c])),
                };
                for (c, b) in cases {
                    add(*b, t.eq(BV::from_u64(*c, w)));
                }
                let none: Vec<Bool> = cases.iter().map(|(c, _)| t.eq(BV::from_u64(*c, w)).not()).collect();
                add(*default, Bool::and(&none));
                Step::Fork(succ.into_iter().map(|(b, cs)| (b, Bool::or(&cs))).collect())
            }
            Terminator::Return(_) | Terminator::Unreachable => Step::Dead,
            Terminator::Unknown { opcode, .. } => Step::GiveUp(format!("terminator {opcode}")),
        }
    }

    fn exec(&mut self, st: &mut DseState, solver: &mut PathSolver, kind: &InstKind, ty: &Ty, result: Option<crate::ir::ValueId>) -> Result<Option<Val>, Stop> {
        Ok(Some(match kind {
            InstKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.int(st, lhs)?, self.int(st, rhs)?);
                match IntV::binary(*op, &a, &b) {
                    Ok(out) => {
                        if let Some(c) = out.assume {
                            self.assume(st, solver, &c);
                        }
                        Val::Int(out.value)
                    }
                    // A division by a constant zero (or INT_MIN / -1 in constants) is undefined:
                    // the compiler may fold it to any value instead of trapping, so the state is
                    // not exact (and the search can no longer be exhaustive).
                    Err(e) => return give_up(e.0),
                }
            }
            InstKind::ICmp { pred, lhs, rhs } => {
                let (a, b) = (self.operand(st, lhs)?, self.operand(st, rhs)?);
                Val::Int(self.compare(st, *pred, a, b)?)
            }
            InstKind::Select { cond, then_val, else_val } => {
                let c = self.int(st, cond)?;
                let (a, b) = (self.operand(st, then_val)?, self.operand(st, else_val)?);
                match (c.as_const(), a, b) {
                    (Some(x), a, b) => {
                        if x != 0 {
                            a
                        } else {
                            b
                        }
                    }
                    (None, Val::Int(a), Val::Int(b)) => Val::Int(IntV::ite(&c, &a, &b)),
                    (None, Val::Ptr { obj: o1, off: a }, Val::Ptr { obj: o2, off: b }) if o1 == o2 => {
                        Val::Ptr { obj: o1, off: IntV::ite(&c, &a, &b) }
                    }
                    _ => return give_up("select between pointers into different objects"),
                }
            }
            InstKind::Cast { op, val } => {
                let v = self.operand(st, val)?;
                match (op, v) {
                    (CastOp::BitCast, v) => v,
                    (CastOp::ZExt | CastOp::SExt | CastOp::Trunc, Val::Int(i)) => {
                        let Some(w) = ty.int_width().filter(|w| *w <= MAX_WIDTH) else { return give_up(format!("cast to {ty}")) };
                        Val::Int(match op {
                            CastOp::ZExt => i.zext(w),
                            CastOp::SExt => i.sext(w),
                            _ => i.trunc(w),
                        })
                    }
                    (CastOp::PtrToInt, Val::Null) => Val::Int(IntV::c(ty.int_width().unwrap_or(64).min(64), 0)),
                    (CastOp::IntToPtr, Val::Int(i)) if i.as_const() == Some(0) => Val::Null,
                    (op, _) => return give_up(format!("{op:?} (addresses are not modelled)")),
                }
            }
            InstKind::Phi { .. } => return Ok(None),
            InstKind::Alloca { elem_size, count } => {
                let n = self.int(st, count)?;
                let Some(n) = n.as_const() else { return give_up("alloca of a symbolic size") };
                let size = n.saturating_mul(*elem_size);
                if size > MAX_CONST_LEN {
                    return give_up("alloca too large");
                }
                let name = result.map(|r| self.program.function.value_name(r).to_string()).unwrap_or_default();
                let obj = st.objects.len() as u32;
                let bytes = uninitialised_bytes(&name, size);
                st.objects.push(Rc::new(Obj { name, kind: ObjKind::Stack, bytes, alive: true }));
                Val::Ptr { obj, off: IntV::c(64, 0) }
            }
            InstKind::Load { ptr } => {
                let p = self.operand(st, ptr)?;
                self.load(st, solver, p, ty)?
            }
            InstKind::Store { ptr, val, width } => {
                let p = self.operand(st, ptr)?;
                let v = self.operand(st, val)?;
                self.store(st, solver, p, v, *width)?;
                return Ok(None);
            }
            InstKind::PtrOffset { base, const_offset, terms } => {
                let b = self.operand(st, base)?;
                let Val::Ptr { obj, off } = b else { return give_up("pointer arithmetic on null") };
                let mut off = add(&off, &IntV::c(64, *const_offset as u64));
                for (idx, scale) in terms {
                    let i = self.int(st, idx)?;
                    let i = if i.width() < 64 { i.sext(64) } else { i.trunc(64) };
                    let t = IntV::binary(crate::ir::BinOp::Mul, &i, &IntV::c(64, *scale as u64)).map_err(|e| Stop::GiveUp(e.0))?.value;
                    off = add(&off, &t);
                }
                Val::Ptr { obj, off }
            }
            InstKind::Call { callee, args } => return self.call(st, solver, callee, args, ty),
            InstKind::Unknown { opcode } => return give_up(format!("instruction {opcode}")),
        }))
    }

    fn compare(&self, st: &DseState, pred: IntPredicate, a: Val, b: Val) -> Result<IntV, Stop> {
        use IntPredicate::*;
        Ok(match (a, b) {
            (Val::Int(x), Val::Int(y)) => IntV::cmp(pred, &x, &y),
            (Val::Null, Val::Null) => IntV::cmp(pred, &IntV::c(64, 0), &IntV::c(64, 0)),
            (Val::Ptr { obj: o1, off: x }, Val::Ptr { obj: o2, off: y }) if o1 == o2 => IntV::cmp(pred, &x, &y),
            // An input pointer is NULL when its flag says so and it was not moved.
            (Val::Ptr { obj, off }, Val::Null) | (Val::Null, Val::Ptr { obj, off }) if matches!(pred, Eq | Ne) && self.null_flag(st, obj).is_some() => {
                let flag = self.null_flag(st, obj).expect("checked");
                let start = IntV::c(64, self.input_start(st, obj));
                let at_start = IntV::cmp(Eq, &off, &start).truthy();
                let null = Bool::and(&[&flag, &at_start]);
                IntV::from_bool(&if pred == Eq { null } else { null.not() })
            }
            // An object is never at address 0.
            (Val::Ptr { .. }, Val::Null) | (Val::Null, Val::Ptr { .. }) if matches!(pred, Eq | Ne) => IntV::c(1, (pred == Ne) as u64),
            _ => return give_up("comparison of pointers into different objects"),
        })
    }

    /// Resolves a pointer to (object, offset) for an access of `n` bytes; the offset is
    /// concrete when the path fixes it.
    fn locate(&mut self, st: &DseState, solver: &mut PathSolver, p: Val, n: u64) -> Result<(u32, IntV), Stop> {
        let Val::Ptr { obj, off } = p else {
            // Dereferencing null traps natively: the run ends.
            return Err(Stop::Dead);
        };
        let o = &st.objects[obj as usize];
        if !o.alive {
            return give_up(format!("access to '{}' after its lifetime", o.name));
        }
        let size = o.bytes.len() as u64;
        let off = match self.unique(st, solver, &off) {
            Some(c) => IntV::c(64, c),
            None => off,
        };
        if let Some(c) = off.as_const() {
            if c.checked_add(n).is_none_or(|e| e > size) {
                return give_up(format!("access to '{}' at offset {} beyond its {size} bytes", o.name, c as i64));
            }
        }
        Ok((obj, off))
    }

    fn load(&mut self, st: &mut DseState, solver: &mut PathSolver, p: Val, ty: &Ty) -> Result<Val, Stop> {
        let bits = match ty {
            Ty::Ptr => 64,
            Ty::Int(w) if *w <= MAX_WIDTH => *w,
            other => return give_up(format!("load of {other}")),
        };
        let n = bits.div_ceil(8) as u64;
        let (obj, off) = self.locate(st, solver, p, n)?;
        let o = st.objects[obj as usize].clone();
        let bytes: Vec<Byte> = match off.as_const() {
            Some(c) => o.bytes[c as usize..(c + n) as usize].to_vec(),
            None => {
                let (arr, off) = self.symbolic_view(st, solver, obj, &o, &off, n)?;
                (0..n)
                    .map(|k| {
                        let i = off.term().bvadd(BV::from_u64(k, 64));
                        Byte::Int(IntV::S { w: 8, t: arr.select(&i).as_bv().expect("bytes") })
                    })
                    .collect()
            }
        };
        if *ty == Ty::Ptr {
            if let Byte::Ptr { obj, off, k: 0 } = &bytes[0] {
                let whole = bytes.iter().enumerate().all(|(k, b)| matches!(b, Byte::Ptr { obj: o2, k: k2, .. } if o2 == obj && *k2 as usize == k));
                // Same offset term: the eight bytes came from one store of this pointer.
                if whole && bytes.iter().all(|b| matches!(b, Byte::Ptr { off: o2, .. } if same(o2, off))) {
                    return Ok(Val::Ptr { obj: *obj, off: off.clone() });
                }
            }
            if bytes.iter().all(|b| matches!(b, Byte::Int(IntV::C { v: 0, .. }))) {
                return Ok(Val::Null);
            }
            if let Some(c) = off.as_const() {
                if let Some(v) = self.lazy_pointee(st, obj, c) {
                    return Ok(v);
                }
            }
            return give_up("load of a pointer from bytes that are not one stored pointer");
        }
        let mut acc: Option<IntV> = None;
        let mut all_const = true;
        let mut cval = 0u64;
        let mut terms = vec![];
        for (k, b) in bytes.iter().enumerate() {
            match b {
                Byte::Int(IntV::C { v, .. }) => {
                    cval |= v << (8 * k);
                    terms.push(BV::from_u64(*v, 8));
                }
                Byte::Int(IntV::S { t, .. }) => {
                    all_const = false;
                    terms.push(t.clone());
                }
                Byte::Ptr { .. } => return give_up("integer load of a stored pointer"),
                Byte::Unknown => return give_up(format!("load of unknown bytes of '{}'", o.name)),
            }
        }
        if all_const {
            acc = Some(IntV::c(bits, cval));
        }
        let v = match acc {
            Some(v) => v,
            None => {
                let mut t = terms[0].clone();
                for b in &terms[1..] {
                    t = b.concat(&t);
                }
                IntV::sym((n * 8) as u32, t).trunc(bits)
            }
        };
        Ok(Val::Int(v))
    }

    /// The object's bytes as a Z3 array for a read at a symbolic offset, with the access kept in
    /// bounds (a run reading outside the object is one this engine does not follow).
    fn symbolic_view(&mut self, st: &mut DseState, solver: &mut PathSolver, obj: u32, o: &Obj, off: &IntV, n: u64) -> Result<(Array, IntV), Stop> {
        // An input object nobody wrote to is its input array itself: selecting from it keeps
        // queries small (a chain of one store per byte made them time out on a scan of
        // `p->text[p->pos]`).
        if let Some((input, _)) = self.input_array(st, obj) {
            if untouched(&input, &o.bytes, 0..o.bytes.len() as u64) {
                self.bound(st, solver, off, n, o.bytes.len() as u64)?;
                return Ok((input, off.clone()));
            }
        }
        let mut arr = Array::const_array(&z3::Sort::bitvector(64), &BV::from_u64(0, 8));
        for (k, b) in o.bytes.iter().enumerate() {
            match b {
                Byte::Int(v) => arr = arr.store(&BV::from_u64(k as u64, 64), &v.term()),
                _ => return give_up(format!("symbolic-offset read of '{}', which holds pointers or unknown bytes", o.name)),
            }
        }
        self.bound(st, solver, off, n, o.bytes.len() as u64)?;
        Ok((arr, off.clone()))
    }

    /// Restricts a symbolic offset to the object; when leaving it is possible, the search is
    /// no longer exhaustive.
    fn bound(&mut self, st: &mut DseState, solver: &mut PathSolver, off: &IntV, n: u64, size: u64) -> Result<(), Stop> {
        if n > size {
            return give_up("access wider than its object");
        }
        let inside = off.term().bvule(BV::from_u64(size - n, 64));
        if solver.check(&st.pc, &[inside.not()]) != Sat::No {
            self.inexact.get_or_insert_with(|| "a symbolic offset could leave its object".into());
        }
        self.assume(st, solver, &inside);
        Ok(())
    }

    fn store(&mut self, st: &mut DseState, solver: &mut PathSolver, p: Val, v: Val, width: u32) -> Result<(), Stop> {
        let n = width.div_ceil(8) as u64;
        let bytes: Vec<Byte> = match v {
            Val::Int(i) => {
                if i.width() > MAX_WIDTH {
                    return give_up("store of a wide integer");
                }
                let i = i.zext((n * 8) as u32);
                (0..n)
                    .map(|k| {
                        Byte::Int(match &i {
                            IntV::C { v, .. } => IntV::c(8, v >> (8 * k)),
                            IntV::S { t, .. } => IntV::sym(8, t.extract(8 * k as u32 + 7, 8 * k as u32)),
                        })
                    })
                    .collect()
            }
            Val::Null if n == 8 => (0..8).map(|_| Byte::Int(IntV::c(8, 0))).collect(),
            Val::Ptr { obj, off } if n == 8 => (0..8).map(|k| Byte::Ptr { obj, off: off.clone(), k }).collect(),
            _ => return give_up("store of a pointer with a width other than 8"),
        };
        let (obj, off) = self.locate(st, solver, p, n)?;
        if st.objects[obj as usize].kind == ObjKind::Global && self.program.globals.get(obj as usize).is_some_and(|g| g.is_constant) {
            // Writing a constant global faults natively.
            return Err(Stop::Dead);
        }
        match off.as_const() {
            Some(c) => {
                let o = st.obj_mut(obj);
                for (k, b) in bytes.into_iter().enumerate() {
                    o.bytes[c as usize + k] = b;
                }
            }
            None => {
                let size = st.objects[obj as usize].bytes.len();
                if size > MAX_SYMBOLIC_WRITE_OBJECT {
                    return give_up("symbolic-offset write into a large object");
                }
                self.bound(st, solver, &off, n, size as u64)?;
                let o = st.obj_mut(obj);
                let t = off.term();
                for pos in 0..size {
                    for (k, b) in bytes.iter().enumerate() {
                        if pos < k {
                            continue;
                        }
                        let (Byte::Int(new), Byte::Int(old)) = (b, &o.bytes[pos]) else {
                            return give_up("symbolic-offset write over pointers or unknown bytes");
                        };
                        let hit = t.eq(BV::from_u64((pos - k) as u64, 64));
                        o.bytes[pos] = Byte::Int(IntV::S { w: 8, t: hit.ite(&new.term(), &old.term()) });
                    }
                }
            }
        }
        Ok(())
    }

    fn call(&mut self, st: &mut DseState, solver: &mut PathSolver, callee: &Callee, args: &[Operand], ty: &Ty) -> Result<Option<Val>, Stop> {
        let Callee::Direct(name) = callee else { return give_up("indirect call") };
        let name = name.as_str();
        if name.starts_with("__VERIFIER_nondet_") {
            let raw = self.names.nondet(st.nondet);
            st.nondet += 1;
            return match ty {
                Ty::Int(w) if *w <= 64 => Ok(Some(Val::Int(IntV::S { w: *w, t: if *w == 64 { raw } else { raw.extract(w - 1, 0) } }))),
                other => give_up(format!("nondet of type {other}")),
            };
        }
        if name == crate::load::TARGET_MARKER {
            return Ok(None);
        }
        if name == crate::load::comparisons::SIGN_OF {
            // A library comparison's result: 0 when `d` is, else any value of its sign (see
            // `load::comparisons`). The fresh constant is no input: a model's choice for it may
            // not be what the native library returns, and replay decides.
            let Some(d) = args.first() else { return give_up("__apc_sign_of without argument") };
            let d = self.int(st, d)?;
            let w = d.width();
            self.comparison_results += 1;
            let s = IntV::S { w, t: BV::new_const(format!("dse.cmp#{}", self.comparison_results), w) };
            let zero = IntV::c(w, 0);
            let d_zero = IntV::cmp(IntPredicate::Eq, &d, &zero).truthy();
            let same_sign = IntV::cmp(IntPredicate::Slt, &d, &zero).truthy().eq(&IntV::cmp(IntPredicate::Slt, &s, &zero).truthy());
            let s_nonzero = IntV::cmp(IntPredicate::Ne, &s, &zero).truthy();
            let sign = Bool::and(&[&s_nonzero, &same_sign]);
            self.assume(st, solver, &Bool::or(&[&d_zero, &sign]));
            return Ok(Some(Val::Int(IntV::ite(&IntV::from_bool(&d_zero), &zero, &s))));
        }
        let int_arg = |this: &Self, st: &DseState, k: usize| -> Result<IntV, Stop> {
            match args.get(k) {
                Some(a) => this.int(st, a),
                None => give_up(format!("{name} without argument {k}")),
            }
        };
        match name {
            "__VERIFIER_assume" | "llvm.assume" => {
                let c = int_arg(self, st, 0)?;
                if c.as_const() == Some(0) {
                    return Err(Stop::Dead);
                }
                self.assume(st, solver, &c.truthy());
                return Ok(None);
            }
            "exit" | "_exit" | "abort" | "__assert_fail" | "__VERIFIER_error" => return Err(Stop::Dead),
            "malloc" | "calloc" => {
                let n = if name == "malloc" {
                    int_arg(self, st, 0)?
                } else {
                    let (a, b) = (int_arg(self, st, 0)?, int_arg(self, st, 1)?);
                    IntV::binary(crate::ir::BinOp::Mul, &a, &b).map_err(|e| Stop::GiveUp(e.0))?.value
                };
                let Some(n) = n.as_const().filter(|&n| n <= MAX_CONST_LEN) else { return give_up("allocation of a symbolic size") };
                // malloc may also fail natively: that run is not explored.
                self.inexact.get_or_insert_with(|| "heap allocations are assumed to succeed".into());
                let obj = st.objects.len() as u32;
                let bytes = (0..n)
                    .map(|k| {
                        if name == "calloc" {
                            Byte::Int(IntV::c(8, 0))
                        } else {
                            fresh_heap_byte(obj, k)
                        }
                    })
                    .collect();
                st.objects.push(Rc::new(Obj { name: format!("heap{obj}"), kind: ObjKind::Heap, bytes, alive: true }));
                return Ok(Some(Val::Ptr { obj, off: IntV::c(64, 0) }));
            }
            // A new block of n bytes holding the old block's first min(old size, n) bytes, the
            // rest unknown (as malloc's); the old block is freed. realloc(NULL, n) is malloc(n).
            "realloc" => {
                let n = int_arg(self, st, 1)?;
                let Some(n) = n.as_const().filter(|&n| n <= MAX_CONST_LEN) else { return give_up("reallocation to a symbolic size") };
                let old = match self.operand(st, &args[0])? {
                    Val::Null => None,
                    Val::Ptr { obj, off } if off.as_const() == Some(0) && st.objects[obj as usize].kind == ObjKind::Heap && st.objects[obj as usize].alive => Some(obj),
                    _ => return give_up("realloc of something other than a live heap block's start"),
                };
                self.inexact.get_or_insert_with(|| "heap allocations are assumed to succeed".into());
                let obj = st.objects.len() as u32;
                let bytes = (0..n as usize)
                    .map(|k| match old.and_then(|o| st.objects[o as usize].bytes.get(k)) {
                        Some(b) => b.clone(),
                        None => fresh_heap_byte(obj, k as u64),
                    })
                    .collect();
                if let Some(o) = old {
                    st.obj_mut(o).alive = false;
                }
                st.objects.push(Rc::new(Obj { name: format!("heap{obj}"), kind: ObjKind::Heap, bytes, alive: true }));
                return Ok(Some(Val::Ptr { obj, off: IntV::c(64, 0) }));
            }
            "free" => {
                match self.operand(st, &args[0])? {
                    Val::Null => {}
                    Val::Ptr { obj, off } if off.as_const() == Some(0) && st.objects[obj as usize].kind == ObjKind::Heap => {
                        st.obj_mut(obj).alive = false;
                    }
                    _ => return give_up("free of something other than a heap block's start"),
                }
                return Ok(None);
            }
            _ => {}
        }
        if let Some(intrinsic) = name.strip_prefix("llvm.") {
            let base = intrinsic.split('.').next().unwrap_or("");
            match base {
                "dbg" => return Ok(None),
                // The inliner brackets an inlined callee's locals with these: before the start
                // and after the end, the stack slot holds whatever other frames wrote there.
                "lifetime" => {
                    if let Some(Val::Ptr { obj, .. }) = args.get(1).map(|p| self.operand(st, p)).transpose()? {
                        let start = intrinsic.starts_with("lifetime.start");
                        let o = st.obj_mut(obj);
                        o.alive = start;
                        if start {
                            o.bytes = uninitialised_bytes(&o.name, o.bytes.len() as u64);
                        }
                    }
                    return Ok(None);
                }
                "smax" | "smin" | "umax" | "umin" => {
                    let (a, b) = (int_arg(self, st, 0)?, int_arg(self, st, 1)?);
                    let p = match base {
                        "smax" => IntPredicate::Sgt,
                        "smin" => IntPredicate::Slt,
                        "umax" => IntPredicate::Ugt,
                        _ => IntPredicate::Ult,
                    };
                    let c = IntV::cmp(p, &a, &b);
                    return Ok(Some(Val::Int(IntV::ite(&c, &a, &b))));
                }
                "abs" => {
                    let a = int_arg(self, st, 0)?;
                    let w = a.width();
                    let neg = IntV::binary(crate::ir::BinOp::Sub, &IntV::c(w, 0), &a).map_err(|e| Stop::GiveUp(e.0))?.value;
                    let c = IntV::cmp(IntPredicate::Slt, &a, &IntV::c(w, 0));
                    return Ok(Some(Val::Int(IntV::ite(&c, &neg, &a))));
                }
                "expect" => return Ok(Some(Val::Int(int_arg(self, st, 0)?))),
                "memset" => {
                    self.memset(st, solver, args)?;
                    return Ok(None);
                }
                "memcpy" | "memmove" => {
                    self.memcpy(st, solver, args)?;
                    return Ok(None);
                }
                _ => return give_up(format!("intrinsic {name}")),
            }
        }
        match name {
            "memset" => {
                self.memset(st, solver, args)?;
                Ok(Some(self.operand(st, &args[0])?))
            }
            "memcpy" | "memmove" => {
                self.memcpy(st, solver, args)?;
                Ok(Some(self.operand(st, &args[0])?))
            }
            _ if self.stubbed.contains(name) => {
                // The replay's stub: `long f() { return 0; }`. An integer or pointer result is
                // 0 in %rax; other result types are whatever the stub leaves in their register.
                self.stubbed_calls.insert(name.to_string());
                match ty {
                    Ty::Void => Ok(None),
                    Ty::Int(w) => Ok(Some(Val::Int(IntV::c(*w, 0)))),
                    Ty::Ptr => Ok(Some(Val::Null)),
                    other => give_up(format!("external call {name} returning {other}")),
                }
            }
            _ => give_up(format!("external call {name}")),
        }
    }

    fn const_len(&self, st: &DseState, args: &[Operand]) -> Result<u64, Stop> {
        let n = match args.get(2) {
            Some(a) => self.int(st, a)?,
            None => return give_up("memory intrinsic without a length"),
        };
        match n.as_const() {
            Some(n) if n <= MAX_CONST_LEN => Ok(n),
            _ => give_up("memory intrinsic of a symbolic length"),
        }
    }

    fn memset(&mut self, st: &mut DseState, solver: &mut PathSolver, args: &[Operand]) -> Result<(), Stop> {
        let n = self.const_len(st, args)?;
        let p = self.operand(st, &args[0])?;
        let v = self.int(st, &args[1])?.trunc(8);
        if n == 0 {
            return Ok(());
        }
        let (obj, off) = self.locate(st, solver, p, n)?;
        let Some(c) = off.as_const() else { return give_up("memset at a symbolic offset") };
        let o = st.obj_mut(obj);
        for k in 0..n {
            o.bytes[(c + k) as usize] = Byte::Int(v.clone());
        }
        Ok(())
    }

    fn memcpy(&mut self, st: &mut DseState, solver: &mut PathSolver, args: &[Operand]) -> Result<(), Stop> {
        let n = self.const_len(st, args)?;
        if n == 0 {
            return Ok(());
        }
        let (d, s) = (self.operand(st, &args[0])?, self.operand(st, &args[1])?);
        let (sobj, soff) = self.locate(st, solver, s, n)?;
        let (dobj, doff) = self.locate(st, solver, d, n)?;
        let (Some(sc), Some(dc)) = (soff.as_const(), doff.as_const()) else { return give_up("memcpy at a symbolic offset") };
        let bytes: Vec<Byte> = st.objects[sobj as usize].bytes[sc as usize..(sc + n) as usize].to_vec();
        let o = st.obj_mut(dobj);
        for (k, b) in bytes.into_iter().enumerate() {
            o.bytes[dc as usize + k] = b;
        }
        Ok(())
    }
}

fn add(a: &IntV, b: &IntV) -> IntV {
    IntV::binary(crate::ir::BinOp::Add, a, b).map(|o| o.value).unwrap_or_else(|_| a.clone())
}

/// Whether two offset terms are the same value syntactically.
fn same(a: &IntV, b: &IntV) -> bool {
    match (a, b) {
        (IntV::C { v: x, .. }, IntV::C { v: y, .. }) => x == y,
        (IntV::S { t: x, .. }, IntV::S { t: y, .. }) => x == y,
        _ => false,
    }
}

/// Byte `k` of heap block `obj` before anything is stored there: unknown.
fn fresh_heap_byte(obj: u32, k: u64) -> Byte {
    Byte::Int(IntV::S { w: 8, t: BV::fresh_const(&format!("dse.heap{obj}.{k}"), 8) })
}
