//! Where a pointer points: the object it can be followed back to (an `alloca`, a global, a heap
//! block), that object's size, the byte offset into it computed beside the pointer, and which
//! heap blocks may have been freed before an access.

use super::super::llvm;
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMOpcode, LLVMTypeKind};
use super::slots::Slots;

/// The size in bytes of the object `base` is (an `alloca` of a constant count, or a global),
/// if it is one.
pub(super) fn object_size(td: llvm_sys::target::LLVMTargetDataRef, base: llvm::Value) -> Option<u64> {
    if llvm::is_a_global_variable(base) {
        if llvm::initializer(base).is_none() {
            // Defined elsewhere (`extern int a[];`): its size is not this module's.
            return None;
        }
        let t = llvm::global_value_type(base);
        return llvm::is_sized(t).then(|| llvm::alloc_size(td, t));
    }
    if unsafe { !LLVMIsACallInst(base).is_null() } {
        // A heap block of a constant size (`malloc(16)`, `calloc(4, 4)`).
        let callee = unsafe { LLVMGetCalledValue(base) };
        if callee.is_null() || !llvm::is_a_function(callee) {
            return None;
        }
        let arg = |k: u32| Some(llvm::operand(base, k)).filter(|&a| llvm::is_a_constant_int(a)).map(llvm::const_int_zext);
        return match allocation_size_args(base)? {
            (n, None) => arg(n),
            (a, Some(b)) => arg(a)?.checked_mul(arg(b)?),
        };
    }
    let is_alloca = unsafe { !LLVMIsAAllocaInst(base).is_null() };
    if !is_alloca {
        return None;
    }
    let count = llvm::operand(base, 0);
    let t = llvm::allocated_type(base);
    if !llvm::is_a_constant_int(count) || !llvm::is_sized(t) {
        return None;
    }
    llvm::alloc_size(td, t).checked_mul(llvm::const_int_zext(count))
}

/// The size of an `alloca` of a variable count (`char buf[n]`, `alloca(n)`): the count, and
/// the size of one element.
pub(super) fn dynamic_size(td: llvm_sys::target::LLVMTargetDataRef, base: llvm::Value) -> Option<Bytes> {
    if unsafe { !LLVMIsACallInst(base).is_null() } {
        // A heap block of a size the program computes (`malloc(n)`, `calloc(n, 4)`).
        let (a, b) = allocation_size_args(base)?;
        let (a, b) = (llvm::operand(base, a), b.map(|b| llvm::operand(base, b)));
        if !is_int64(a) || !b.is_none_or(is_int64) {
            return None;
        }
        return match b {
            None => Some(Bytes::Count(a, 1)),
            Some(b) if llvm::is_a_constant_int(b) => Some(Bytes::Count(a, llvm::const_int_zext(b))),
            Some(b) if llvm::is_a_constant_int(a) => Some(Bytes::Count(b, llvm::const_int_zext(a))),
            Some(b) => Some(Bytes::Product(a, b)),
        };
    }
    if unsafe { LLVMIsAAllocaInst(base).is_null() } {
        return None;
    }
    let count = llvm::operand(base, 0);
    let t = llvm::allocated_type(base);
    (!llvm::is_a_constant_int(count) && llvm::is_sized(t) && is_int64(count)).then(|| Bytes::Count(count, llvm::alloc_size(td, t)))
}

/// The arguments of an allocator's call that give the block's size: one (`malloc(n)`,
/// `realloc(p, n)`) or two multiplied (`calloc(n, size)`).
pub(super) fn allocation_size_args(call: llvm::Value) -> Option<(u32, Option<u32>)> {
    let callee = unsafe { LLVMGetCalledValue(call) };
    if callee.is_null() || !llvm::is_a_function(callee) {
        return None;
    }
    let (a, b) = match llvm::value_name(callee).as_str() {
        "malloc" => (0, None),
        "calloc" => (0, Some(1)),
        "realloc" | "aligned_alloc" => (1, None),
        _ => return None,
    };
    (b.unwrap_or(a) < llvm::call_arg_count(call)).then_some((a, b))
}

/// An object's size in bytes: a constant, `count · element` with a count the program computes,
/// or the product of two values it computes (`calloc(n, m)`).
#[derive(Clone, Copy)]
pub(super) enum Bytes {
    Constant(i64),
    Count(llvm::Value, u64),
    Product(llvm::Value, llvm::Value),
}

pub(super) fn is_gep(v: llvm::Value) -> bool {
    let instruction = unsafe { !LLVMIsAGetElementPtrInst(v).is_null() };
    instruction || (llvm::is_a_constant_expr(v) && llvm::const_expr_opcode(v) == LLVMOpcode::LLVMGetElementPtr)
}

/// The value of an integer constant, sign-extended (`None`: not a constant of at most 64 bits).
pub(super) fn constant_of(v: llvm::Value) -> Option<i64> {
    if !llvm::is_a_constant_int(v) {
        return None;
    }
    let w = llvm::int_width(llvm::type_of(v));
    (1..=64).contains(&w).then(|| ((llvm::const_int_zext(v) << (64 - w)) as i64) >> (64 - w))
}

