//! Thin, safe-looking wrappers over the LLVM-C API for what inkwell does not wrap or wraps with
//! lifetimes that would leak into the lowering. All `unsafe` of the loader lives here; every
//! function takes references obtained from a live inkwell `Module`, which outlives the calls.

use llvm_sys::core::*;
use llvm_sys::debuginfo::*;
use llvm_sys::prelude::*;
use llvm_sys::target::*;
use llvm_sys::{LLVMOpcode, LLVMTypeKind};
use std::ffi::CStr;

pub type Value = LLVMValueRef;
pub type Type = LLVMTypeRef;
pub type Block = LLVMBasicBlockRef;

fn cstr_to_string(ptr: *const std::os::raw::c_char, len: usize) -> String {
    if ptr.is_null() {
        return String::new();
    }
    let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn value_name(v: Value) -> String {
    let mut len = 0usize;
    let p = unsafe { LLVMGetValueName2(v, &mut len) };
    cstr_to_string(p, len)
}

pub fn block_name(b: Block) -> String {
    // `LLVMGetBasicBlockName` returns a `StringRef`'s data, which the C API does not promise to
    // be NUL-terminated; the block's value name comes with its length.
    value_name(unsafe { LLVMBasicBlockAsValue(b) })
}

pub fn functions(m: LLVMModuleRef) -> Vec<Value> {
    let mut out = vec![];
    let mut f = unsafe { LLVMGetFirstFunction(m) };
    while !f.is_null() {
        out.push(f);
        f = unsafe { LLVMGetNextFunction(f) };
    }
    out
}


pub fn globals(m: LLVMModuleRef) -> Vec<Value> {
    let mut out = vec![];
    let mut g = unsafe { LLVMGetFirstGlobal(m) };
    while !g.is_null() {
        out.push(g);
        g = unsafe { LLVMGetNextGlobal(g) };
    }
    out
}

pub fn is_declaration(f: Value) -> bool {
    unsafe { LLVMIsDeclaration(f) != 0 }
}

pub fn blocks(f: Value) -> Vec<Block> {
    let mut out = vec![];
    let mut b = unsafe { LLVMGetFirstBasicBlock(f) };
    while !b.is_null() {
        out.push(b);
        b = unsafe { LLVMGetNextBasicBlock(b) };
    }
    out
}

pub fn instructions(b: Block) -> Vec<Value> {
    let mut out = vec![];
    let mut i = unsafe { LLVMGetFirstInstruction(b) };
    while !i.is_null() {
        out.push(i);
        i = unsafe { LLVMGetNextInstruction(i) };
    }
    out
}

pub fn params(f: Value) -> Vec<Value> {
    let n = unsafe { LLVMCountParams(f) };
    (0..n).map(|i| unsafe { LLVMGetParam(f, i) }).collect()
}

pub fn opcode(i: Value) -> LLVMOpcode {
    unsafe { LLVMGetInstructionOpcode(i) }
}

pub fn num_operands(v: Value) -> u32 {
    unsafe { LLVMGetNumOperands(v) as u32 }
}

pub fn operand(v: Value, i: u32) -> Value {
    unsafe { LLVMGetOperand(v, i) }
}

pub fn type_of(v: Value) -> Type {
    unsafe { LLVMTypeOf(v) }
}

pub fn type_kind(t: Type) -> LLVMTypeKind {
    unsafe { LLVMGetTypeKind(t) }
}

pub fn int_width(t: Type) -> u32 {
    unsafe { LLVMGetIntTypeWidth(t) }
}

pub fn type_string(t: Type) -> String {
    let p = unsafe { LLVMPrintTypeToString(t) };
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    unsafe { LLVMDisposeMessage(p) };
    s
}

pub fn function_return_type(f: Value) -> Type {
    unsafe { LLVMGetReturnType(LLVMGlobalGetValueType(f)) }
}

pub fn global_value_type(g: Value) -> Type {
    unsafe { LLVMGlobalGetValueType(g) }
}

pub fn element_type(t: Type) -> Type {
    unsafe { LLVMGetElementType(t) }
}

pub fn array_length(t: Type) -> u64 {
    unsafe { LLVMGetArrayLength2(t) }
}

pub fn struct_element_types(t: Type) -> Vec<Type> {
    let n = unsafe { LLVMCountStructElementTypes(t) };
    (0..n).map(|i| unsafe { LLVMStructGetTypeAtIndex(t, i) }).collect()
}

pub fn is_a_constant_int(v: Value) -> bool {
    unsafe { !LLVMIsAConstantInt(v).is_null() }
}
pub fn is_a_global_variable(v: Value) -> bool {
    unsafe { !LLVMIsAGlobalVariable(v).is_null() }
}
pub fn is_a_function(v: Value) -> bool {
    unsafe { !LLVMIsAFunction(v).is_null() }
}
pub fn is_a_null_pointer(v: Value) -> bool {
    unsafe { !LLVMIsAConstantPointerNull(v).is_null() }
}
pub fn is_a_undef(v: Value) -> bool {
    unsafe { !LLVMIsAUndefValue(v).is_null() || !LLVMIsAPoisonValue(v).is_null() }
}
pub fn is_a_constant_expr(v: Value) -> bool {
    unsafe { !LLVMIsAConstantExpr(v).is_null() }
}
pub fn is_a_aggregate_zero(v: Value) -> bool {
    unsafe { !LLVMIsAConstantAggregateZero(v).is_null() }
}
pub fn is_a_inline_asm(v: Value) -> bool {
    unsafe { !LLVMIsAInlineAsm(v).is_null() }
}
pub fn is_global_constant(g: Value) -> bool {
    unsafe { LLVMIsGlobalConstant(g) != 0 }
}

/// Whether a global's address is marked insignificant (`unnamed_addr`, global or local).
pub fn has_unnamed_addr(g: Value) -> bool {
    unsafe { LLVMGetUnnamedAddress(g) != llvm_sys::LLVMUnnamedAddr::LLVMNoUnnamedAddr }
}

pub fn const_expr_opcode(v: Value) -> LLVMOpcode {
    unsafe { LLVMGetConstOpcode(v) }
}

/// Zero-extended value of a constant integer of at most 64 bits.
pub fn const_int_zext(v: Value) -> u64 {
    unsafe { LLVMConstIntGetZExtValue(v) }
}

/// Whether module `m` has constructors: a non-empty `llvm.global_ctors`.
pub fn has_constructors(m: LLVMModuleRef) -> bool {
    has_global_list(m, "llvm.global_ctors")
}

/// Whether module `m` has destructors (run at `exit` and after `main` returns): a non-empty
/// `llvm.global_dtors`.
pub fn has_destructors(m: LLVMModuleRef) -> bool {
    has_global_list(m, "llvm.global_dtors")
}

/// The text of an inline assembly value.
pub fn inline_asm_text(asm: Value) -> String {
    let mut len = 0usize;
    // SAFETY: an inline assembly value; the returned text lives as long as it.
    let p = unsafe { llvm_sys::core::LLVMGetInlineAsmAsmString(asm, &mut len) };
    if p.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p as *const u8, len) }).into_owned()
}

