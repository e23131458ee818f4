//! Stores that may leave their object, marked as targets of their own ("clobber sites").
//!
//! Why: the analysis gives every object an array of its own and promotes scalar locals to
//! registers (mem2reg), so no store can reach a neighbour. The program as compiled lays its
//! objects side by side: `char buf[8]; int admin = 0;` overflowed by a copy loop sets `admin`
//! natively (a stack buffer overflow), `ga[4] = v` writes the next global. Where a store may
//! leave its object, the analysis cannot say what happens after it, so reaching such a store
//! must rule a proof out, exactly as reaching the target does.
//!
//! How: before the store, a branch to a block that holds a target marker with a pseudo-target
//! id (at or above the number of real targets, as recursion cut sites are, see
//! [`super::recursion`]) when the access is out of bounds. Every engine then treats it as a
//! target: `unreachable` needs it proved unreachable too (the access is in bounds on every
//! path). A model that reaches it is replayed natively, and only a run that enters the real
//! target is a witness (the replay's copy of the program, saved before this pass, has no such
//! markers).
//!
//! Covered (after normalisation, so inlined helpers and promoted pointers count): stores
//! through a `getelementptr` on a local (`alloca`), a global, or a heap block of a constant
//! size (`malloc(16)`), with constant indices or one variable index (`a[i]`, `s.buf[i]`,
//! `m[2][j]`, `p[1]` after `p = &x`). Not covered: stores through other pointers (parameters,
//! pointers loaded from memory or walked in a loop, `p + k` computed apart), several variable
//! indices at once, and library calls that write (`memset`, `memcpy`, `strcpy` with lengths
//! past the object).

use super::llvm;
use llvm_sys::core::*;
use llvm_sys::debuginfo::{LLVMInstructionGetDebugLoc, LLVMInstructionSetDebugLoc};
use llvm_sys::prelude::*;
use llvm_sys::{LLVMIntPredicate, LLVMOpcode, LLVMTypeKind};

/// The byte offset a GEP adds to its base: a constant part and at most one `(index, scale)`
/// term (`None`: several variable indices, or a type structure not followed).
fn gep_offset(td: llvm_sys::target::LLVMTargetDataRef, gep: llvm::Value) -> Option<(i64, Option<(llvm::Value, i64)>)> {
    let indices: Vec<llvm::Value> = (1..llvm::num_operands(gep)).map(|k| llvm::operand(gep, k)).collect();
    let (constant, terms) = llvm::gep_byte_offset(td, llvm::gep_source_type(gep), &indices)?;
    match terms.as_slice() {
        [] => Some((constant, None)),
        [(idx, scale)] if *scale > 0 && llvm::type_kind(llvm::type_of(*idx)) == LLVMTypeKind::LLVMIntegerTypeKind => Some((constant, Some((*idx, *scale)))),
        _ => None,
    }
}