/// What the pass knows of a pointer value: which object it points into.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    /// Not known yet (the fixpoint has not reached it).
    Unseen,
    /// Into this object (an `alloca`, a global, a constant-size heap block), on every path.
    Object(llvm::Value),
    /// Into one of several objects, which one depending on the path (`c ? a : b`); on some
    /// paths perhaps into memory the pass does not follow (`c ? a : param`).
    Several,
    /// Into memory the pass does not follow (parameters, pointers loaded from memory other
    /// than the function's own locals, pointers from calls).
    Unknown,
    /// Made from an integer (`inttoptr`) or by inline assembly, on some path: anywhere,
    /// a neighbour of any object included.
    Forged,
}

impl Origin {
    pub(super) fn join(self, other: Origin) -> Origin {
        match (self, other) {
            (Origin::Unseen, o) | (o, Origin::Unseen) => o,
            (Origin::Forged, _) | (_, Origin::Forged) => Origin::Forged,
            (Origin::Object(a), Origin::Object(b)) if a == b => self,
            (Origin::Object(_) | Origin::Several, Origin::Object(_) | Origin::Several | Origin::Unknown) | (Origin::Unknown, Origin::Object(_) | Origin::Several) => Origin::Several,
            _ => Origin::Unknown,
        }
    }
}

/// The object every pointer of one function points into, and, on demand, its byte offset
/// into that object as an `i64` computed beside it: `0` at the object, `+ c + Σ index·scale`
/// at a `getelementptr`, a phi of offsets beside a phi of pointers (a pointer walked by a
/// loop becomes an integer walked by it, which the loop summaries count), a select beside a
/// select. Offsets wrap as the machine's addresses do.
pub(super) struct Places {
    td: llvm_sys::target::LLVMTargetDataRef,
    origin: std::collections::HashMap<llvm::Value, Origin>,
    offsets: std::collections::HashMap<llvm::Value, llvm::Value>,
    i64t: LLVMTypeRef,
    builder: LLVMBuilderRef,
    /// The writes into the function's locals, for the pointers loaded from them (`None` while
    /// the first fixpoint, which does not follow loads, runs).
    slots: Option<Slots>,
    /// Which blocks dominate which, and which run at most once a call (see [`Places::made_before`]).
    once: Once,
    /// Set when the function stores a pointer into a local or a global where loads are not
    /// followed: pointers loaded from there are forged (see [`Places::frame_pointers_stored`]).
    frame_pointers_out_of_view: bool,
    /// Set when it stores one anywhere or puts one into an aggregate value: pointers taken out
    /// of aggregates are forged.
    frame_pointers_in_aggregates: bool,
    /// For pointers into one of several objects: the offset into the one it points into on the
    /// path taken, and that object's size.
    several: std::collections::HashMap<llvm::Value, (llvm::Value, llvm::Value)>,
    /// The sizes of objects of computed sizes, built right after their allocation.
    sizes: std::collections::HashMap<llvm::Value, llvm::Value>,
}

impl Places {
    pub(super) fn new(td: llvm_sys::target::LLVMTargetDataRef, m: LLVMModuleRef, f: llvm::Value) -> Places {
        let ctx = unsafe { LLVMGetModuleContext(m) };
        let mut places = Places {
            td,
            origin: Default::default(),
            offsets: Default::default(),
            i64t: unsafe { LLVMInt64TypeInContext(ctx) },
            builder: unsafe { LLVMCreateBuilderInContext(ctx) },
            slots: None,
            once: Once::new(f),
            frame_pointers_out_of_view: false,
            frame_pointers_in_aggregates: false,
            several: Default::default(),
            sizes: Default::default(),
        };
        let pointers: Vec<llvm::Value> = llvm::blocks(f)
            .into_iter()
            .flat_map(llvm::instructions)
            .filter(|&i| llvm::type_kind(llvm::type_of(i)) == LLVMTypeKind::LLVMPointerTypeKind)
            .collect();
        // First without following loads: which locals keep their address in view, and what
        // is written into them. Then again from scratch, loads from those locals followed.
        places.settle(&pointers);
        places.slots = Some(Slots::new(td, f, &|v| places.get(v)));
        places.origin.clear();
        places.settle(&pointers);
        // A third time: with the writes through loaded pointers attributed to the objects they
        // point into (`gs->buf = malloc(8)`, `gs` loaded: a pointer stored into that block),
        // and when a pointer into a local or a global went where loads are not followed,
        // every pointer loaded from there forged (it may be that one).
        let (out_of_view, anywhere) = places.frame_pointers_stored(f);
        (places.frame_pointers_out_of_view, places.frame_pointers_in_aggregates) = (out_of_view, anywhere);
        let slots = Slots::new(td, f, &|v| places.get(v));
        if slots.writes() != places.slots.as_ref().map_or(0, Slots::writes) || out_of_view || anywhere {
            places.slots = Some(slots);
            places.origin.clear();
            places.settle(&pointers);
        }
        places
    }