fn has_global_list(m: LLVMModuleRef, list: &str) -> bool {
    // Functions placed in the section by hand (`__attribute__((section(".init_array")))` on a
    // function pointer) run as the list's do.
    let section = match list {
        "llvm.global_ctors" => [".init_array", ".preinit_array", ".ctors"].as_slice(),
        _ => [".fini_array", ".dtors"].as_slice(),
    };
    let by_hand = globals(m).into_iter().any(|g| {
        let s = unsafe { LLVMGetSection(g) };
        !s.is_null() && section.iter().any(|want| unsafe { std::ffi::CStr::from_ptr(s) }.to_bytes().starts_with(want.as_bytes()))
    });
    if by_hand {
        return true;
    }
    let name = std::ffi::CString::new(list).expect("no NUL");
    // SAFETY: a valid module; the global and its initializer belong to it.
    let g = unsafe { LLVMGetNamedGlobal(m, name.as_ptr()) };
    if g.is_null() {
        return false;
    }
    initializer(g).is_some_and(|init| unsafe { LLVMGetNumOperands(init) } > 0 || !is_a_aggregate_zero(init))
}

pub fn initializer(g: Value) -> Option<Value> {
    let v = unsafe { LLVMGetInitializer(g) };
    (!v.is_null()).then_some(v)
}

pub fn aggregate_element(v: Value, i: u32) -> Option<Value> {
    let e = unsafe { LLVMGetAggregateElement(v, i) };
    (!e.is_null()).then_some(e)
}


pub fn successors(term: Value) -> Vec<Block> {
    let n = unsafe { LLVMGetNumSuccessors(term) };
    (0..n).map(|i| unsafe { LLVMGetSuccessor(term, i) }).collect()
}

pub fn condition(br: Value) -> Value {
    unsafe { LLVMGetCondition(br) }
}

pub fn is_conditional(br: Value) -> bool {
    unsafe { LLVMIsConditional(br) != 0 }
}

pub fn incoming(phi: Value) -> Vec<(Value, Block)> {
    let n = unsafe { LLVMCountIncoming(phi) };
    (0..n).map(|i| unsafe { (LLVMGetIncomingValue(phi, i), LLVMGetIncomingBlock(phi, i)) }).collect()
}

pub fn icmp_predicate(i: Value) -> llvm_sys::LLVMIntPredicate {
    unsafe { LLVMGetICmpPredicate(i) }
}

/// The values that use `v` (instructions, constants such as a global's initialiser).
pub fn users(v: Value) -> Vec<Value> {
    let mut out = vec![];
    let mut u = unsafe { LLVMGetFirstUse(v) };
    while !u.is_null() {
        out.push(unsafe { LLVMGetUser(u) });
        u = unsafe { LLVMGetNextUse(u) };
    }
    out
}

/// Whether function `f` is used otherwise than as the callee of a direct call (its address is
/// taken: stored, passed, in an initialiser).
/// A dispatcher's comparison with `f` (see `devirt`) does not count: it stands for an indirect
/// call that now calls `f` directly.
pub fn address_taken(f: Value) -> bool {
    users(f).into_iter().any(|u| {
        let dispatch = unsafe { !LLVMIsAICmpInst(u).is_null() } && value_name(unsafe { LLVMGetBasicBlockParent(LLVMGetInstructionParent(u)) }).starts_with(super::devirt::DISPATCH_PREFIX);
        !is_direct_call_of(u, f) && !dispatch
    })
}

