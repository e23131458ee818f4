//! Lowering the normalised LLVM function into the owned IR of [`crate::ir`].
//!
//! Unknown constructs are kept as [`InstKind::Unknown`] / [`Operand::Unknown`], never dropped, so
//! that later stages treat their results as ⋆.

use super::llvm;
use super::target::TARGET_MARKER;
use crate::error::{Error, Result};
use crate::ir::*;
use llvm_sys::prelude::LLVMModuleRef;
use llvm_sys::target::LLVMTargetDataRef;
use llvm_sys::{LLVMIntPredicate, LLVMOpcode, LLVMTypeKind};
use std::collections::HashMap;
use tracing::debug;

/// Globals larger than this keep an unknown initial content (their bytes are not materialised).
const MAX_GLOBAL_INIT_BYTES: u64 = 1 << 20;

struct Lowerer {
    td: LLVMTargetDataRef,
    blocks: HashMap<usize, BlockId>,
    values: HashMap<usize, ValueId>,
    value_types: Vec<Ty>,
    value_names: Vec<String>,
    globals: Vec<Global>,
    global_ids: HashMap<usize, GlobalId>,
    /// The module has constructors (`llvm.global_ctors`): they run before any function is
    /// called (the C runtime runs them before `main`) and may write any global, so a mutable
    /// global's initializer says nothing of its value at entry.
    constructors: bool,
}

pub(crate) fn lower_type(t: llvm::Type) -> Ty {
    match llvm::type_kind(t) {
        LLVMTypeKind::LLVMIntegerTypeKind => Ty::Int(llvm::int_width(t)),
        LLVMTypeKind::LLVMPointerTypeKind => Ty::Ptr,
        LLVMTypeKind::LLVMVoidTypeKind => Ty::Void,
        _ => Ty::Other(llvm::type_string(t)),
    }
}

fn lower_predicate(p: LLVMIntPredicate) -> IntPredicate {
    use LLVMIntPredicate::*;
    match p {
        LLVMIntEQ => IntPredicate::Eq,
        LLVMIntNE => IntPredicate::Ne,
        LLVMIntUGT => IntPredicate::Ugt,
        LLVMIntUGE => IntPredicate::Uge,
        LLVMIntULT => IntPredicate::Ult,
        LLVMIntULE => IntPredicate::Ule,
        LLVMIntSGT => IntPredicate::Sgt,
        LLVMIntSGE => IntPredicate::Sge,
        LLVMIntSLT => IntPredicate::Slt,
        LLVMIntSLE => IntPredicate::Sle,
    }
}

fn binop(op: LLVMOpcode) -> Option<BinOp> {
    use LLVMOpcode::*;
    Some(match op {
        LLVMAdd => BinOp::Add,
        LLVMSub => BinOp::Sub,
        LLVMMul => BinOp::Mul,
        LLVMUDiv => BinOp::UDiv,
        LLVMSDiv => BinOp::SDiv,
        LLVMURem => BinOp::URem,
        LLVMSRem => BinOp::SRem,
        LLVMShl => BinOp::Shl,
        LLVMLShr => BinOp::LShr,
        LLVMAShr => BinOp::AShr,
        LLVMAnd => BinOp::And,
        LLVMOr => BinOp::Or,
        LLVMXor => BinOp::Xor,
        _ => return None,
    })
}

impl Lowerer {
    fn global(&mut self, g: llvm::Value) -> GlobalId {
        if let Some(&id) = self.global_ids.get(&(g as usize)) {
            return id;
        }
        let id = GlobalId(self.globals.len() as u32);
        let ty = llvm::global_value_type(g);
        let size = if llvm::is_sized(ty) { llvm::alloc_size(self.td, ty) } else { 0 };
        let is_constant = llvm::is_global_constant(g);
        let mut functions = vec![];
        let init = llvm::initializer(g).filter(|_| size <= MAX_GLOBAL_INIT_BYTES && (is_constant || !self.constructors)).map(|c| {
            let mut bytes = vec![None; size as usize];
            self.const_bytes(c, ty, &mut bytes, 0, &mut functions);
            bytes
        });
        self.globals.push(Global {
            id,
            name: llvm::value_name(g),
            size,
            init,
            is_constant,
            may_share_address: is_constant && llvm::has_unnamed_addr(g),
            functions,
        });
        self.global_ids.insert(g as usize, id);
        id
    }

