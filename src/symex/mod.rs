//! Symbolic execution of the owned IR along a path (Algorithm 1 of the APC paper, without loop
//! entries): the symbolic state θ, instruction semantics, and the tests collected on edges.
//!
//! Memory: every object (pointer parameter buffer, alloca, global, malloc) is an array from byte
//! offsets to bytes; a pointer is (object, 64-bit offset). Whatever the analysis cannot follow
//! becomes ⋆ (values) or a havocked object (memory), never a guess.

mod calls;
mod state;

pub use calls::nondet_c_type;
pub use state::{Inputs, MAX_POINTEE_DEPTH, ObjectId, ObjectInfo, ObjectKind, PureCall, State, SymVal};


use crate::expr::{BvOp, ExprId, ExprPool, Sort};
use crate::ir::{BlockId, CastOp, Function, InstKind, IntPredicate, Operand, Program, Terminator, Ty, ValueId};

/// Executes instructions on a [`State`]; holds what does not change along a path.
pub struct Executor<'p> {
    pub program: &'p Program,
    pub pool: &'p mut ExprPool,
    pub inputs: &'p mut Inputs,
}

/// What one step of execution adds to the path condition.
pub type Tests = Vec<ExprId>;

impl<'p> Executor<'p> {
    pub fn new(program: &'p Program, pool: &'p mut ExprPool, inputs: &'p mut Inputs) -> Self {
        Executor { program, pool, inputs }
    }