fn is_direct_call_of(u: Value, f: Value) -> bool {
    (unsafe { !LLVMIsACallInst(u).is_null() }) && called_value(u) == f && (0..call_arg_count(u)).all(|k| operand(u, k) != f)
}

/// Whether function `f` is used as a value anywhere (a dispatcher's comparison included): a
/// pointer in the program may then hold its address.
pub fn used_as_value(f: Value) -> bool {
    users(f).into_iter().any(|u| !is_direct_call_of(u, f))
}

/// Adds a constant global `name`, an array of the addresses of `fns` with external linkage.
pub fn add_function_table(m: LLVMModuleRef, name: &str, fns: &[Value]) -> Value {
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let ptr = LLVMPointerTypeInContext(ctx, 0);
        let mut elems = fns.to_vec();
        let init = LLVMConstArray2(ptr, elems.as_mut_ptr(), elems.len() as u64);
        let cname = std::ffi::CString::new(name).unwrap();
        let g = LLVMAddGlobal(m, LLVMTypeOf(init), cname.as_ptr());
        LLVMSetInitializer(g, init);
        LLVMSetGlobalConstant(g, 1);
        g
    }
}

/// Replaces the body of defined function `f` by a single `unreachable`, so that it refers to
/// nothing any more. `false` (and `f` unchanged) when one of its blocks has its address taken.
pub fn gut_function(f: Value) -> bool {
    unsafe {
        let blocks = blocks(f);
        if blocks.iter().any(|&b| !LLVMGetFirstUse(LLVMBasicBlockAsValue(b)).is_null() && users(LLVMBasicBlockAsValue(b)).iter().any(|&u| LLVMIsAInstruction(u).is_null())) {
            return false;
        }
        for &b in &blocks {
            for i in instructions(b) {
                if !LLVMGetFirstUse(i).is_null() {
                    LLVMReplaceAllUsesWith(i, LLVMGetPoison(LLVMTypeOf(i)));
                }
            }
        }
        for &b in &blocks {
            for i in instructions(b).into_iter().rev() {
                LLVMInstructionEraseFromParent(i);
            }
        }
        for &b in &blocks {
            LLVMDeleteBasicBlock(b);
        }
        let ctx = LLVMGetModuleContext(LLVMGetGlobalParent(f));
        let entry = LLVMAppendBasicBlockInContext(ctx, f, c"entry".as_ptr());
        let builder = LLVMCreateBuilderInContext(ctx);
        LLVMPositionBuilderAtEnd(builder, entry);
        LLVMBuildUnreachable(builder);
        LLVMDisposeBuilder(builder);
        true
    }
}

pub fn delete_function(f: Value) {
    unsafe { LLVMDeleteFunction(f) }
}

pub fn delete_global(g: Value) {
    unsafe { LLVMDeleteGlobal(g) }
}

pub fn called_value(call: Value) -> Value {
    unsafe { LLVMGetCalledValue(call) }
}

pub fn call_arg_count(call: Value) -> u32 {
    unsafe { LLVMGetNumArgOperands(call) }
}

pub fn gep_source_type(gep: Value) -> Type {
    unsafe { LLVMGetGEPSourceElementType(gep) }
}

pub fn allocated_type(alloca: Value) -> Type {
    unsafe { LLVMGetAllocatedType(alloca) }
}

/// Line of an instruction's debug location, if it has one.
pub fn debug_line(i: Value) -> Option<u32> {
    if unsafe { LLVMInstructionGetDebugLoc(i) }.is_null() {
        return None;
    }
    let l = unsafe { LLVMGetDebugLocLine(i) };
    (l > 0).then_some(l)
}

/// File name of an instruction's debug location.
pub fn debug_file(i: Value) -> Option<String> {
    if unsafe { LLVMInstructionGetDebugLoc(i) }.is_null() {
        return None;
    }
    let mut len = 0u32;
    let p = unsafe { LLVMGetDebugLocFilename(i, &mut len) };
    (!p.is_null()).then(|| cstr_to_string(p, len as usize))
}

/// The compilation directory of `i`'s debug location (empty when there is none).
pub fn debug_dir(i: Value) -> String {
    if unsafe { LLVMInstructionGetDebugLoc(i) }.is_null() {
        return String::new();
    }
    let mut len = 0u32;
    let p = unsafe { LLVMGetDebugLocDirectory(i, &mut len) };
    cstr_to_string(p, len as usize)
}

/// Size in bytes that an object of type `t` occupies in memory (including padding).
pub fn alloc_size(td: LLVMTargetDataRef, t: Type) -> u64 {
    unsafe { LLVMABISizeOfType(td, t) }
}

pub fn struct_offset(td: LLVMTargetDataRef, t: Type, field: u32) -> u64 {
    unsafe { LLVMOffsetOfElement(td, t, field) }
}

pub fn module_target_data(m: LLVMModuleRef) -> LLVMTargetDataRef {
    unsafe { LLVMGetModuleDataLayout(m) }
}

pub fn is_sized(t: Type) -> bool {
    unsafe { LLVMTypeIsSized(t) != 0 }
}