    /// Writes the bytes of constant `c` of type `ty` into `out`; bytes it cannot know stay `None`.
    /// Function addresses (a table of callbacks) go to `functions`, by offset from `base`.
    fn const_bytes(&self, c: llvm::Value, ty: llvm::Type, out: &mut [Option<u8>], base: u64, functions: &mut Vec<(u64, String)>) {
        if llvm::is_a_aggregate_zero(c) || llvm::is_a_null_pointer(c) {
            out.iter_mut().for_each(|b| *b = Some(0));
            return;
        }
        if llvm::is_a_undef(c) {
            return;
        }
        match llvm::type_kind(ty) {
            LLVMTypeKind::LLVMIntegerTypeKind if llvm::is_a_constant_int(c)
                && llvm::int_width(ty) <= 64 => {
                    let v = llvm::const_int_zext(c);
                    for (i, b) in out.iter_mut().enumerate().take(8) {
                        *b = Some((v >> (8 * i)) as u8);
                    }
                }
            LLVMTypeKind::LLVMArrayTypeKind => {
                let elem = llvm::element_type(ty);
                let esize = llvm::alloc_size(self.td, elem) as usize;
                for i in 0..llvm::array_length(ty) as usize {
                    let Some(e) = llvm::aggregate_element(c, i as u32) else { return };
                    let start = i * esize;
                    if start + esize <= out.len() {
                        self.const_bytes(e, elem, &mut out[start..start + esize], base + start as u64, functions);
                    }
                }
            }
            LLVMTypeKind::LLVMStructTypeKind => {
                for (i, fty) in llvm::struct_element_types(ty).into_iter().enumerate() {
                    let Some(e) = llvm::aggregate_element(c, i as u32) else { return };
                    let start = llvm::struct_offset(self.td, ty, i as u32) as usize;
                    let fsize = llvm::alloc_size(self.td, fty) as usize;
                    if start + fsize <= out.len() {
                        self.const_bytes(e, fty, &mut out[start..start + fsize], base + start as u64, functions);
                    }
                }
            }
            LLVMTypeKind::LLVMPointerTypeKind if llvm::is_a_function(c) && out.len() == 8 => functions.push((base, llvm::value_name(c))),
            // Pointers to other objects, floating point, constant expressions: unknown bytes.
            _ => {}
        }
    }

    fn operand(&mut self, v: llvm::Value) -> Operand {
        if let Some(&id) = self.values.get(&(v as usize)) {
            return Operand::Value(id);
        }
        let ty = lower_type(llvm::type_of(v));
        if llvm::is_a_constant_int(v) {
            return match ty {
                Ty::Int(w) if w <= 64 => Operand::Int { width: w, value: llvm::const_int_zext(v) },
                _ => Operand::Unknown(ty),
            };
        }
        if llvm::is_a_null_pointer(v) {
            return Operand::Null;
        }
        // An uninitialised local's value (see `llvm::mark_uninitialised_locals`).
        if llvm::is_a_undef(v) || llvm::is_uninit_call(v) {
            return Operand::Undef(ty);
        }
        if llvm::is_a_global_variable(v) {
            return Operand::Global { id: self.global(v), offset: 0 };
        }
        if llvm::is_a_function(v) {
            return Operand::Function(llvm::value_name(v));
        }
        if llvm::is_a_constant_expr(v) {
            return self.constant_expr(v, ty);
        }
        Operand::Unknown(ty)
    }

    fn constant_expr(&mut self, v: llvm::Value, ty: Ty) -> Operand {
        match llvm::const_expr_opcode(v) {
            LLVMOpcode::LLVMGetElementPtr => {
                let base = self.operand(llvm::operand(v, 0));
                let src = llvm::gep_source_type(v);
                let indices: Vec<_> = (1..llvm::num_operands(v)).map(|i| llvm::operand(v, i)).collect();
                match (base, self.gep_offsets(src, &indices)) {
                    (Operand::Global { id, offset }, Some((c, terms))) if terms.is_empty() => {
                        Operand::Global { id, offset: offset + c }
                    }
                    _ => Operand::Unknown(ty),
                }
            }
            LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast => self.operand(llvm::operand(v, 0)),
            _ => Operand::Unknown(ty),
        }
    }