    /// Whether `v` may point into a local or a writable global (an object the run's stack or
    /// data holds, whose neighbours are other locals and globals), or anywhere (forged). Not a
    /// string literal: a write through a pointer into it faults.
    fn may_point_into_frame_or_globals(&self, v: llvm::Value) -> bool {
        self.leaves(v).into_iter().any(|o| match o {
            Origin::Object(o) => (llvm::is_a_global_variable(o) && !llvm::is_global_constant(o)) || unsafe { !LLVMIsAAllocaInst(o).is_null() },
            Origin::Forged => true,
            _ => false,
        })
    }

    /// Whether `f` stores a pointer into a local or a global where loads are not followed
    /// (memory out of view, through a pointer not followed, a heap block's), and whether it
    /// stores one anywhere or puts one into an aggregate value (`insertvalue`, as a struct
    /// returned by value is built).
    fn frame_pointers_stored(&self, f: llvm::Value) -> (bool, bool) {
        let (mut out_of_view, mut anywhere) = (false, false);
        for i in llvm::blocks(f).into_iter().flat_map(llvm::instructions) {
            let (value, address) = match llvm::opcode(i) {
                LLVMOpcode::LLVMStore => (llvm::operand(i, 0), Some(llvm::operand(i, 1))),
                LLVMOpcode::LLVMInsertValue => (llvm::operand(i, 1), None),
                _ => continue,
            };
            if llvm::type_kind(llvm::type_of(value)) != LLVMTypeKind::LLVMPointerTypeKind || !self.may_point_into_frame_or_globals(value) {
                continue;
            }
            anywhere = true;
            let followed = match (address.map(|a| self.get(a)), &self.slots) {
                (Some(Origin::Object(local)), Some(slots)) => slots.in_view(local),
                _ => false,
            };
            out_of_view |= !followed;
        }
        (out_of_view, anywhere)
    }