/// Inserts `call void @marker(i32 id)` before the first non-phi instruction of `block`.
/// Inserts `marker(id)` into `block`: before `before` when given (and not a phi), else before
/// the first non-phi instruction.
pub fn insert_marker_call(m: LLVMModuleRef, marker: &str, block: Block, before: Option<Value>, id: u32) {
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let void = LLVMVoidTypeInContext(ctx);
        let i32t = LLVMInt32TypeInContext(ctx);
        let mut params = [i32t];
        let fnty = LLVMFunctionType(void, params.as_mut_ptr(), 1, 0);
        let cname = std::ffi::CString::new(marker).unwrap();
        let mut f = LLVMGetNamedFunction(m, cname.as_ptr());
        if f.is_null() {
            f = LLVMAddFunction(m, cname.as_ptr(), fnty);
        }
        let builder = LLVMCreateBuilderInContext(ctx);
        let first = match before {
            Some(i) if LLVMGetInstructionOpcode(i) != llvm_sys::LLVMOpcode::LLVMPHI => i,
            _ => get_first_non_phi(block),
        };
        if first.is_null() {
            LLVMPositionBuilderAtEnd(builder, block);
        } else {
            LLVMPositionBuilderBefore(builder, first);
        }
        let mut args = [LLVMConstInt(i32t, id as u64, 0)];
        let empty = c"";
        let call = LLVMBuildCall2(builder, fnty, f, args.as_mut_ptr(), 1, empty.as_ptr());
        // Keep the marker's call site attached to the block's source line, so that tools reading
        // the debug info (and LLVM's verifier for inlinable calls) stay happy.
        if !first.is_null() {
            let loc = LLVMInstructionGetDebugLoc(first);
            if !loc.is_null() {
                LLVMInstructionSetDebugLoc(call, loc);
            }
        }
        LLVMDisposeBuilder(builder);
    }
}

/// The byte offset a `getelementptr` on `src` with `indices` adds to its base: a constant part
/// (wrapping, as the machine computes it) and one `(index, scale)` term per variable index.
/// `None` when the type structure cannot be followed (vectors, unsized types, a variable
/// struct field).
pub fn gep_byte_offset(td: LLVMTargetDataRef, src: Type, indices: &[Value]) -> Option<(i64, Vec<(Value, i64)>)> {
    let mut constant: i64 = 0;
    let mut terms = vec![];
    let mut ty = src;
    for (k, &idx) in indices.iter().enumerate() {
        let (scale, next) = if k == 0 {
            (alloc_size(td, ty) as i64, ty)
        } else {
            match type_kind(ty) {
                LLVMTypeKind::LLVMArrayTypeKind => {
                    let e = element_type(ty);
                    (alloc_size(td, e) as i64, e)
                }
                LLVMTypeKind::LLVMStructTypeKind => {
                    if !is_a_constant_int(idx) {
                        return None;
                    }
                    let field = const_int_zext(idx) as u32;
                    constant = constant.wrapping_add(struct_offset(td, ty, field) as i64);
                    ty = *struct_element_types(ty).get(field as usize)?;
                    continue;
                }
                _ => return None,
            }
        };
        if !is_sized(next) {
            return None;
        }
        ty = next;
        if is_a_constant_int(idx) && int_width(type_of(idx)) <= 64 {
            let w = int_width(type_of(idx));
            let raw = const_int_zext(idx);
            let signed = if w == 64 { raw as i64 } else { ((raw << (64 - w)) as i64) >> (64 - w) };
            constant = constant.wrapping_add(signed.wrapping_mul(scale));
        } else {
            terms.push((idx, scale));
        }
    }
    Some((constant, terms))
}

/// Names of the functions whose calls stand for the value of uninitialised memory (see
/// [`mark_uninitialised_locals`]): the prefix, then the type (`i32`, `ptr`).
pub const UNINIT_PREFIX: &str = "__apc_uninit.";

/// Stores into every scalar local (an entry-block `alloca` of an integer or pointer) of every
/// function with a body, right after the `alloca`, the result of a call to an opaque
/// `__apc_uninit.<type>()`. Why: mem2reg reads an uninitialised local as `undef`, and LLVM's
/// simplification may then pick any value for it (`phi [0, %a], [undef, %b]` becomes `0`), while
/// the program as compiled at -O0 reads whatever the stack slot held (a value of an earlier
/// call's frame). With the opaque value in place nothing is folded, and the lowering reads it
/// as `undef` (⋆) and drops the store itself ([`is_uninit_call`]). Returns how many were
/// stored.
pub fn mark_uninitialised_locals(m: LLVMModuleRef, skip: &[&str]) -> usize {
    let mut count = 0;
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let builder = LLVMCreateBuilderInContext(ctx);
        for f in functions(m) {
            if is_declaration(f) || skip.contains(&value_name(f).as_str()) {
                continue;
            }
            let Some(&entry) = blocks(f).first() else { continue };
            for i in instructions(entry) {
                if opcode(i) != LLVMOpcode::LLVMAlloca {
                    continue;
                }
                let ty = allocated_type(i);
                let suffix = match type_kind(ty) {
                    LLVMTypeKind::LLVMIntegerTypeKind => format!("i{}", int_width(ty)),
                    LLVMTypeKind::LLVMPointerTypeKind => "ptr".to_string(),
                    _ => continue,
                };
                // A dynamic count (`alloca i32, i32 %n`) is an array, not a scalar.
                if !is_a_constant_int(operand(i, 0)) || const_int_zext(operand(i, 0)) != 1 {
                    continue;
                }
                let name = std::ffi::CString::new(format!("{UNINIT_PREFIX}{suffix}")).expect("no NUL");
                let fnty = LLVMFunctionType(ty, std::ptr::null_mut(), 0, 0);
                let mut callee = LLVMGetNamedFunction(m, name.as_ptr());
                if callee.is_null() {
                    callee = LLVMAddFunction(m, name.as_ptr(), fnty);
                }
                let next = LLVMGetNextInstruction(i);
                if next.is_null() {
                    continue;
                }
                LLVMPositionBuilderBefore(builder, next);
                let value = LLVMBuildCall2(builder, fnty, callee, std::ptr::null_mut(), 0, c"".as_ptr());
                let loc = LLVMInstructionGetDebugLoc(next);
                if !loc.is_null() {
                    LLVMInstructionSetDebugLoc(value, loc);
                }
                LLVMBuildStore(builder, value, i);
                count += 1;
            }
        }
        LLVMDisposeBuilder(builder);
    }
    count
}