    /// Byte offset of a GEP: a constant part and `(index, scale)` terms for variable indices.
    /// `None` when the type structure cannot be followed (vectors, unsized types).
    fn gep_offsets(&mut self, src: llvm::Type, indices: &[llvm::Value]) -> Option<(i64, Vec<(Operand, i64)>)> {
        let (constant, terms) = llvm::gep_byte_offset(self.td, src, indices)?;
        Some((constant, terms.into_iter().map(|(idx, scale)| (self.operand(idx), scale)).collect()))
    }

    fn lower_inst(&mut self, i: llvm::Value) -> Option<(InstKind, Option<u32>)> {
        use LLVMOpcode::*;
        let op = llvm::opcode(i);
        let n = llvm::num_operands(i);
        let ty = lower_type(llvm::type_of(i));
        let kind = match op {
            _ if binop(op).is_some() && matches!(ty, Ty::Int(_)) => InstKind::Binary {
                op: binop(op).unwrap(),
                lhs: self.operand(llvm::operand(i, 0)),
                rhs: self.operand(llvm::operand(i, 1)),
            },
            LLVMICmp if matches!(ty, Ty::Int(1)) => InstKind::ICmp {
                pred: lower_predicate(llvm::icmp_predicate(i)),
                lhs: self.operand(llvm::operand(i, 0)),
                rhs: self.operand(llvm::operand(i, 1)),
            },
            LLVMSelect => InstKind::Select {
                cond: self.operand(llvm::operand(i, 0)),
                then_val: self.operand(llvm::operand(i, 1)),
                else_val: self.operand(llvm::operand(i, 2)),
            },
            LLVMZExt | LLVMSExt | LLVMTrunc | LLVMPtrToInt | LLVMIntToPtr | LLVMBitCast
            | LLVMAddrSpaceCast | LLVMFreeze => {
                let cast = match op {
                    LLVMZExt => CastOp::ZExt,
                    LLVMSExt => CastOp::SExt,
                    LLVMTrunc => CastOp::Trunc,
                    LLVMPtrToInt => CastOp::PtrToInt,
                    LLVMIntToPtr => CastOp::IntToPtr,
                    _ => CastOp::BitCast,
                };
                let src = lower_type(llvm::type_of(llvm::operand(i, 0)));
                let representable = match cast {
                    CastOp::ZExt | CastOp::SExt | CastOp::Trunc => {
                        matches!(ty, Ty::Int(_)) && matches!(src, Ty::Int(_))
                    }
                    CastOp::BitCast => src == ty && !matches!(ty, Ty::Other(_)),
                    _ => true,
                };
                if representable {
                    InstKind::Cast { op: cast, val: self.operand(llvm::operand(i, 0)) }
                } else {
                    InstKind::Unknown { opcode: format!("{op:?}") }
                }
            }
            LLVMPHI => InstKind::Phi {
                incoming: llvm::incoming(i)
                    .into_iter()
                    .map(|(v, b)| (self.blocks[&(b as usize)], self.operand(v)))
                    .collect(),
            },
            LLVMAlloca => {
                let t = llvm::allocated_type(i);
                if llvm::is_sized(t) {
                    InstKind::Alloca {
                        elem_size: llvm::alloc_size(self.td, t),
                        count: self.operand(llvm::operand(i, 0)),
                    }
                } else {
                    InstKind::Unknown { opcode: "alloca".into() }
                }
            }
            LLVMLoad => InstKind::Load { ptr: self.operand(llvm::operand(i, 0)) },
            LLVMStore => {
                let val = llvm::operand(i, 0);
                // A local not yet written (`llvm::mark_uninitialised_locals`): the memory keeps
                // what the model says of memory nobody wrote.
                if llvm::is_uninit_call(val) {
                    return None;
                }
                let vt = llvm::type_of(val);
                let width = if llvm::is_sized(vt) { 8 * llvm::alloc_size(self.td, vt) as u32 } else { 0 };
                InstKind::Store {
                    val: self.operand(val),
                    ptr: self.operand(llvm::operand(i, 1)),
                    width,
                }
            }
            LLVMGetElementPtr => {
                let base = self.operand(llvm::operand(i, 0));
                let idx: Vec<_> = (1..n).map(|k| llvm::operand(i, k)).collect();
                match self.gep_offsets(llvm::gep_source_type(i), &idx) {
                    Some((const_offset, terms)) => InstKind::PtrOffset { base, const_offset, terms },
                    None => InstKind::Unknown { opcode: "getelementptr".into() },
                }
            }
            LLVMCall if llvm::is_uninit_call(i) => return None,
            LLVMCall => {
                let callee_v = llvm::called_value(i);
                let argc = llvm::call_arg_count(i);
                let args = (0..argc).map(|k| self.operand(llvm::operand(i, k))).collect();
                let callee = if llvm::is_a_function(callee_v) {
                    let name = llvm::value_name(callee_v);
                    if name.starts_with("llvm.dbg.") {
                        return None; // no semantics for the analysis
                    }
                    // `llvm.lifetime.start/end` are kept: an inlined callee's locals are
                    // undefined outside them (a pointer to one read after the call sees what
                    // later frames wrote into the slot), which the engines model.
                    if name == TARGET_MARKER {
                        return Some((InstKind::Call { callee: Callee::Direct(name), args }, None));
                    }
                    Callee::Direct(name)
                } else if llvm::is_a_inline_asm(callee_v) {
                    Callee::InlineAsm
                } else if llvm::has_metadata(i, super::devirt::UNMATCHED) {
                    Callee::Unmatched(self.operand(callee_v))
                } else {
                    Callee::Indirect(self.operand(callee_v))
                };
                InstKind::Call { callee, args }
            }
            _ => InstKind::Unknown { opcode: format!("{op:?}").trim_start_matches("LLVM").to_lowercase() },
        };
        Some((kind, llvm::debug_line(i)))
    }