    fn func(&self) -> &'p Function {
        &self.program.function
    }

    /// The initial state θ_I at the function entry: parameters and globals as input symbols.
    pub fn initial_state(&mut self) -> State {
        let mut st = State::default();
        for p in &self.func().params {
            let v = match p.ty {
                Ty::Int(w) => SymVal::Int(self.inputs.param_symbol(self.pool, &p.name, w)),
                Ty::Ptr => {
                    let obj = self.inputs.param_buffer(self.pool, &p.name);
                    let zero = self.pool.bv(64, 0);
                    SymVal::Ptr { obj, offset: zero }
                }
                _ => SymVal::Unknown,
            };
            st.values.insert(p.value, v);
        }
        // Every global the function refers to exists from the start, so that an unknown call
        // before its first use forgets its contents too.
        for g in &self.program.globals {
            self.inputs.global_object(self.pool, g);
        }
        st.nondet_index = self.pool.bv(64, 0);
        st
    }

    /// The value of an operand in `st`.
    pub fn operand(&mut self, st: &mut State, op: &Operand) -> SymVal {
        match op {
            Operand::Value(v) => st.values.get(v).cloned().unwrap_or_else(|| {
                // Defined on a block not executed on this path (or an argument of an unknown type).
                self.star_of(self.func().value_type(*v))
            }),
            Operand::Int { width: 1, value } => SymVal::Int(self.pool.bool(*value & 1 == 1)),
            Operand::Int { width, value } => SymVal::Int(self.pool.bv(*width, *value)),
            Operand::Global { id, offset } => {
                let obj = self.inputs.global_object(self.pool, self.program.global(*id));
                let offset = self.pool.bv(64, *offset as u64);
                SymVal::Ptr { obj, offset }
            }
            Operand::Null => SymVal::Null,
            Operand::Function(name) => SymVal::Addr(self.inputs.function_address(self.pool, name)),
            Operand::Undef(ty) | Operand::Unknown(ty) => self.star_of(ty),
        }
    }

    /// [`Executor::star_of`] for a value the executor cannot model, recording why (the reasons
    /// of an `unknown` verdict name it). Only integer results are recorded: other values are
    /// unknown anyway and say nothing about the paths.
    pub fn star_because(&mut self, ty: &Ty, cause: impl FnOnce() -> String) -> SymVal {
        if matches!(ty, Ty::Int(_)) {
            self.pool.note_star_cause(cause());
        }
        self.star_of(ty)
    }

    pub fn star_of(&mut self, ty: &Ty) -> SymVal {
        match ty {
            Ty::Int(1) => SymVal::Int(self.pool.star(Sort::Bool)),
            Ty::Int(w) => SymVal::Int(self.pool.star(Sort::Bv(*w))),
            _ => SymVal::Unknown,
        }
    }

    /// Integer view of an operand (⋆ for pointers and unknowns).
    fn int(&mut self, st: &mut State, op: &Operand, ty: &Ty) -> ExprId {
        match self.operand(st, op) {
            SymVal::Int(e) => e,
            _ => match self.star_of(ty) {
                SymVal::Int(e) => e,
                _ => self.pool.star(Sort::Bv(64)),
            },
        }
    }

    fn operand_type(&self, op: &Operand) -> Ty {
        match op {
            Operand::Value(v) => self.func().value_type(*v).clone(),
            Operand::Int { width, .. } => Ty::Int(*width),
            Operand::Undef(t) | Operand::Unknown(t) => t.clone(),
            _ => Ty::Ptr,
        }
    }

    /// Executes the phi nodes of `block` entered from `pred`, in parallel.
    pub fn exec_phis(&mut self, st: &mut State, block: BlockId, pred: Option<BlockId>) {
        let mut assigned = vec![];
        for inst in &self.func().block(block).insts {
            let InstKind::Phi { incoming } = &inst.kind else { continue };
            let val = match pred.and_then(|p| incoming.iter().find(|(b, _)| *b == p)) {
                Some((_, op)) => self.operand(st, op),
                None => self.star_of(&inst.ty),
            };
            assigned.push((inst.result.expect("phi defines a value"), val));
        }
        for (v, val) in assigned {
            st.values.insert(v, val);
        }
    }

    /// Executes the non-phi instructions of `block`, returning the tests they add
    /// (assumptions such as `__VERIFIER_assume`).
    pub fn exec_body(&mut self, st: &mut State, block: BlockId) -> Tests {
        let mut tests = vec![];
        for inst in &self.func().block(block).insts {
            if matches!(inst.kind, InstKind::Phi { .. }) {
                continue;
            }
            let val = if self.func().is_in_cycle(block) && allocates(&inst.kind) {
                // One symbolic object cannot stand for an allocation made on every iteration:
                // its instances have different addresses and contents.
                if let InstKind::Call { args, .. } = &inst.kind {
                    let args: Vec<SymVal> = args.iter().map(|a| self.operand(st, a)).collect();
                    self.unknown_external(st, &args);
                }
                SymVal::Unknown
            } else {
                self.exec_inst(st, &inst.kind, &inst.ty, inst.result, &mut tests)
            };
            if let Some(r) = inst.result {
                st.values.insert(r, val);
            }
        }
        tests
    }

    fn exec_inst(&mut self, st: &mut State, kind: &InstKind, ty: &Ty, result: Option<ValueId>, tests: &mut Tests) -> SymVal {
        match kind {
            InstKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.int(st, lhs, ty), self.int(st, rhs, ty));
                SymVal::Int(self.binary(*op, a, b, ty))
            }
            InstKind::ICmp { pred, lhs, rhs } => {
                let (a, b) = (self.operand(st, lhs), self.operand(st, rhs));
                SymVal::Int(self.compare(*pred, a, b))
            }
            InstKind::Select { cond, then_val, else_val } => {
                let c = self.int(st, cond, &Ty::Int(1));
                let (a, b) = (self.operand(st, then_val), self.operand(st, else_val));
                match (a, b) {
                    (SymVal::Int(x), SymVal::Int(y)) => SymVal::Int(self.pool.ite(c, x, y)),
                    (SymVal::Ptr { obj: o1, offset: x }, SymVal::Ptr { obj: o2, offset: y }) if o1 == o2 => {
                        SymVal::Ptr { obj: o1, offset: self.pool.ite(c, x, y) }
                    }
                    (a, b) if a == b && !matches!(a, SymVal::Int(_)) => a,
                    // Pointers into different objects: the address of the one chosen.
                    (a, b) => match (self.inputs.address_of(self.pool, &a), self.inputs.address_of(self.pool, &b)) {
                        (Some(x), Some(y)) if *ty == Ty::Ptr => {
                            let e = self.pool.ite(c, x, y);
                            self.inputs.pointer_at(self.pool, e)
                        }
                        _ => self.star_of(ty),
                    },
                }
            }
            InstKind::Cast { op, val } => self.cast(st, *op, val, ty),
            InstKind::Phi { .. } => unreachable!("phis are executed on entry"),
            InstKind::Alloca { elem_size, count } => {
                let v = result.expect("alloca defines a value");
                let count = match self.operand(st, count) {
                    SymVal::Int(e) => self.pool.as_const(e),
                    _ => None,
                };
                let size = count.map(|c| c.saturating_mul(*elem_size));
                let name = self.func().value_name(v).to_string();
                let obj = self.inputs.alloca_object(self.pool, v, &name, size);
                SymVal::Ptr { obj, offset: self.pool.bv(64, 0) }
            }
            InstKind::Load { ptr } => {
                let p = self.operand(st, ptr);
                self.load(st, p, ty)
            }
            InstKind::Store { ptr, val, width } => {
                let p = self.operand(st, ptr);
                let v = self.operand(st, val);
                self.store(st, p, v, *width);
                SymVal::Unknown
            }
            InstKind::PtrOffset { base, const_offset, terms } => {
                let b = self.operand(st, base);
                // A pointer into a known object moves its offset; any other pointer its address.
                let (obj, offset) = match b {
                    SymVal::Ptr { obj, offset } => (Some(obj), offset),
                    SymVal::Addr(a) => (None, a),
                    SymVal::Null => (None, self.pool.bv(64, 0)),
                    _ => return SymVal::Unknown,
                };
                let c = self.pool_bv64(*const_offset);
                let mut off = self.pool.bin(BvOp::Add, offset, c);
                for (idx, scale) in terms {
                    let i = self.int(st, idx, &Ty::Int(64));
                    let i = self.index_as_i64(i);
                    let s = self.pool_bv64(*scale);
                    let t = self.pool.bin(BvOp::Mul, i, s);
                    off = self.pool.bin(BvOp::Add, off, t);
                }
                match obj {
                    Some(obj) => SymVal::Ptr { obj, offset: off },
                    None => self.inputs.pointer_at(self.pool, off),
                }
            }
            InstKind::Call { callee, args } => {
                let args: Vec<SymVal> = args.iter().map(|a| self.operand(st, a)).collect();
                self.call(st, callee, &args, ty, result, tests)
            }
            InstKind::Unknown { opcode } => {
                if matches!(opcode.as_str(), "atomicrmw" | "atomiccmpxchg" | "vaarg" | "fence") {
                    st.havoc_all(self.pool, self.inputs);
                }
                self.star_because(ty, || format!("the result of `{opcode}` instructions"))
            }
        }
    }

    fn pool_bv64(&mut self, v: i64) -> ExprId {
        self.pool.bv(64, v as u64)
    }

    /// Sign-extends or truncates an index to 64 bits (GEP indices are signed).
    fn index_as_i64(&mut self, e: ExprId) -> ExprId {
        match self.pool.sort(e) {
            Sort::Bool => self.pool.bool_to_bv(e, 64, false),
            Sort::Bv(w) if w < 64 => self.pool.sext(e, 64),
            Sort::Bv(w) if w > 64 => self.pool.trunc(e, 64),
            _ => e,
        }
    }

    fn binary(&mut self, op: crate::ir::BinOp, a: ExprId, b: ExprId, ty: &Ty) -> ExprId {
        use crate::ir::BinOp as B;
        if matches!(op, B::Shl | B::LShr | B::AShr) && *ty != Ty::Int(1) {
            return self.shift(op, a, b);
        }
        // Division by a constant zero is folded by the compiler to an arbitrary value (it does
        // not trap as a division by a zero register does): ⋆, not the SMT quotient.
        if matches!(op, B::UDiv | B::SDiv | B::URem | B::SRem) && self.pool.as_const(b) == Some(0) {
            return self.pool.star(self.pool.sort(a));
        }
        if *ty == Ty::Int(1) {
            // i1 arithmetic on Booleans.
            return match op {
                B::And | B::Mul => self.pool.and([a, b]),
                B::Or => self.pool.or([a, b]),
                B::Xor | B::Add | B::Sub => self.pool.cmp(IntPredicate::Ne, a, b),
                _ => {
                    let (x, y) = (self.pool.bool_to_bv(a, 1, false), self.pool.bool_to_bv(b, 1, false));
                    let r = self.pool.bin(op, x, y);
                    self.pool.low_bit(r)
                }
            };
        }
        self.pool.bin(op, a, b)
    }

    /// `shl`/`lshr`/`ashr` as the compiled x86-64 code computes them. A count of at least the
    /// width is poison in LLVM: a constant one may be folded to anything (⋆); a variable one
    /// reaches the shift instruction, which masks the count to 5 bits (6 for 64-bit operands;
    /// 8- and 16-bit shifts use the 5-bit mask too), so the SMT shift of the masked count is
    /// exact. Wider operands are ⋆ unless the count is a constant in range.
    fn shift(&mut self, op: crate::ir::BinOp, a: ExprId, b: ExprId) -> ExprId {
        let w = self.pool.width(a);
        if let Some(c) = self.pool.as_const(b) {
            return if c < w as u64 { self.pool.bin(op, a, b) } else { self.pool.star(Sort::Bv(w)) };
        }
        let mask = match w {
            ..=32 => 31,
            33..=64 => 63,
            _ => return self.pool.star(Sort::Bv(w)),
        };
        let m = self.pool.bv(w, mask);
        let count = self.pool.bin(crate::ir::BinOp::And, b, m);
        self.pool.bin(op, a, count)
    }

    /// `icmp` on integers, or on pointers by their addresses. Two pointers into one object
    /// are equal exactly when their offsets are; pointers into different objects differ while
    /// both are strictly inside their objects, but a one-past-the-end pointer may equal the next
    /// object's start, so outside that the (unknown) addresses decide. Two constants the linker
    /// may merge (string literals) may overlap anywhere: their addresses decide.
    fn compare(&mut self, pred: IntPredicate, a: SymVal, b: SymVal) -> ExprId {
        use IntPredicate::*;
        if let (SymVal::Int(x), SymVal::Int(y)) = (&a, &b) {
            return self.pool.cmp(pred, *x, *y);
        }
        if let (SymVal::Ptr { obj: o1, offset: x }, SymVal::Ptr { obj: o2, offset: y }) = (&a, &b) {
            if o1 == o2 && matches!(pred, Eq | Ne) {
                return self.pool.cmp(pred, *x, *y);
            }
        }
        for p in [&a, &b] {
            if let SymVal::Ptr { obj, .. } = p {
                self.inputs.mark_address_compared(*obj);
            }
        }
        // An input pointer compared with a function's address is a function pointer.
        for (p, q) in [(&a, &b), (&b, &a)] {
            if let (SymVal::Ptr { obj, .. }, SymVal::Addr(f)) = (p, q) {
                if self.inputs.function_at_address(*f).is_some() {
                    self.inputs.mark_function_pointer(*obj);
                }
            }
        }
        let (Some(x), Some(y)) = (self.inputs.address_of(self.pool, &a), self.inputs.address_of(self.pool, &b)) else {
            return self.pool.star(Sort::Bool);
        };
        let by_address = self.pool.cmp(pred, x, y);
        match (&a, &b) {
            (SymVal::Ptr { obj: o1, offset: x }, SymVal::Ptr { obj: o2, offset: y }) if o1 != o2 && matches!(pred, Eq | Ne) => {
                let (i1, i2) = (self.inputs.object(*o1), self.inputs.object(*o2));
                if i1.may_share_address && i2.may_share_address {
                    return by_address;
                }
                let (Some(s1), Some(s2)) = (i1.size, i2.size) else {
                    return by_address;
                };
                let (s1, s2) = (self.pool.bv(64, s1), self.pool.bv(64, s2));
                let inside = [self.pool.cmp(Ult, *x, s1), self.pool.cmp(Ult, *y, s2)];
                let inside = self.pool.and(inside);
                let differ = self.pool.bool(pred == Ne);
                self.pool.ite(inside, differ, by_address)
            }
            _ => by_address,
        }
    }

    fn cast(&mut self, st: &mut State, op: CastOp, val: &Operand, ty: &Ty) -> SymVal {
        let src_ty = self.operand_type(val);
        let v = self.operand(st, val);
        match (op, v) {
            (CastOp::ZExt | CastOp::SExt | CastOp::Trunc, SymVal::Int(e)) => {
                let w = ty.int_width().expect("integer cast");
                let out = match (op, src_ty) {
                    (CastOp::Trunc, _) if w == 1 => self.pool.low_bit(e),
                    (CastOp::Trunc, _) => self.pool.trunc(e, w),
                    (_, Ty::Int(1)) => self.pool.bool_to_bv(e, w, op == CastOp::SExt),
                    (CastOp::ZExt, _) => self.pool.zext(e, w),
                    _ => self.pool.sext(e, w),
                };
                SymVal::Int(out)
            }
            (CastOp::BitCast, v) => v,
            // An object's address is an unknown constant; offsets within it are exact, so
            // pointer differences (`p - s`) come out right.
            (CastOp::PtrToInt, p @ (SymVal::Null | SymVal::Ptr { .. } | SymVal::Addr(_))) => {
                if let SymVal::Ptr { obj, .. } = p {
                    // The number may reach code the analysis does not follow.
                    self.inputs.mark_escaped(obj);
                }
                let addr = self.inputs.address_of(self.pool, &p).expect("pointers have addresses");
                match ty.int_width() {
                    Some(1) => SymVal::Int(self.pool.low_bit(addr)),
                    Some(w) if w <= 64 => SymVal::Int(self.pool.resize(addr, w)),
                    _ => self.star_of(ty),
                }
            }
            (CastOp::IntToPtr, SymVal::Int(e)) => match self.pool.sort(e) {
                Sort::Bv(w) if w <= 64 => {
                    let a = self.pool.zext(e, 64);
                    self.inputs.pointer_at(self.pool, a)
                }
                _ => SymVal::Unknown,
            },
            // Addresses are not modelled: the integer value of a pointer is unknown.
            _ => self.star_of(ty),
        }
    }

    /// Whether `bytes` bytes at `offset` certainly leave the object: a constant offset past a
    /// known size. Natively such an access reaches whatever lies next to the object.
    fn out_of_bounds(&self, obj: ObjectId, offset: ExprId, bytes: u32) -> bool {
        match (self.inputs.object(obj).size, self.pool.as_const(offset)) {
            (Some(size), Some(o)) => (o as i64) < 0 || o.saturating_add(bytes as u64) > size,
            _ => false,
        }
    }

    fn load(&mut self, st: &mut State, p: SymVal, ty: &Ty) -> SymVal {
        let SymVal::Ptr { obj, offset } = p else { return self.star_of(ty) };
        let width = if *ty == Ty::Ptr { 64 } else { ty.int_width().unwrap_or(8) };
        if self.out_of_bounds(obj, offset, width.div_ceil(8)) {
            return self.star_of(ty);
        }
        if *ty == Ty::Ptr {
            // Pointers are stored as their addresses (see `store`).
            let mem = st.memory(self.pool, self.inputs, obj);
            let raw = self.pool.load(mem, offset, 64);
            return self.inputs.pointer_at(self.pool, raw);
        }
        let Ty::Int(w) = ty else { return SymVal::Unknown };
        let bytes = w.div_ceil(8);
        if bytes > 8 {
            return self.star_of(ty);
        }
        let mem = st.memory(self.pool, self.inputs, obj);
        let raw = self.pool.load(mem, offset, bytes * 8);
        SymVal::Int(match *w {
            1 => self.pool.low_bit(raw),
            w if w == bytes * 8 => raw,
            w => self.pool.trunc(raw, w),
        })
    }

    fn store(&mut self, st: &mut State, p: SymVal, v: SymVal, width: u32) {
        match p {
            SymVal::Ptr { obj, offset } if self.out_of_bounds(obj, offset, width.div_ceil(8)) => {
                st.havoc_all(self.pool, self.inputs);
            }
            SymVal::Ptr { obj, offset } => {
                let bytes = width.div_ceil(8);
                let value = match v {
                    SymVal::Int(e) if bytes <= 8 => {
                        let e = if self.pool.sort(e) == Sort::Bool { self.pool.bool_to_bv(e, 8, false) } else { e };
                        Some(self.pool.resize(e, bytes * 8))
                    }
                    // A pointer is stored as its address; loading it back recovers the object.
                    p @ (SymVal::Null | SymVal::Ptr { .. } | SymVal::Addr(_)) if bytes == 8 => {
                        if let SymVal::Ptr { obj: stored, .. } = p {
                            // The stored address may be used by code we do not follow.
                            self.inputs.mark_escaped(stored);
                        }
                        self.inputs.address_of(self.pool, &p)
                    }
                    other => {
                        if let SymVal::Ptr { obj: stored, .. } = other {
                            self.inputs.mark_escaped(stored);
                        }
                        None
                    }
                };
                let mem = st.memory(self.pool, self.inputs, obj);
                let new = match value {
                    Some(value) => self.pool.store(mem, offset, value, bytes * 8),
                    None => self.pool.star(Sort::MEMORY),
                };
                st.set_memory(obj, new);
            }
            // A store through an unknown pointer may write any object.
            SymVal::Unknown | SymVal::Addr(_) => st.havoc_all(self.pool, self.inputs),
            // Storing through null crashes natively: no run continues past it.
            SymVal::Null | SymVal::Int(_) => {}
        }
    }

    /// The tests of the edge `from → to`: the branch or switch condition that selects it.
    pub fn edge_tests(&mut self, st: &mut State, from: BlockId, to: BlockId) -> Tests {
        match &self.func().block(from).term {
            Terminator::Branch { cond, then_bb, else_bb } if then_bb != else_bb => {
                // Staying in bounds (the other way is a store's clobber site, see
                // `load::bounds`): the fact is left out. It holds on every run that goes on,
                // but a loop that fills an array already bounds its index by its own test, and
                // the repeated bound only made Z3's search slower (wp_hello: no model in 20 s
                // where it took 1 s). Leaving a test out keeps the APC a necessary condition.
                let other = if *then_bb == to { *else_bb } else { *then_bb };
                if self.program.is_clobber_site(other) {
                    return vec![];
                }
                let c = self.int(st, cond, &Ty::Int(1));
                vec![if *then_bb == to { c } else { self.pool.not(c) }]
            }
            Terminator::Switch { value, default, cases } => {
                let ty = self.operand_type(value);
                let v = self.int(st, value, &ty);
                let w = ty.int_width().unwrap_or(64);
                let mut disj = vec![];
                for (c, t) in cases {
                    if *t == to {
                        let c = self.pool.bv(w, *c);
                        disj.push(self.pool.eq(v, c));
                    }
                }
                if *default == to {
                    let mut conj = vec![];
                    for (c, _) in cases {
                        let c = self.pool.bv(w, *c);
                        conj.push(self.pool.cmp(IntPredicate::Ne, v, c));
                    }
                    disj.push(self.pool.and(conj));
                }
                vec![self.pool.or(disj)]
            }
            _ => vec![],
        }
    }
}

/// Whether an instruction allocates an object (`alloca`, `malloc`, `calloc`, `realloc`).
fn allocates(kind: &InstKind) -> bool {
    match kind {
        InstKind::Alloca { .. } => true,
        InstKind::Call { callee: crate::ir::Callee::Direct(n), .. } => matches!(n.as_str(), "malloc" | "calloc" | "realloc"),
        _ => false,
    }
}