/// Erases every `llvm.assume` call (`__builtin_assume(c)`). Why: compiled as the replay
/// compiles (-O0) it has no effect on the run, so a run where `c` is false goes on past it;
/// taking `c` as a fact proved blocks unreachable that such a run enters. (`__VERIFIER_assume`
/// and `--assume` are calls the program runs, and stay.) Returns how many were erased.
pub fn erase_assumptions(m: LLVMModuleRef) -> usize {
    let mut erased = 0;
    for f in functions(m) {
        for i in blocks(f).into_iter().flat_map(instructions) {
            if called_function_name(i).as_deref() == Some("llvm.assume") {
                unsafe { LLVMInstructionEraseFromParent(i) };
                erased += 1;
            }
        }
    }
    erased
}

/// The name of the function call `i` calls directly (`None`: not a call, or an indirect one).
pub fn called_function_name(i: Value) -> Option<String> {
    unsafe {
        if LLVMIsACallInst(i).is_null() {
            return None;
        }
        let callee = LLVMGetCalledValue(i);
        (!callee.is_null() && is_a_function(callee)).then(|| value_name(callee))
    }
}

/// Whether `i` is a call that never returns: of a function or at a call site marked
/// `noreturn` (clang marks `exit`, `abort`, `__assert_fail`, `longjmp` so), of `llvm.trap`, or
/// of a target marker (the analysis's own dead ends).
pub fn call_does_not_return(i: Value) -> bool {
    let Some(name) = called_function_name(i) else { return false };
    matches!(name.as_str(), "llvm.trap" | "llvm.ubsantrap" | super::target::TARGET_MARKER) || call_has_function_attribute(i, "noreturn")
}

/// The target number of `i` when it is a call of the target marker.
pub fn marker_id(i: Value) -> Option<u32> {
    if opcode(i) != LLVMOpcode::LLVMCall || called_function_name(i).as_deref() != Some(super::target::TARGET_MARKER) || call_arg_count(i) == 0 {
        return None;
    }
    let id = operand(i, 0);
    is_a_constant_int(id).then(|| const_int_zext(id) as u32)
}

/// Whether call `i` may return twice: a `setjmp` (by name, or marked `returns_twice`).
fn returns_twice(i: Value) -> bool {
    let Some(name) = called_function_name(i) else { return false };
    matches!(name.as_str(), "setjmp" | "_setjmp" | "__setjmp" | "sigsetjmp" | "__sigsetjmp" | "savectx" | "vfork" | "getcontext")
        || call_has_function_attribute(i, "returns_twice")
}

/// Whether call `i` or the function it calls carries function attribute `name`.
fn call_has_function_attribute(i: Value, name: &str) -> bool {
    // LLVMAttributeFunctionIndex: the function's own attributes.
    const FUNCTION: u32 = u32::MAX;
    let kind = unsafe { LLVMGetEnumAttributeKindForName(name.as_ptr() as *const _, name.len()) };
    let callee = unsafe { LLVMGetCalledValue(i) };
    unsafe { !LLVMGetEnumAttributeAtIndex(callee, FUNCTION, kind).is_null() || !LLVMGetCallSiteEnumAttribute(i, FUNCTION, kind).is_null() }
}

/// Marks every load and store of a function that calls `setjmp` volatile, so that mem2reg
/// keeps its locals in memory. Why: a `longjmp` returns from `setjmp` a second time with the
/// locals as the run left them in memory (at -O0 every local lives there), not with the SSA
/// values they had at the first return; kept in memory, they are forgotten with the rest of
/// memory at `setjmp` (an external call), as the engines treat it. Returns how many functions.
pub fn keep_locals_in_memory_across_setjmp(m: LLVMModuleRef) -> usize {
    let mut marked = 0;
    for f in functions(m) {
        let all: Vec<Value> = blocks(f).into_iter().flat_map(instructions).collect();
        if !all.iter().any(|&i| returns_twice(i)) {
            continue;
        }
        for &i in &all {
            if matches!(opcode(i), LLVMOpcode::LLVMLoad | LLVMOpcode::LLVMStore) {
                unsafe { LLVMSetVolatile(i, 1) };
            }
        }
        marked += 1;
    }
    marked
}

/// The function of module `m` named `name`, if any.
pub fn function_named(m: LLVMModuleRef, name: &str) -> Option<Value> {
    let c = std::ffi::CString::new(name).ok()?;
    let f = unsafe { LLVMGetNamedFunction(m, c.as_ptr()) };
    (!f.is_null()).then_some(f)
}