    fn lower_terminator(&mut self, t: llvm::Value) -> Terminator {
        use LLVMOpcode::*;
        let succ: Vec<BlockId> =
            llvm::successors(t).into_iter().map(|b| self.blocks[&(b as usize)]).collect();
        match llvm::opcode(t) {
            LLVMBr if llvm::is_conditional(t) => Terminator::Branch {
                cond: self.operand(llvm::condition(t)),
                then_bb: succ[0],
                else_bb: succ[1],
            },
            LLVMBr => Terminator::Jump(succ[0]),
            LLVMSwitch => {
                let value = self.operand(llvm::operand(t, 0));
                let n = llvm::num_operands(t);
                let mut cases = vec![];
                let mut representable = matches!(value, Operand::Value(_) | Operand::Int { .. });
                for (k, opi) in (2..n).step_by(2).enumerate() {
                    let c = llvm::operand(t, opi);
                    if llvm::is_a_constant_int(c) && llvm::int_width(llvm::type_of(c)) <= 64 {
                        cases.push((llvm::const_int_zext(c), succ[k + 1]));
                    } else {
                        representable = false;
                    }
                }
                if representable {
                    Terminator::Switch { value, default: succ[0], cases }
                } else {
                    Terminator::Unknown { opcode: "switch".into(), succs: succ }
                }
            }
            LLVMRet => Terminator::Return((llvm::num_operands(t) > 0).then(|| self.operand(llvm::operand(t, 0)))),
            LLVMUnreachable => Terminator::Unreachable,
            op => Terminator::Unknown {
                opcode: format!("{op:?}").trim_start_matches("LLVM").to_lowercase(),
                succs: succ,
            },
        }
    }
}