/// The size in bytes of the object `base` is (an `alloca` of a constant count, or a global),
/// if it is one.
fn object_size(td: llvm_sys::target::LLVMTargetDataRef, base: llvm::Value) -> Option<u64> {
    if llvm::is_a_global_variable(base) {
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
        return match llvm::value_name(callee).as_str() {
            "malloc" => arg(0),
            "calloc" => arg(0)?.checked_mul(arg(1)?),
            _ => None,
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

/// What a store's bounds check is.
enum Check {
    /// Out of bounds on every run that executes it.
    Always,
    /// Out of bounds when the index (as a signed 64-bit value) is outside `[lo, hi]`.
    Outside { index: llvm::Value, lo: i64, hi: i64 },
}

/// The check a store `s` needs (`None`: in bounds, or not covered).
fn check_of(td: llvm_sys::target::LLVMTargetDataRef, s: llvm::Value) -> Option<Check> {
    let ptr = llvm::operand(s, 1);
    let is_gep = unsafe { !LLVMIsAGetElementPtrInst(ptr).is_null() } || (llvm::is_a_constant_expr(ptr) && llvm::const_expr_opcode(ptr) == LLVMOpcode::LLVMGetElementPtr);
    if !is_gep {
        return None;
    }
    let size = object_size(td, llvm::operand(ptr, 0))? as i128;
    let vt = llvm::type_of(llvm::operand(s, 0));
    if !llvm::is_sized(vt) {
        return None;
    }
    let width = llvm::alloc_size(td, vt) as i128;
    let (c, term) = gep_offset(td, ptr)?;
    let c = c as i128;
    match term {
        None => (c < 0 || c + width > size).then_some(Check::Always),
        Some((index, scale)) => match in_bounds_indices(c, scale as i128, size, width) {
            None => Some(Check::Always),
            Some((lo, hi)) => Some(Check::Outside { index, lo: i64::try_from(lo).ok()?, hi: i64::try_from(hi).ok()? }),
        },
    }
}

/// When `index` is a sign or zero extension of a narrower value (`sext i32 %i to i64`, as
/// clang writes every `a[i]`): that value, whether it is signed, and the bounds it must not
/// pass, in its own range: below `lo` and above `hi` (`None`: it cannot). `None` when the index
/// is not an extension.
fn narrow_tests(index: llvm::Value, lo: i64, hi: i64) -> Option<(llvm::Value, bool, Option<i64>, Option<i64>)> {
    if unsafe { LLVMIsAInstruction(index).is_null() } {
        return None;
    }
    let signed = match llvm::opcode(index) {
        LLVMOpcode::LLVMSExt => true,
        LLVMOpcode::LLVMZExt => false,
        _ => return None,
    };
    let narrow = llvm::operand(index, 0);
    let w = llvm::int_width(llvm::type_of(narrow));
    if w == 0 || w >= 64 {
        return None;
    }
    let (min, max): (i64, i64) = if signed { (-(1i64 << (w - 1)), (1i64 << (w - 1)) - 1) } else { (0, (1i64 << w) - 1) };
    if lo > max || hi < min {
        // No value of it is in bounds: the wide test says so exactly.
        return None;
    }
    let below = (lo > min).then_some(lo);
    let above = (hi < max).then_some(hi);
    Some((narrow, signed, below, above))
}

/// The indices `i` for which an access of `width` bytes at byte offset `c + i·scale` stays
/// inside an object of `size` bytes: `0 ≤ c + i·scale ≤ size − width`, as `[lo, hi]` (`None`:
/// no index does). `scale > 0`.
fn in_bounds_indices(c: i128, scale: i128, size: i128, width: i128) -> Option<(i128, i128)> {
    let lo = (-c).div_euclid(scale) + i128::from((-c).rem_euclid(scale) != 0);
    let hi = (size - width - c).div_euclid(scale);
    (lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::in_bounds_indices;

    #[test]
    fn in_bounds_indices_of_arrays_fields_and_rows() {
        // `int a[4]`: a[0..=3].
        assert_eq!(in_bounds_indices(0, 4, 16, 4), Some((0, 3)));
        // `char buf[8]` at offset 4 of a 12-byte struct: buf[-4..=7] stays inside the struct.
        assert_eq!(in_bounds_indices(4, 1, 12, 1), Some((-4, 7)));
        // Row 2 of `int m[3][4]` (offset 32 of 48): m[2][-8..=3].
        assert_eq!(in_bounds_indices(32, 4, 48, 4), Some((-8, 3)));
        // An 8-byte store into `int a[1]` fits nowhere; a 4-byte one only at a[0].
        assert_eq!(in_bounds_indices(0, 4, 4, 8), None);
        assert_eq!(in_bounds_indices(0, 4, 4, 4), Some((0, 0)));
        // An offset that is not a multiple of the scale: 2 + 4i in [0, 12].
        assert_eq!(in_bounds_indices(2, 4, 16, 4), Some((0, 2)));
        assert_eq!(in_bounds_indices(-2, 4, 16, 4), Some((1, 3)));
    }
}

/// Marks every store of the module's defined functions that may leave its object (see the
/// module's documentation) with a branch to a target marker numbered `id`. Returns how many.
pub fn mark_clobber_sites(m: LLVMModuleRef, id: u32) -> usize {
    let td = llvm::module_target_data(m);
    let mut marked = 0;
    for f in llvm::functions(m) {
        if llvm::is_declaration(f) || llvm::value_name(f) == super::target::TARGET_MARKER {
            continue;
        }
        let stores: Vec<(llvm::Value, Check)> = llvm::blocks(f)
            .into_iter()
            .flat_map(llvm::instructions)
            .filter(|&i| llvm::opcode(i) == LLVMOpcode::LLVMStore)
            .filter_map(|s| Some((s, check_of(td, s)?)))
            .collect();
        for (s, check) in stores {
            unsafe { guard(m, s, check, id) };
            marked += 1;
        }
    }
    marked
}

/// Splits the block of store `s` right after it: what follows `s` moves to a new block, and
/// the block now ends in a branch on the check to a block with the marker (a dead end) or to
/// that rest. The store stays with the instructions that compute its value and address (a
/// loop that fills an array keeps the shape its summary recognises). After the store is as
/// good as before it: the engines model an out-of-bounds store as a write to the object's own
/// array (the DSE gives up on it, or assumes it inside and no longer claims exactness), and
/// the branch to the marker is what rules a proof out.
unsafe fn guard(m: LLVMModuleRef, s: llvm::Value, check: Check, id: u32) {
    let ctx = LLVMGetModuleContext(m);
    let block = LLVMGetInstructionParent(s);
    let next_block = LLVMGetNextBasicBlock(block);
    let (rest, clobber) = if next_block.is_null() {
        let f = LLVMGetBasicBlockParent(block);
        (LLVMAppendBasicBlockInContext(ctx, f, c"apc.inbounds".as_ptr()), LLVMAppendBasicBlockInContext(ctx, f, c"apc.clobber".as_ptr()))
    } else {
        (LLVMInsertBasicBlockInContext(ctx, next_block, c"apc.inbounds".as_ptr()), LLVMInsertBasicBlockInContext(ctx, next_block, c"apc.clobber".as_ptr()))
    };
    // The successors' phis name the block as a predecessor: it is now `rest`.
    let term = LLVMGetBasicBlockTerminator(block);
    let builder = LLVMCreateBuilderInContext(ctx);
    for succ in llvm::successors(term) {
        for phi in llvm::instructions(succ).into_iter().take_while(|&i| llvm::opcode(i) == LLVMOpcode::LLVMPHI) {
            let incoming = llvm::incoming(phi);
            if !incoming.iter().any(|&(_, b)| b == block) {
                continue;
            }
            LLVMPositionBuilderBefore(builder, phi);
            let fresh = LLVMBuildPhi(builder, llvm::type_of(phi), c"".as_ptr());
            for (v, b) in incoming {
                let mut v = [v];
                let mut b = [if b == block { rest } else { b }];
                LLVMAddIncoming(fresh, v.as_mut_ptr(), b.as_mut_ptr(), 1);
            }
            let name = llvm::value_name(phi);
            LLVMReplaceAllUsesWith(phi, fresh);
            LLVMInstructionEraseFromParent(phi);
            llvm::set_value_name(fresh, &name);
        }
    }
    LLVMPositionBuilderAtEnd(builder, rest);
    let mut after = false;
    for i in llvm::instructions(block) {
        if after {
            LLVMInstructionRemoveFromParent(i);
            LLVMInsertIntoBuilder(builder, i);
        }
        after |= i == s;
    }
    LLVMPositionBuilderAtEnd(builder, block);
    let loc = LLVMInstructionGetDebugLoc(s);
    let out_of_bounds = match check {
        Check::Always => LLVMConstInt(LLVMInt1TypeInContext(ctx), 1, 0),
        Check::Outside { index, lo, hi } => match narrow_tests(index, lo, hi) {
            // The index as the program computed it (`i`, not `sext(i)`): tests like the
            // loop's own (`i > 30`), which the loop summaries bound without a quantifier.
            Some((narrow, signed, below, above)) => {
                let t = llvm::type_of(narrow);
                let (lt, gt) = if signed { (LLVMIntPredicate::LLVMIntSLT, LLVMIntPredicate::LLVMIntSGT) } else { (LLVMIntPredicate::LLVMIntULT, LLVMIntPredicate::LLVMIntUGT) };
                let tests: Vec<LLVMValueRef> = [(lt, below), (gt, above)]
                    .into_iter()
                    .filter_map(|(p, b)| b.map(|b| LLVMBuildICmp(builder, p, narrow, LLVMConstInt(t, b as u64, i32::from(signed)), c"apc.oob".as_ptr())))
                    .collect();
                match tests.as_slice() {
                    [] => LLVMConstInt(LLVMInt1TypeInContext(ctx), 0, 0),
                    [one] => *one,
                    // Two branches, not `or`: each test alone is monotone in the loop's
                    // counter, and the summaries drop the quantifier of such a test only.
                    [below, above, ..] => {
                        let second = LLVMInsertBasicBlockInContext(ctx, rest, c"apc.bounds".as_ptr());
                        let br = LLVMBuildCondBr(builder, *below, clobber, second);
                        if !loc.is_null() {
                            LLVMInstructionSetDebugLoc(br, loc);
                        }
                        LLVMPositionBuilderAtEnd(builder, second);
                        *above
                    }
                }
            }
            None => {
                let i64t = LLVMInt64TypeInContext(ctx);
                let w = llvm::int_width(llvm::type_of(index));
                let wide = match w.cmp(&64) {
                    std::cmp::Ordering::Less => LLVMBuildSExt(builder, index, i64t, c"apc.idx".as_ptr()),
                    std::cmp::Ordering::Greater => LLVMBuildTrunc(builder, index, i64t, c"apc.idx".as_ptr()),
                    std::cmp::Ordering::Equal => index,
                };
                let from_lo = LLVMBuildSub(builder, wide, LLVMConstInt(i64t, lo as u64, 1), c"apc.off".as_ptr());
                let span = LLVMConstInt(i64t, hi.wrapping_sub(lo) as u64, 0);
                LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntUGT, from_lo, span, c"apc.oob".as_ptr())
            }
        },
    };
    let br = LLVMBuildCondBr(builder, out_of_bounds, clobber, rest);
    if !loc.is_null() {
        LLVMInstructionSetDebugLoc(br, loc);
    }
    // A dead end: what follows an out-of-bounds store is not analysed (a path into the marker
    // has reached a target), and a loop whose body stores keeps its iteration paths (a way back
    // into the body would add one per store, and weaken its summary).
    LLVMPositionBuilderAtEnd(builder, clobber);
    let end = LLVMBuildUnreachable(builder);
    LLVMDisposeBuilder(builder);
    llvm::insert_marker_call(m, super::target::TARGET_MARKER, clobber, Some(end), id);
}