/// The module instruction `i` belongs to.
pub fn module_of(i: Value) -> LLVMModuleRef {
    unsafe { LLVMGetGlobalParent(LLVMGetBasicBlockParent(LLVMGetInstructionParent(i))) }
}

/// Whether `v` is a call made by [`mark_uninitialised_locals`].
pub fn is_uninit_call(v: Value) -> bool {
    unsafe {
        if LLVMIsACallInst(v).is_null() {
            return false;
        }
        let callee = LLVMGetCalledValue(v);
        !callee.is_null() && is_a_function(callee) && value_name(callee).starts_with(UNINIT_PREFIX)
    }
}

/// The first instruction of `b` that is not a phi node (null when there is none).
pub fn get_first_non_phi(b: Block) -> Value {
    instructions(b)
        .into_iter()
        .find(|&i| opcode(i) != LLVMOpcode::LLVMPHI)
        .unwrap_or(std::ptr::null_mut())
}

/// Whether parameter `index` of `f` carries the enum attribute `name` (e.g. `signext`).
pub fn param_has_attribute(f: Value, index: u32, name: &str) -> bool {
    let kind = unsafe { LLVMGetEnumAttributeKindForName(name.as_ptr() as *const _, name.len()) };
    let a = unsafe { LLVMGetEnumAttributeAtIndex(f, index + 1, kind) };
    !a.is_null()
}

pub fn set_value_name(v: Value, name: &str) {
    unsafe { LLVMSetValueName2(v, name.as_ptr() as *const _, name.len()) };
}

// ---------------------------------------------------------------------------------------------
// Diagnostics and linking. Ownership rules (ARCHITECTURE.md, "Threads and FFI ownership"): the
// context's diagnostic handler may only carry a context pointer that outlives every later
// diagnostic of that LLVM context, so the handler installed for the whole load carries none,
// and a handler that records into a local is removed before the local goes away.

/// Diagnostic handler for the whole life of a load's LLVM context: logs warnings and errors and
/// touches no memory of ours (its context pointer is null). Without any handler, LLVM would
/// `exit(1)` on an error diagnostic.
extern "C" fn log_diagnostic(info: LLVMDiagnosticInfoRef, _ctx: *mut std::os::raw::c_void) {
    use llvm_sys::LLVMDiagnosticSeverity::*;
    match unsafe { LLVMGetDiagInfoSeverity(info) } {
        LLVMDSError => tracing::warn!("LLVM error diagnostic: {}", unsafe { diagnostic_text(info) }),
        LLVMDSWarning => tracing::debug!("LLVM warning: {}", unsafe { diagnostic_text(info) }),
        _ => {}
    }
}

/// The description of a diagnostic (LLVM allocates it; we free it with `LLVMDisposeMessage`).
unsafe fn diagnostic_text(info: LLVMDiagnosticInfoRef) -> String {
    let p = unsafe { LLVMGetDiagInfoDescription(info) };
    if p.is_null() {
        return String::new();
    }
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    unsafe { LLVMDisposeMessage(p) };
    s
}

/// Installs [`log_diagnostic`] on the context of `m`.
pub fn install_diagnostic_logger(m: LLVMModuleRef) {
    unsafe { LLVMContextSetDiagnosticHandler(LLVMGetModuleContext(m), Some(log_diagnostic), std::ptr::null_mut()) };
}

/// Records the error diagnostics of one `LLVMLinkModules2` call into the `Vec<String>` its
/// context pointer names (valid for exactly that call, see [`link_modules`]).
extern "C" fn record_link_error(info: LLVMDiagnosticInfoRef, errors: *mut std::os::raw::c_void) {
    unsafe {
        if LLVMGetDiagInfoSeverity(info) == llvm_sys::LLVMDiagnosticSeverity::LLVMDSError {
            let text = diagnostic_text(info);
            (*(errors as *mut Vec<String>)).push(text);
        }
    }
}

/// Links `src` into `dst` (both of the same context); `src` is consumed.
///
/// Replaces inkwell's `Module::link_in_module`, which installs a diagnostic handler whose context
/// pointer is a local of that function and never removes it: any later error diagnostic of the
/// context (passes, verifier, a second link) would then write a pointer into a dead stack frame.
/// Here the recording handler lives exactly as long as the call, then the previous handler (and
/// its context pointer) is restored.
pub fn link_modules(dst: &inkwell::module::Module<'_>, src: inkwell::module::Module<'_>) -> Result<(), String> {
    let (d, s) = (dst.as_mut_ptr(), src.as_mut_ptr());
    // LLVMLinkModules2 destroys `src` whatever the outcome: inkwell must not dispose it again.
    std::mem::forget(src);
    link_raw(d, s)
}