    /// A fixpoint from `Unseen` upwards. A step alone is not monotone (a load through a
    /// pointer that moved from one object to several is forged, and a loaded pointer forged
    /// makes the next load's address unknown), so each value is joined with the one it had:
    /// values only rise, the lattice is finite, and a cycle of loads (a list walked on the
    /// stack, a ring of nodes) settles in a few rounds.
    fn settle(&mut self, pointers: &[llvm::Value]) {
        loop {
            let mut changed = false;
            for &p in pointers {
                let old = self.origin.get(&p).copied().unwrap_or(Origin::Unseen);
                let now = old.join(self.step(p));
                if old != now {
                    self.origin.insert(p, now);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The origin of pointer `load` loaded from memory: from a local that keeps its address in
    /// view, where the pointers stored into it point ([`Slots`]), when its offset can be
    /// computed there (one object, a global or a local made before it); forged when it may
    /// point into an object of the function but its offset cannot be computed (one of several
    /// objects, a block allocated in a loop, a local out of view that got such a pointer);
    /// else unknown.
    fn loaded(&self, load: llvm::Value) -> Origin {
        let address = self.get(llvm::operand(load, 0));
        if self.slots.is_some() && address == Origin::Several && self.objects_of(llvm::operand(load, 0)).iter().any(|&o| unsafe { !LLVMIsAAllocaInst(o).is_null() }) {
            // From one of several places, one of them a local (`*(c ? &p : &q)`): which
            // pointer, the pass cannot say.
            return Origin::Forged;
        }
        let not_followed = if self.frame_pointers_out_of_view { Origin::Forged } else { Origin::Unknown };
        let (Some(slots), Origin::Object(local)) = (&self.slots, address) else { return not_followed };
        if !slots.in_view(local) && self.frame_pointers_out_of_view {
            return Origin::Forged;
        }
        // Into an object whose offset cannot be computed here (one of several, or one made
        // anew in a loop): forged, as no test can be built for it.
        match slots.loaded(self.td, load, local, &|v| self.get(v)) {
            Origin::Object(o) if !self.made_before(o, load) => Origin::Forged,
            Origin::Several => Origin::Forged,
            origin => origin,
        }
    }

    /// The origin of the pointer call `call` returns: into the object of the argument a C
    /// library function returns a pointer into (`strchr`, `strcpy`), when its offset can be
    /// computed there; forged when a function the pass does not see into (one not inlined, a
    /// call through a pointer) was given a pointer into an object (it may return any pointer
    /// near it); else unknown.
    fn returned(&self, call: llvm::Value) -> Origin {
        let callee = llvm::called_value(call);
        let args = llvm::call_arg_count(call);
        if llvm::is_a_function(callee) && llvm::is_declaration(callee) && super::super::recursion::cut_of(&llvm::value_name(callee)).is_none() {
            let name = llvm::value_name(callee);
            let Some(k) = super::library::returns_into(&name).filter(|&k| k < args) else {
                // A function of the C library not known to return into an argument nor fresh
                // memory (`bsearch`, `strtok`, `dirname`) given a pointer into an object: it
                // may return a pointer into it, at an offset the pass cannot compute.
                // So does an intrinsic (`llvm.ptr.annotation` returns its argument).
                let given = (0..args).any(|k| self.may_point_into_writable(llvm::operand(call, k)));
                let library = name.starts_with("llvm.") || super::super::clib::c_library_defines(&name) != Some(false);
                return if given && library && !super::library::returns_fresh(&name) { Origin::Forged } else { Origin::Unknown };
            };
            return match self.get(llvm::operand(call, k)) {
                Origin::Object(o) if self.made_before(o, call) => Origin::Object(o),
                Origin::Object(_) | Origin::Several | Origin::Forged => Origin::Forged,
                _ => Origin::Unknown,
            };
        }
        let given = (0..args).any(|k| matches!(self.get(llvm::operand(call, k)), Origin::Object(_) | Origin::Several | Origin::Forged));
        if given {
            Origin::Forged
        } else {
            Origin::Unknown
        }
    }

    /// Whether object `o`'s address is available at instruction `i`, as the address of the one
    /// object of that name: a global, or a local or heap block allocated before `i` on every
    /// path (its allocation dominates `i`) by an instruction that runs at most once a call (in
    /// no loop). In a loop, a pointer loaded later may point into the block of an earlier
    /// iteration, and its offset from this iteration's would say nothing.
    fn made_before(&self, o: llvm::Value, i: llvm::Value) -> bool {
        if llvm::is_a_global_variable(o) {
            return true;
        }
        if unsafe { LLVMIsAInstruction(o).is_null() } {
            return false;
        }
        let (at, here) = unsafe { (LLVMGetInstructionParent(o), LLVMGetInstructionParent(i)) };
        if !self.once.runs_once(at) {
            return false;
        }
        if at == here {
            return llvm::instructions(at).into_iter().take_while(|&x| x != i).any(|x| x == o);
        }
        self.once.dominates(at, here)
    }

    /// The origin of `v` from its operands' current ones.
    fn step(&self, v: llvm::Value) -> Origin {
        if unsafe { LLVMIsAInstruction(v).is_null() } {
            return self.constant_origin(v);
        }
        match llvm::opcode(v) {
            LLVMOpcode::LLVMGetElementPtr if gep_byte_offset(self.td, v).is_some() => self.get(llvm::operand(v, 0)),
            LLVMOpcode::LLVMPHI => llvm::incoming(v).into_iter().fold(Origin::Unseen, |o, (x, _)| o.join(self.get(x))),
            LLVMOpcode::LLVMSelect => self.get(llvm::operand(v, 1)).join(self.get(llvm::operand(v, 2))),
            LLVMOpcode::LLVMAlloca | LLVMOpcode::LLVMCall if object_size(self.td, v).is_some() || dynamic_size(self.td, v).is_some() => Origin::Object(v),
            // An address made from an integer or by inline assembly may point anywhere.
            LLVMOpcode::LLVMIntToPtr => Origin::Forged,
            LLVMOpcode::LLVMCall if llvm::is_a_inline_asm(llvm::called_value(v)) => Origin::Forged,
            // The frame's own addresses (`__builtin_frame_address`), a pointer with its low
            // bits masked (`__builtin_align_down`): anywhere near an object.
            LLVMOpcode::LLVMCall
                if llvm::called_function_name(v).is_some_and(|n| ["llvm.frameaddress", "llvm.returnaddress", "llvm.addressofreturnaddress", "llvm.stacksave", "llvm.sponentry", "llvm.ptrmask", "llvm.eh.dwarf.cfa"].iter().any(|p| n.starts_with(p))) =>
            {
                Origin::Forged
            }
            LLVMOpcode::LLVMLoad => self.loaded(v),
            // A pointer taken out of an aggregate value (a struct returned by value).
            LLVMOpcode::LLVMExtractValue if self.frame_pointers_in_aggregates => Origin::Forged,
            LLVMOpcode::LLVMCall => self.returned(v),
            _ => Origin::Unknown,
        }
    }

    pub(super) fn get(&self, v: llvm::Value) -> Origin {
        if unsafe { LLVMIsAInstruction(v).is_null() } {
            return self.constant_origin(v);
        }
        self.origin.get(&v).copied().unwrap_or(Origin::Unseen)
    }

    /// A global with a known size, or a constant `getelementptr` into one.
    fn constant_origin(&self, v: llvm::Value) -> Origin {
        if llvm::is_a_global_variable(v) && object_size(self.td, v).is_some() {
            return Origin::Object(v);
        }
        if is_gep(v) && gep_byte_offset(self.td, v).is_some() {
            return self.constant_origin(llvm::operand(v, 0));
        }
        if llvm::is_a_constant_expr(v) && llvm::const_expr_opcode(v) == LLVMOpcode::LLVMIntToPtr {
            return Origin::Forged;
        }
        Origin::Unknown
    }

    /// The object `p` points into and its offset into it (`None`: not known).
    pub(super) fn offset(&mut self, p: llvm::Value) -> Option<(llvm::Value, llvm::Value)> {
        let Origin::Object(object) = self.get(p) else { return None };
        Some((object, self.materialise(p, object)))
    }

    fn materialise(&mut self, p: llvm::Value, object: llvm::Value) -> llvm::Value {
        if p == object {
            return self.constant(0);
        }
        if let Some(&o) = self.offsets.get(&p) {
            return o;
        }
        let is_instruction = unsafe { !LLVMIsAInstruction(p).is_null() };
        if !is_instruction {
            // A constant GEP (or a chain of them) on a global: a constant offset.
            let mut total = 0i64;
            let mut q = p;
            while q != object {
                let (c, _) = gep_byte_offset(self.td, q).expect("a constant GEP the fixpoint followed");
                total = total.wrapping_add(c);
                q = llvm::operand(q, 0);
            }
            return self.constant(total);
        }
        if self.get(p) != Origin::Object(object) {
            // An incoming value of an unreachable block the fixpoint never reached.
            return self.constant(0);
        }
        match llvm::opcode(p) {
            LLVMOpcode::LLVMPHI => unsafe {
                LLVMPositionBuilderBefore(self.builder, p);
                let phi = LLVMBuildPhi(self.builder, self.i64t, c"apc.off".as_ptr());
                // Before its incoming values: a loop's phi is among them.
                self.offsets.insert(p, phi);
                for (x, b) in llvm::incoming(p) {
                    let mut v = [self.materialise(x, object)];
                    let mut b = [b];
                    LLVMAddIncoming(phi, v.as_mut_ptr(), b.as_mut_ptr(), 1);
                }
                phi
            },
            LLVMOpcode::LLVMSelect => {
                let (a, b) = (self.materialise(llvm::operand(p, 1), object), self.materialise(llvm::operand(p, 2), object));
                let o = unsafe {
                    self.position_after(p);
                    LLVMBuildSelect(self.builder, llvm::operand(p, 0), a, b, c"apc.off".as_ptr())
                };
                self.offsets.insert(p, o);
                o
            }
            LLVMOpcode::LLVMLoad | LLVMOpcode::LLVMCall => {
                // A pointer loaded from memory or returned by a call: its address minus its
                // object's.
                let o = unsafe {
                    self.position_after(p);
                    let address = LLVMBuildPtrToInt(self.builder, p, self.i64t, c"apc.addr".as_ptr());
                    let base = LLVMBuildPtrToInt(self.builder, object, self.i64t, c"apc.base".as_ptr());
                    LLVMBuildSub(self.builder, address, base, c"apc.off".as_ptr())
                };
                self.offsets.insert(p, o);
                o
            }
            _ => {
                // A getelementptr: the base's offset plus what it adds.
                let base = self.materialise(llvm::operand(p, 0), object);
                let o = self.gep_offset(p, base);
                self.offsets.insert(p, o);
                o
            }
        }
    }

    /// The offset of getelementptr `gep`, built after it, from its base's `base`.
    fn gep_offset(&self, gep: llvm::Value, base: llvm::Value) -> llvm::Value {
        let (c, terms) = gep_byte_offset(self.td, gep).expect("a GEP the fixpoint followed");
        unsafe {
            self.position_after(gep);
            let mut o = base;
            if c != 0 {
                o = LLVMBuildAdd(self.builder, o, self.constant(c), c"apc.off".as_ptr());
            }
            for (index, scale) in terms {
                let wide = to_i64(self.builder, index, true);
                let scaled = if scale == 1 { wide } else { LLVMBuildMul(self.builder, wide, self.constant(scale), c"apc.idx".as_ptr()) };
                o = LLVMBuildAdd(self.builder, o, scaled, c"apc.off".as_ptr());
            }
            o
        }
    }

    /// For `p` into one of several objects (`c ? a : b`, a phi of two arrays): its offset into
    /// the one it points into on the path taken, and that object's size, both `i64`s computed
    /// beside it (an offset phi and a size phi beside a pointer phi). On a path where it points
    /// into memory the pass does not follow, the size is the largest `i64`: not checked there.
    pub(super) fn offset_and_size(&mut self, p: llvm::Value) -> Option<(llvm::Value, llvm::Value)> {
        (self.get(p) == Origin::Several).then(|| self.materialise_several(p))
    }

    /// The origins `p` is made of, through the phis, selects and getelementptrs of a pointer
    /// into one of several objects: each object, and `Unknown` or `Forged` for memory the pass
    /// does not follow (a pointer loaded or returned, a parameter, a forged one).
    fn leaves(&self, p: llvm::Value) -> Vec<Origin> {
        let mut leaves = vec![];
        let mut seen = std::collections::HashSet::new();
        let mut work = vec![p];
        while let Some(q) = work.pop() {
            if !seen.insert(q) {
                continue;
            }
            match self.get(q) {
                Origin::Several => match llvm::opcode(q) {
                    LLVMOpcode::LLVMPHI => work.extend(llvm::incoming(q).into_iter().map(|(x, _)| x)),
                    LLVMOpcode::LLVMSelect => work.extend([llvm::operand(q, 1), llvm::operand(q, 2)]),
                    LLVMOpcode::LLVMGetElementPtr => work.push(llvm::operand(q, 0)),
                    _ => leaves.push(Origin::Unknown),
                },
                Origin::Unseen => {}
                origin => leaves.push(origin),
            }
        }
        leaves
    }

    /// Whether `p` may point into an object a write can reach: one that is not a constant
    /// global (a string literal: natively read-only, a write there faults), or anywhere.
    pub(super) fn may_point_into_writable(&self, p: llvm::Value) -> bool {
        self.leaves(p).into_iter().any(|o| match o {
            Origin::Object(o) => !(llvm::is_a_global_variable(o) && llvm::is_global_constant(o)),
            Origin::Forged => true,
            _ => false,
        })
    }

    /// The objects `p` may point into (those the pass follows).
    pub(super) fn objects_of(&self, p: llvm::Value) -> Vec<llvm::Value> {
        let mut objects: Vec<llvm::Value> = self.leaves(p).into_iter().filter_map(|o| if let Origin::Object(o) = o { Some(o) } else { None }).collect();
        objects.sort();
        objects.dedup();
        objects
    }

    /// Whether `p` may point, on some path, into memory the pass does not follow (a pointer
    /// loaded, returned, a parameter, a forged one): the objects of [`Places::objects_of`] are
    /// then not all it may point into.
    pub(super) fn may_point_elsewhere(&self, p: llvm::Value) -> bool {
        self.leaves(p).into_iter().any(|o| matches!(o, Origin::Unknown | Origin::Forged))
    }

    /// The heap blocks of function `f` whose address leaves what the pass follows: stored into
    /// memory, passed to a call, returned, or turned into an integer. A pointer the pass does
    /// not follow may point into them.
    pub(super) fn escaped_heap_blocks(&self, f: llvm::Value) -> Vec<llvm::Value> {
        let mut out = vec![];
        for i in llvm::blocks(f).into_iter().flat_map(llvm::instructions) {
            let leaving: Vec<llvm::Value> = match llvm::opcode(i) {
                LLVMOpcode::LLVMStore => vec![llvm::operand(i, 0)],
                LLVMOpcode::LLVMCall => {
                    let callee = llvm::called_value(i);
                    if llvm::is_a_function(callee) && llvm::value_name(callee) == "free" {
                        continue;
                    }
                    (0..llvm::call_arg_count(i)).map(|k| llvm::operand(i, k)).collect()
                }
                LLVMOpcode::LLVMRet | LLVMOpcode::LLVMPtrToInt if llvm::num_operands(i) > 0 => vec![llvm::operand(i, 0)],
                _ => continue,
            };
            for v in leaving {
                if llvm::type_kind(llvm::type_of(v)) == LLVMTypeKind::LLVMPointerTypeKind {
                    out.extend(self.objects_of(v).into_iter().filter(|&o| unsafe { !LLVMIsACallInst(o).is_null() }));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    fn materialise_several(&mut self, p: llvm::Value) -> (llvm::Value, llvm::Value) {
        if let Some(&pair) = self.several.get(&p) {
            return pair;
        }
        match self.get(p) {
            Origin::Object(o) => (self.materialise(p, o), self.size_of(o)),
            Origin::Several if llvm::opcode(p) == LLVMOpcode::LLVMPHI => unsafe {
                LLVMPositionBuilderBefore(self.builder, p);
                let offset = LLVMBuildPhi(self.builder, self.i64t, c"apc.off".as_ptr());
                let size = LLVMBuildPhi(self.builder, self.i64t, c"apc.size".as_ptr());
                // Before its incoming values: a loop's phi is among them.
                self.several.insert(p, (offset, size));
                for (x, b) in llvm::incoming(p) {
                    let (o, n) = self.materialise_several(x);
                    for (phi, v) in [(offset, o), (size, n)] {
                        let (mut v, mut b) = ([v], [b]);
                        LLVMAddIncoming(phi, v.as_mut_ptr(), b.as_mut_ptr(), 1);
                    }
                }
                (offset, size)
            },
            Origin::Several if llvm::opcode(p) == LLVMOpcode::LLVMSelect => {
                let ((oa, na), (ob, nb)) = (self.materialise_several(llvm::operand(p, 1)), self.materialise_several(llvm::operand(p, 2)));
                let pair = unsafe {
                    self.position_after(p);
                    let c = llvm::operand(p, 0);
                    (LLVMBuildSelect(self.builder, c, oa, ob, c"apc.off".as_ptr()), LLVMBuildSelect(self.builder, c, na, nb, c"apc.size".as_ptr()))
                };
                self.several.insert(p, pair);
                pair
            }
            Origin::Several if llvm::opcode(p) == LLVMOpcode::LLVMGetElementPtr => {
                let (base, size) = self.materialise_several(llvm::operand(p, 0));
                let pair = (self.gep_offset(p, base), size);
                self.several.insert(p, pair);
                pair
            }
            // Memory the pass does not follow, or a block no run reaches: not checked.
            _ => (self.constant(0), self.constant(i64::MAX)),
        }
    }

    /// The size of object `o` as an `i64`: a constant, or computed right after the allocation
    /// from the size the program gave it (the largest `i64`, not checked, when neither).
    fn size_of(&mut self, o: llvm::Value) -> llvm::Value {
        if let Some(n) = object_size(self.td, o).and_then(|n| i64::try_from(n).ok()) {
            return self.constant(n);
        }
        if let Some(&n) = self.sizes.get(&o) {
            return n;
        }
        let n = match dynamic_size(self.td, o) {
            Some(bytes) => unsafe {
                self.position_after(o);
                match bytes {
                    Bytes::Constant(n) => self.constant(n),
                    Bytes::Count(count, element) => {
                        let count = to_i64(self.builder, count, false);
                        LLVMBuildMul(self.builder, count, self.constant(element as i64), c"apc.size".as_ptr())
                    }
                    // A product that wraps is smaller than the block: stricter, not wrong.
                    Bytes::Product(a, b) => {
                        let (a, b) = (to_i64(self.builder, a, false), to_i64(self.builder, b, false));
                        LLVMBuildMul(self.builder, a, b, c"apc.size".as_ptr())
                    }
                }
            },
            None => self.constant(i64::MAX),
        };
        self.sizes.insert(o, n);
        n
    }

    /// Positions the builder right after instruction `i` (after the block's phis when `i` is one).
    unsafe fn position_after(&self, i: llvm::Value) {
        let next = if llvm::opcode(i) == LLVMOpcode::LLVMPHI { llvm::get_first_non_phi(LLVMGetInstructionParent(i)) } else { LLVMGetNextInstruction(i) };
        LLVMPositionBuilderBefore(self.builder, next);
    }

    fn constant(&self, c: i64) -> llvm::Value {
        unsafe { LLVMConstInt(self.i64t, c as u64, 1) }
    }
}

impl Drop for Places {
    fn drop(&mut self) {
        unsafe { LLVMDisposeBuilder(self.builder) };
    }
}

/// The byte offset a GEP instruction or constant expression adds to its base (any number of
/// variable indices).
pub(super) fn gep_byte_offset(td: llvm_sys::target::LLVMTargetDataRef, gep: llvm::Value) -> Option<(i64, Vec<(llvm::Value, i64)>)> {
    let indices: Vec<llvm::Value> = (1..llvm::num_operands(gep)).map(|k| llvm::operand(gep, k)).collect();
    let (c, terms) = llvm::gep_byte_offset(td, llvm::gep_source_type(gep), &indices)?;
    terms.iter().all(|(i, _)| llvm::type_kind(llvm::type_of(*i)) == LLVMTypeKind::LLVMIntegerTypeKind).then_some((c, terms))
}

/// The heap blocks a function frees, and where that may have happened: an access to a block
/// after its `free` (or a `realloc` that may have moved it) reads or writes whatever block
/// `malloc` handed out at that address since. Such accesses are clobber sites too.
pub(super) struct AfterFree {
    /// Each freed block, with the blocks of code reachable from the `free` (its own included
    /// when a loop leads back to it) and the `free` call itself.
    frees: Vec<(llvm::Value, llvm::Value, std::collections::HashSet<LLVMBasicBlockRef>)>,
}

impl AfterFree {
    pub(super) fn new(f: llvm::Value, places: &Places) -> AfterFree {
        let mut frees = vec![];
        let mut escaped: Option<Vec<llvm::Value>> = None;
        for i in llvm::blocks(f).into_iter().flat_map(llvm::instructions) {
            if llvm::opcode(i) != LLVMOpcode::LLVMCall || llvm::call_arg_count(i) == 0 {
                continue;
            }
            let callee = llvm::called_value(i);
            if !llvm::is_a_function(callee) || !matches!(llvm::value_name(callee).as_str(), "free" | "realloc") {
                continue;
            }
            let freed = llvm::operand(i, 0);
            let mut blocks: Vec<llvm::Value> = places.objects_of(freed).into_iter().filter(|&o| unsafe { !LLVMIsACallInst(o).is_null() }).collect();
            if places.may_point_elsewhere(freed) {
                // `free(*h)`: any block whose address went where the pass does not look.
                let escaped = escaped.get_or_insert_with(|| places.escaped_heap_blocks(f));
                blocks.extend(escaped.iter().copied());
                blocks.sort();
                blocks.dedup();
            }
            if blocks.is_empty() {
                continue;
            }
            let mut seen = std::collections::HashSet::new();
            let mut work: Vec<LLVMBasicBlockRef> = llvm::successors(unsafe { LLVMGetBasicBlockTerminator(LLVMGetInstructionParent(i)) });
            while let Some(b) = work.pop() {
                if seen.insert(b) {
                    work.extend(llvm::successors(unsafe { LLVMGetBasicBlockTerminator(b) }));
                }
            }
            frees.extend(blocks.into_iter().map(|block| (block, i, seen.clone())));
        }
        AfterFree { frees }
    }

    /// Whether `i` loads from or writes into a block that may have been freed before it.
    pub(super) fn may_follow(&self, places: &Places, i: llvm::Value) -> bool {
        if self.frees.is_empty() {
            return false;
        }
        let ptr = match llvm::opcode(i) {
            LLVMOpcode::LLVMStore => llvm::operand(i, 1),
            LLVMOpcode::LLVMLoad | LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMAtomicCmpXchg => llvm::operand(i, 0),
            LLVMOpcode::LLVMCall if llvm::call_arg_count(i) > 0 => {
                // A library call given the block: whatever it does with it.
                let callee = llvm::called_value(i);
                if llvm::is_a_function(callee) && matches!(llvm::value_name(callee).as_str(), "free" | "realloc") {
                    return false;
                }
                return (0..llvm::call_arg_count(i)).any(|k| self.freed_before(places, llvm::operand(i, k), i));
            }
            _ => return false,
        };
        self.freed_before(places, ptr, i)
    }

    /// Whether pointer `p` may point into a block freed before instruction `i`.
    fn freed_before(&self, places: &Places, p: llvm::Value, i: llvm::Value) -> bool {
        let objects = places.objects_of(p);
        let block = unsafe { LLVMGetInstructionParent(i) };
        self.frees.iter().filter(|(o, ..)| objects.contains(o)).any(|(_, free, reach)| {
            reach.contains(&block) || (unsafe { LLVMGetInstructionParent(*free) } == block && llvm::instructions(block).iter().position(|&x| x == *free) < llvm::instructions(block).iter().position(|&x| x == i))
        })
    }
}

/// The dominance of a function's blocks, and which of them lie on no cycle (run at most once a
/// call).
struct Once {
    index: std::collections::HashMap<LLVMBasicBlockRef, petgraph::graph::NodeIndex>,
    dominators: petgraph::algo::dominators::Dominators<petgraph::graph::NodeIndex>,
    in_cycle: std::collections::HashSet<petgraph::graph::NodeIndex>,
}

impl Once {
    fn new(f: llvm::Value) -> Once {
        let mut graph = petgraph::graph::DiGraph::<(), ()>::new();
        let blocks = llvm::blocks(f);
        let index: std::collections::HashMap<LLVMBasicBlockRef, petgraph::graph::NodeIndex> = blocks.iter().map(|&b| (b, graph.add_node(()))).collect();
        for &b in &blocks {
            let term = unsafe { LLVMGetBasicBlockTerminator(b) };
            if term.is_null() {
                continue;
            }
            for s in llvm::successors(term) {
                if let Some(&t) = index.get(&s) {
                    graph.update_edge(index[&b], t, ());
                }
            }
        }
        let entry = index[&unsafe { LLVMGetEntryBasicBlock(f) }];
        let in_cycle = petgraph::algo::tarjan_scc(&graph)
            .into_iter()
            .filter(|scc| scc.len() > 1 || graph.contains_edge(scc[0], scc[0]))
            .flatten()
            .collect();
        Once { dominators: petgraph::algo::dominators::simple_fast(&graph, entry), index, in_cycle }
    }

    fn runs_once(&self, b: LLVMBasicBlockRef) -> bool {
        self.index.get(&b).is_some_and(|n| !self.in_cycle.contains(n))
    }

    /// Whether block `a` dominates block `b` (both reachable from the entry).
    fn dominates(&self, a: LLVMBasicBlockRef, b: LLVMBasicBlockRef) -> bool {
        let (Some(&a), Some(&b)) = (self.index.get(&a), self.index.get(&b)) else { return false };
        self.dominators.dominators(b).is_some_and(|mut ds| ds.any(|d| d == a))
    }
}

/// Whether `v` is an integer of at most 64 bits (what the checks compute with).
pub(super) fn is_int64(v: llvm::Value) -> bool {
    llvm::type_kind(llvm::type_of(v)) == LLVMTypeKind::LLVMIntegerTypeKind && (1..=64).contains(&llvm::int_width(llvm::type_of(v)))
}

/// `v` as an `i64`, built by `builder`: sign- or zero-extended when narrower, truncated when wider.
pub(super) unsafe fn to_i64(builder: LLVMBuilderRef, v: llvm::Value, signed: bool) -> llvm::Value {
    let i64t = LLVMInt64TypeInContext(LLVMGetTypeContext(llvm::type_of(v)));
    match llvm::int_width(llvm::type_of(v)).cmp(&64) {
        std::cmp::Ordering::Less if signed => LLVMBuildSExt(builder, v, i64t, c"apc.wide".as_ptr()),
        std::cmp::Ordering::Less => LLVMBuildZExt(builder, v, i64t, c"apc.wide".as_ptr()),
        std::cmp::Ordering::Greater => LLVMBuildTrunc(builder, v, i64t, c"apc.wide".as_ptr()),
        std::cmp::Ordering::Equal => v,
    }
}