/// Lowers function `f` of module `m` into the owned IR.
pub fn lower(m: LLVMModuleRef, f: llvm::Value, target_names: Vec<String>) -> Result<Program> {
    let mut lw = Lowerer {
        td: llvm::module_target_data(m),
        blocks: HashMap::new(),
        values: HashMap::new(),
        value_types: vec![],
        value_names: vec![],
        globals: vec![],
        global_ids: HashMap::new(),
        constructors: llvm::has_constructors(m),
    };
    if lw.constructors {
        debug!("the module has constructors: mutable globals start unknown");
    }
    let llvm_blocks = llvm::blocks(f);
    if llvm_blocks.is_empty() {
        return Err(Error::bad_input(format!("function '{}' has no body", llvm::value_name(f))));
    }
    for (k, &b) in llvm_blocks.iter().enumerate() {
        lw.blocks.insert(b as usize, BlockId(k as u32));
    }
    let new_value = |lw: &mut Lowerer, v: llvm::Value, fallback: String| {
        let id = ValueId(lw.value_types.len() as u32);
        lw.values.insert(v as usize, id);
        lw.value_types.push(lower_type(llvm::type_of(v)));
        let name = llvm::value_name(v);
        lw.value_names.push(if name.is_empty() { fallback } else { name });
        id
    };
    let mut params = vec![];
    for (k, p) in llvm::params(f).into_iter().enumerate() {
        let value = new_value(&mut lw, p, format!("arg{k}"));
        let ext = if llvm::param_has_attribute(f, k as u32, "signext") {
            ParamExt::Sign
        } else if llvm::param_has_attribute(f, k as u32, "zeroext") {
            ParamExt::Zero
        } else {
            ParamExt::None
        };
        params.push(Param { value, name: lw.value_names[value.0 as usize].clone(), ty: lower_type(llvm::type_of(p)), ext, c_type: None, pointee_bytes: None, buffer_bytes: None, front_bytes: 0 });
    }
    for &b in &llvm_blocks {
        for i in llvm::instructions(b) {
            if !matches!(lower_type(llvm::type_of(i)), Ty::Void) && !llvm::is_uninit_call(i) {
                let n = lw.value_types.len();
                new_value(&mut lw, i, format!("v{n}"));
            }
        }
    }
    let mut blocks = vec![];
    let mut splits: Vec<Block> = vec![];
    for (k, &b) in llvm_blocks.iter().enumerate() {
        let label = match llvm::block_name(b) {
            s if s.is_empty() => format!("bb{k}"),
            s => s,
        };
        let insts_raw = llvm::instructions(b);
        let (term_raw, body) = insts_raw.split_last().expect("LLVM blocks end in a terminator");
        let mut insts = vec![];
        let mut target = None;
        // Where the first marker sits among the lowered instructions.
        let mut marker_at = None;
        for &i in body {
            let Some((kind, line)) = lw.lower_inst(i) else { continue };
            if let InstKind::Call { callee: Callee::Direct(name), args } = &kind {
                if name == TARGET_MARKER {
                    if let Some(Operand::Int { value, .. }) = args.first() {
                        target.get_or_insert(*value as u32);
                        marker_at.get_or_insert(insts.len());
                    }
                    continue;
                }
            }
            let result = lw.values.get(&(i as usize)).copied();
            insts.push(Inst { result, ty: lower_type(llvm::type_of(i)), kind, line });
        }
        let term = lw.lower_terminator(*term_raw);
        let phis = insts.iter().take_while(|i| matches!(i.kind, InstKind::Phi { .. })).count();
        match marker_at {
            // A marker after other instructions (a `--call` or `--line` target inside a block):
            // the block is split there, so that reaching the target means executing what comes
            // before it (which may never return) and then entering the tail.
            Some(at) if at > phis => {
                let tail_id = BlockId((llvm_blocks.len() + splits.len()) as u32);
                let tail_insts = insts.split_off(at);
                splits.push(Block { id: tail_id, label: format!("{label}.target"), insts: tail_insts, term, target });
                blocks.push(Block { id: BlockId(k as u32), label, insts, term: Terminator::Jump(tail_id), target: None });
            }
            _ => blocks.push(Block { id: BlockId(k as u32), label, insts, term, target }),
        }
    }
    // Successors of a split block now have its tail as their predecessor.
    let heads: Vec<(BlockId, BlockId)> =
        blocks.iter().filter_map(|b| match b.term { Terminator::Jump(t) if t.index() >= llvm_blocks.len() => Some((b.id, t)), _ => None }).collect();
    blocks.extend(splits);
    for block in &mut blocks {
        for inst in &mut block.insts {
            if let InstKind::Phi { incoming } = &mut inst.kind {
                for (pred, _) in incoming.iter_mut() {
                    if let Some(&(_, tail)) = heads.iter().find(|(h, _)| h == pred) {
                        *pred = tail;
                    }
                }
            }
        }
    }
    let mut function = Function {
        name: llvm::value_name(f),
        params,
        ret: lower_type(llvm::function_return_type(f)),
        blocks,
        value_types: lw.value_types,
        value_names: lw.value_names,
        in_cycle: vec![],
    };
    function.compute_cycles();
    Ok(Program { function, globals: lw.globals, target_names, pure_functions: vec![] })
}