/// [`link_modules`] on raw modules of one context: links `s` into `d` and destroys `s`.
pub fn link_raw(d: LLVMModuleRef, s: LLVMModuleRef) -> Result<(), String> {
    let mut errors: Vec<String> = vec![];
    let failed = unsafe {
        let ctx = LLVMGetModuleContext(d);
        let (old_handler, old_ctx) = (LLVMContextGetDiagnosticHandler(ctx), LLVMContextGetDiagnosticContext(ctx));
        LLVMContextSetDiagnosticHandler(ctx, Some(record_link_error), &mut errors as *mut Vec<String> as *mut _);
        let failed = llvm_sys::linker::LLVMLinkModules2(d, s) != 0;
        LLVMContextSetDiagnosticHandler(ctx, old_handler, old_ctx);
        failed
    };
    if failed {
        return Err(if errors.is_empty() { "LLVMLinkModules2 failed".to_string() } else { errors.join("; ") });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::context::Context;
    use inkwell::memory_buffer::MemoryBuffer;

    fn module<'c>(ctx: &'c Context, ir: &str) -> inkwell::module::Module<'c> {
        let buf = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "test");
        ctx.create_module_from_ir(buf).expect("valid IR")
    }

    fn diagnostic_state(m: &inkwell::module::Module<'_>) -> (llvm_sys::LLVMDiagnosticHandler, *mut std::os::raw::c_void) {
        unsafe {
            let ctx = LLVMGetModuleContext(m.as_mut_ptr());
            (LLVMContextGetDiagnosticHandler(ctx), LLVMContextGetDiagnosticContext(ctx))
        }
    }

    /// inkwell's `link_in_module` left the context's diagnostic context pointing into its dead
    /// stack frame; `link_modules` must leave the handler exactly as it found it, on success and
    /// on failure (where the recording handler is the one that saw the error).
    #[test]
    fn linking_leaves_no_dangling_diagnostic_handler() {
        let ctx = Context::create();
        let dst = module(&ctx, "define i32 @f() {\n  ret i32 1\n}\n");
        install_diagnostic_logger(dst.as_mut_ptr());
        let before = diagnostic_state(&dst);
        assert!(before.0.is_some() && before.1.is_null());

        let ok = module(&ctx, "define i32 @g() {\n  ret i32 2\n}\n");
        link_modules(&dst, ok).expect("disjoint modules link");
        assert!(dst.get_function("g").is_some());
        let after = diagnostic_state(&dst);
        assert_eq!(after.0.map(|h| h as usize), before.0.map(|h| h as usize), "handler restored");
        assert!(after.1.is_null(), "no context pointer into a dead frame");

        // Two definitions of @f: the linker reports an error diagnostic.
        let clash = module(&ctx, "define i32 @f() {\n  ret i32 3\n}\n");
        let err = link_modules(&dst, clash).expect_err("duplicate definition");
        assert!(err.contains('f'), "{err}");
        let after = diagnostic_state(&dst);
        assert_eq!(after.0.map(|h| h as usize), before.0.map(|h| h as usize), "handler restored after an error");
        assert!(after.1.is_null());
    }
}

/// The function type call `call` calls through.
pub fn called_function_type(call: Value) -> Type {
    unsafe { LLVMGetCalledFunctionType(call) }
}

/// The function type of function `f`.
pub fn function_type(f: Value) -> Type {
    unsafe { LLVMGlobalGetValueType(f) }
}

pub fn is_var_arg(fnty: Type) -> bool {
    unsafe { LLVMIsFunctionVarArg(fnty) != 0 }
}

/// Whether call `call` passes an argument with an ABI attribute that a plain forwarding call
/// would lose (`byval`, `sret`, `inalloca`, `preallocated`, `byref`), or is a `musttail` call.
pub fn call_has_abi_attributes(call: Value) -> bool {
    unsafe {
        if LLVMGetTailCallKind(call) == llvm_sys::LLVMTailCallKind::LLVMTailCallKindMustTail {
            return true;
        }
        let n = LLVMGetNumArgOperands(call);
        ["byval", "sret", "inalloca", "preallocated", "byref"].iter().any(|a| {
            let kind = LLVMGetEnumAttributeKindForName(a.as_ptr() as *const _, a.len());
            (1..=n).any(|k| !LLVMGetCallSiteEnumAttribute(call, k, kind).is_null())
        })
    }
}

/// Replaces the indirect call `call` (callee operand `fp`, function type `fnty`) by a call of a
/// new internal function `name` that compares `fp` with each of `candidates` (functions of
/// type `fnty`) and calls the first equal one directly, else calls `fp` as before. Returns the
/// dispatcher. The dispatcher has no debug information; its calls take the call site's line
/// when it is inlined.
pub fn replace_with_dispatcher(m: LLVMModuleRef, call: Value, name: &str, candidates: &[Value], fallback_metadata: Option<&str>) -> Value {
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let fnty = LLVMGetCalledFunctionType(call);
        let fp = LLVMGetCalledValue(call);
        let ret = LLVMGetReturnType(fnty);
        let n = LLVMCountParamTypes(fnty) as usize;
        let mut ptys: Vec<Type> = vec![std::ptr::null_mut(); n];
        if n > 0 {
            LLVMGetParamTypes(fnty, ptys.as_mut_ptr());
        }
        let ptr = LLVMPointerTypeInContext(ctx, 0);
        let mut dparams: Vec<Type> = std::iter::once(ptr).chain(ptys.iter().copied()).collect();
        let dty = LLVMFunctionType(ret, dparams.as_mut_ptr(), dparams.len() as u32, 0);
        let cname = std::ffi::CString::new(name).unwrap();
        let d = LLVMAddFunction(m, cname.as_ptr(), dty);
        LLVMSetLinkage(d, llvm_sys::LLVMLinkage::LLVMInternalLinkage);
        let is_void = LLVMGetTypeKind(ret) == LLVMTypeKind::LLVMVoidTypeKind;
        let b = LLVMCreateBuilderInContext(ctx);
        let empty = c"";
        let dfp = LLVMGetParam(d, 0);
        let mut args: Vec<Value> = (0..n).map(|k| LLVMGetParam(d, k as u32 + 1)).collect();
        let call_and_return = |b: LLVMBuilderRef, callee: Value, args: &mut Vec<Value>| {
            let r = LLVMBuildCall2(b, fnty, callee, args.as_mut_ptr(), args.len() as u32, empty.as_ptr());
            if is_void {
                LLVMBuildRetVoid(b);
            } else {
                LLVMBuildRet(b, r);
            }
        };
        let mut check = LLVMAppendBasicBlockInContext(ctx, d, c"apc.devirt.check".as_ptr());
        if fallback_metadata.is_some() {
            // The candidates are complete: state it for the engines (see `devirt`).
            let fact = function_pointer_fact(m);
            LLVMPositionBuilderAtEnd(b, check);
            let mut fargs: Vec<Value> = std::iter::once(dfp).chain(candidates.iter().copied()).collect();
            LLVMBuildCall2(b, LLVMGlobalGetValueType(fact), fact, fargs.as_mut_ptr(), fargs.len() as u32, empty.as_ptr());
        }
        for &f in candidates {
            LLVMPositionBuilderAtEnd(b, check);
            let is_f = LLVMBuildICmp(b, llvm_sys::LLVMIntPredicate::LLVMIntEQ, dfp, f, empty.as_ptr());
            let direct = LLVMAppendBasicBlockInContext(ctx, d, c"apc.devirt.call".as_ptr());
            let next = LLVMAppendBasicBlockInContext(ctx, d, c"apc.devirt.check".as_ptr());
            LLVMBuildCondBr(b, is_f, direct, next);
            LLVMPositionBuilderAtEnd(b, direct);
            call_and_return(b, f, &mut args);
            check = next;
        }
        LLVMPositionBuilderAtEnd(b, check);
        call_and_return(b, dfp, &mut args);
        if let Some(kind) = fallback_metadata {
            // The fallback call: the instruction before the return just built.
            let ret = LLVMGetLastInstruction(check);
            mark_metadata(LLVMGetPreviousInstruction(ret), kind);
        }
        // The call site: the same arguments, the pointer first.
        LLVMPositionBuilderBefore(b, call);
        let mut cargs: Vec<Value> = std::iter::once(fp).chain((0..n).map(|k| LLVMGetOperand(call, k as u32))).collect();
        let new = LLVMBuildCall2(b, dty, d, cargs.as_mut_ptr(), cargs.len() as u32, empty.as_ptr());
        let loc = LLVMInstructionGetDebugLoc(call);
        if !loc.is_null() {
            LLVMInstructionSetDebugLoc(new, loc);
        }
        if !is_void {
            LLVMReplaceAllUsesWith(call, new);
        }
        LLVMInstructionEraseFromParent(call);
        LLVMDisposeBuilder(b);
        d
    }
}

/// Whether instruction `i` carries metadata of kind `kind` (set by [`mark_metadata`]).
pub fn has_metadata(i: Value, kind: &str) -> bool {
    unsafe {
        let ctx = LLVMGetModuleContext(module_of(i));
        let id = LLVMGetMDKindIDInContext(ctx, kind.as_ptr() as *const _, kind.len() as u32);
        !LLVMGetMetadata(i, id).is_null()
    }
}

/// Attaches an empty metadata node of kind `kind` to instruction `i`.
pub fn mark_metadata(i: Value, kind: &str) {
    unsafe {
        let ctx = LLVMGetModuleContext(module_of(i));
        let id = LLVMGetMDKindIDInContext(ctx, kind.as_ptr() as *const _, kind.len() as u32);
        let node = LLVMMDNodeInContext2(ctx, std::ptr::null_mut(), 0);
        LLVMSetMetadata(i, id, LLVMMetadataAsValue(ctx, node));
    }
}

/// `void __apc_function_pointer(ptr, ...)`, a function that does nothing (see `devirt`).
fn function_pointer_fact(m: LLVMModuleRef) -> Value {
    unsafe {
        let name = std::ffi::CString::new(super::devirt::FUNCTION_POINTER_FACT).unwrap();
        let existing = LLVMGetNamedFunction(m, name.as_ptr());
        if !existing.is_null() {
            return existing;
        }
        let ctx = LLVMGetModuleContext(m);
        let mut params = [LLVMPointerTypeInContext(ctx, 0)];
        let ty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params.as_mut_ptr(), 1, 1);
        let f = LLVMAddFunction(m, name.as_ptr(), ty);
        LLVMSetLinkage(f, llvm_sys::LLVMLinkage::LLVMInternalLinkage);
        let entry = LLVMAppendBasicBlockInContext(ctx, f, c"entry".as_ptr());
        let b = LLVMCreateBuilderInContext(ctx);
        LLVMPositionBuilderAtEnd(b, entry);
        LLVMBuildRetVoid(b);
        LLVMDisposeBuilder(b);
        f
    }
}

pub fn is_internal(f: Value) -> bool {
    unsafe { matches!(LLVMGetLinkage(f), llvm_sys::LLVMLinkage::LLVMInternalLinkage | llvm_sys::LLVMLinkage::LLVMPrivateLinkage) }
}

pub fn is_intrinsic(f: Value) -> bool {
    unsafe { LLVMGetIntrinsicID(f) != 0 }
}
