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
//! Covered (after normalisation, so inlined helpers and promoted pointers count): writes into
//! a local (`alloca`, a variable-length array too), a global defined here, or a heap block
//! (`malloc(16)`, `malloc(n)`, `calloc(n, m)`: the size the program computed), through any
//! pointer the pass can follow back to that object through `getelementptr`s, phis and selects:
//! - stores by index (`a[i]`, `s.buf[i]`, `m[2][j]`, `p[1]` after `p = &x`), tested on the index
//!   as the program computed it;
//! - stores through a pointer walked by a loop (`*p++ = c`), several indices (`m[i][j]`) or
//!   pointer arithmetic (`q = p + k`), tested on a byte offset computed beside the pointer
//!   ([`Places`]);
//! - `memset`, `memcpy` and `memmove` (LLVM's intrinsics) of a length past the object, the C
//!   library's writers ([`library_write`]: `strcpy`, `fgets`, `scanf`'s `%s`, ...), atomic
//!   read-modify-writes;
//! - always: stores through a pointer made from an integer or by inline assembly, pointers
//!   handed to inline assembly, any access to a heap block after a `free` of it, and a
//!   `__builtin_unreachable()` (at -O0 the run falls through it into the code that follows).
//!
//! A pointer into one of several objects (`c ? a : b`) is tested on an offset and a size
//! computed beside it (the object on the path taken); a pointer loaded from a local of the
//! function on where the pointers stored there point ([`slots`]; forged when its bytes were
//! written otherwise, such as through a union's integer view or `memcpy`).
//!
//! A pointer loaded where its offset cannot be computed is forged (always a clobber site
//! when written through): into one of several objects, into a block allocated in a loop, or
//! from memory the pass does not follow once the function stored a pointer into a local or a
//! global there. A C library function outside the table given a pointer into an object, unless
//! known to only read ([`library::reads_only`]), is a clobber site, as is a storing intrinsic.
//!
//! Not covered: writes through pointers the pass cannot follow and that no pointer into a
//! local or global of the function reached (parameters, by the input model; pointers returned
//! by stubbed external functions; pointers to heap blocks kept in heap blocks, a list's nodes),
//! and `%n` in a format handed to a `vprintf`-style function.

mod library;
mod places;
mod slots;

use super::llvm;
use library::{constant_string, count_sizes, library_writes, print_max_len, reads_only, scan_sizes, LibraryWrite};
use llvm_sys::core::*;
use llvm_sys::debuginfo::{LLVMInstructionGetDebugLoc, LLVMInstructionSetDebugLoc};
use llvm_sys::prelude::*;
use llvm_sys::{LLVMIntPredicate, LLVMOpcode, LLVMTypeKind};
use places::{constant_of, dynamic_size, gep_byte_offset, is_gep, is_int64, object_size, to_i64, AfterFree, Bytes, Origin, Places};

/// The byte offset a GEP adds to its base when it has at most one variable index, of a
/// positive scale: a constant part and that `(index, scale)` term.
fn single_index_offset(td: llvm_sys::target::LLVMTargetDataRef, gep: llvm::Value) -> Option<(i64, Option<(llvm::Value, i64)>)> {
    let (constant, terms) = gep_byte_offset(td, gep)?;
    match terms.as_slice() {
        [] => Some((constant, None)),
        [(idx, scale)] if *scale > 0 => Some((constant, Some((*idx, *scale)))),
        _ => None,
    }
}

/// What a store's bounds check is.
enum Check {
    /// Out of bounds on every run that executes it.
    Always,
    /// Out of bounds when the index (as a signed 64-bit value) is outside `[lo, hi]`.
    Outside { index: llvm::Value, lo: i64, hi: i64 },
    /// Possibly out of bounds when one of the indices is outside its range (`[lo, hi]`).
    Within(Vec<(llvm::Value, i64, i64)>),
    /// Out of bounds when the byte offset into the object (an `i64` the pass computed beside
    /// the program's pointer, see [`Places`]) is outside `[0, hi]`.
    Offset { offset: llvm::Value, hi: i64 },
    /// A write of `len` bytes (`memset`, `fgets`, or a store into a variable-length array) at
    /// byte offset `offset` of an object of `size` bytes: out of bounds when it does not fit.
    Span { offset: llvm::Value, len: Count, size: Bytes },
}

/// A length: a constant, one integer the program computed, the product of two (`fread`), or
/// one times a constant (`wmemcpy`).
enum Count {
    Constant(u64),
    One(llvm::Value),
    Two(llvm::Value, llvm::Value),
    Scaled(llvm::Value, u64),
}

/// A GEP's constant byte offset and its variable indices, each with its scale and the length
/// of the array dimension it indexes (`m[i][j]` on `int m[8][32]`: `(i, 128, 8)`, `(j, 4, 32)`).
/// `None` when an index is not into an array dimension (a variable first index: pointer
/// arithmetic) or the type is not followed.
fn dimensioned_indices(td: llvm_sys::target::LLVMTargetDataRef, gep: llvm::Value) -> Option<(i64, Vec<(llvm::Value, i64, u64)>)> {
    let indices: Vec<llvm::Value> = (1..llvm::num_operands(gep)).map(|k| llvm::operand(gep, k)).collect();
    let mut constant: i64 = 0;
    let mut dims = vec![];
    let mut ty = llvm::gep_source_type(gep);
    for (k, &idx) in indices.iter().enumerate() {
        let kind = llvm::type_kind(ty);
        if k > 0 && kind == LLVMTypeKind::LLVMStructTypeKind {
            let field = u32::try_from(constant_of(idx)?).ok()?;
            constant = constant.checked_add(llvm::struct_offset(td, ty, field) as i64)?;
            ty = *llvm::struct_element_types(ty).get(field as usize)?;
            continue;
        }
        let (scale, next, len) = match (k, kind) {
            (0, _) => (llvm::alloc_size(td, ty) as i64, ty, None),
            (_, LLVMTypeKind::LLVMArrayTypeKind) => {
                let e = llvm::element_type(ty);
                (llvm::alloc_size(td, e) as i64, e, Some(llvm::array_length(ty)))
            }
            _ => return None,
        };
        if !llvm::is_sized(next) {
            return None;
        }
        ty = next;
        match (constant_of(idx), len) {
            (Some(v), _) => constant = constant.checked_add(v.checked_mul(scale)?)?,
            (None, Some(len)) if len > 0 && llvm::type_kind(llvm::type_of(idx)) == LLVMTypeKind::LLVMIntegerTypeKind => dims.push((idx, scale, len)),
            _ => return None,
        }
    }
    Some((constant, dims))
}

/// The check a store `s` needs (`None`: in bounds, or not covered).
fn check_of(td: llvm_sys::target::LLVMTargetDataRef, places: &mut Places, s: llvm::Value) -> Option<Check> {
    // The address and the value written: a store's, an atomic read-modify-write's, a
    // compare-and-swap's.
    let (ptr, value) = match llvm::opcode(s) {
        LLVMOpcode::LLVMStore => (llvm::operand(s, 1), llvm::operand(s, 0)),
        LLVMOpcode::LLVMAtomicRMW => (llvm::operand(s, 0), llvm::operand(s, 1)),
        LLVMOpcode::LLVMAtomicCmpXchg => (llvm::operand(s, 0), llvm::operand(s, 2)),
        _ => return None,
    };
    if places.get(ptr) == Origin::Forged {
        return Some(Check::Always);
    }
    let vt = llvm::type_of(value);
    if !llvm::is_sized(vt) {
        return None;
    }
    let width = llvm::alloc_size(td, vt) as i128;
    if is_gep(ptr) {
        if let (Some(size), Some((c, term))) = (object_size(td, llvm::operand(ptr, 0)), single_index_offset(td, ptr)) {
            // A GEP on the object itself with one index: the index as the program wrote it
            // (`a[i]`), tests the loop summaries know.
            let (size, c) = (size as i128, c as i128);
            return match term {
                None => (c < 0 || c + width > size).then_some(Check::Always),
                Some((index, scale)) => match in_bounds_indices(c, scale as i128, size, width) {
                    None => Some(Check::Always),
                    Some((lo, hi)) => Some(Check::Outside { index, lo: i64::try_from(lo).ok()?, hi: i64::try_from(hi).ok()? }),
                },
            };
        }
    }
    if is_gep(ptr) {
        if let (Some(size), Some((c, dims))) = (object_size(td, llvm::operand(ptr, 0)), dimensioned_indices(td, ptr)) {
            // `m[i][j]` on the object itself: each index within its dimension keeps the access
            // inside (checked here), and such tests are the loops' own. Stricter than the
            // object's bounds (`m[0][40]` is inside it), which only costs a proof.
            let most = dims.iter().map(|&(_, scale, len)| (len as i128 - 1) * scale as i128).sum::<i128>();
            if c >= 0 && c as i128 + most + width <= size as i128 {
                let ranges = dims.into_iter().map(|(index, _, len)| Some((index, 0, i64::try_from(len).ok()? - 1))).collect::<Option<Vec<_>>>()?;
                return Some(Check::Within(ranges));
            }
        }
    }
    // Any other pointer into a known object (`*p++ = c` in a loop, `q = p + k`): the byte
    // offset the pass tracks beside it.
    let Some((object, offset)) = places.offset(ptr) else {
        // Into one of several objects (`c ? a : b`): the offset into the one on the path
        // taken, against its size.
        let (offset, size) = places.offset_and_size(ptr)?;
        return Some(Check::Span { offset, len: Count::Constant(width as u64), size: Bytes::Count(size, 1) });
    };
    let Some(size) = object_size(td, object) else {
        return Some(Check::Span { offset, len: Count::Constant(width as u64), size: dynamic_size(td, object)? });
    };
    let hi = size as i128 - width;
    if hi < 0 {
        return Some(Check::Always);
    }
    match constant_of(offset) {
        Some(c) => (c < 0 || c as i128 > hi).then_some(Check::Always),
        None => Some(Check::Offset { offset, hi: i64::try_from(hi).ok()? }),
    }
}

/// The checks a call `c` that writes memory needs, one per object it may write past:
/// `llvm.memset`, `llvm.memcpy` and `llvm.memmove` of a length past their destination, and
/// the C library's writers ([`library_write`]) into a known object.
fn call_checks_of(td: llvm_sys::target::LLVMTargetDataRef, places: &mut Places, writers: &Writers, c: llvm::Value) -> Vec<Check> {
    let callee = unsafe { LLVMGetCalledValue(c) };
    let args = llvm::call_arg_count(c);
    let reaches = (0..args).any(|k| places.may_point_into_writable(llvm::operand(c, k)));
    if callee.is_null() || llvm::is_a_inline_asm(callee) {
        // Inline assembly: may write anywhere from a pointer it is given, and call the target
        // by name.
        let calls_the_target = writers.call_target.as_deref().is_some_and(|t| !callee.is_null() && llvm::inline_asm_text(callee).contains(t));
        return if reaches || calls_the_target { vec![Check::Always] } else { vec![] };
    }
    if writers.callbacks_reach_a_target && (runs_a_callback(c) || (writers.library_runs_a_target && llvm::is_a_function(callee) && llvm::is_declaration(callee) && !llvm::value_name(callee).starts_with("llvm."))) {
        // The callback may enter a target the analysis does not see: a run through this call
        // is replayed, and a proof must show no run gets here.
        return vec![Check::Always];
    }
    if !llvm::is_a_function(callee) {
        // A function called through a pointer: may write anywhere from a pointer it is given,
        // and, when it is one of the module's writers, past its own arrays into this frame or
        // through pointers kept in memory.
        return if reaches || writers.address_taken { vec![Check::Always] } else { vec![] };
    }
    let name = llvm::value_name(callee);
    if name == "vfork" {
        // The child runs in this frame until it execs or exits: what it writes, this run reads
        // when `vfork` returns the second time.
        return vec![Check::Always];
    }
    if writers.call_target.as_deref() == Some(name.as_str()) {
        let before = unsafe { LLVMGetPreviousInstruction(c) };
        return if before.is_null() || llvm::marker_id(before).is_none() { vec![Check::Always] } else { vec![] };
    }
    // A recursion cut (`load::recursion`) stands for the recursive function.
    let body = match super::recursion::cut_of(&name) {
        Some(original) => llvm::function_named(llvm::module_of(c), original),
        None => (!llvm::is_declaration(callee)).then_some(callee),
    };
    if let Some(body) = body.filter(|_| name != super::target::TARGET_MARKER) {
        // A function not inlined (recursion cut, variadic): its writes are not checked where
        // the pass sees them, neither through a pointer it is given nor past an array of its
        // own frame (which lies below this one: past its end is this frame's locals).
        return if writers.set.contains(&body) || (reaches && prints_from_a_va_list(body)) { vec![Check::Always] } else { vec![] };
    }
    if (0..args).any(|k| writers.set.contains(&llvm::operand(c, k))) || (writers.address_taken && runs_callbacks(&name)) {
        // A function of the module that writes memory handed to the C library (a signal
        // handler, `qsort`'s comparator, an `atexit` callback), directly or through memory
        // (`sigaction`'s struct, a table): it may run there or at a later call that runs
        // callbacks, writing where its pointers point, which the pass does not follow.
        return vec![Check::Always];
    }
    let writes = if ["llvm.memset.", "llvm.memcpy.", "llvm.memmove."].iter().any(|p| name.starts_with(p)) {
        vec![LibraryWrite::Bounded { dest: 0, n: 2, times: None }]
    } else if llvm::is_declaration(callee) {
        if reaches && writes_unlisted(&name) {
            // Given a pointer into an object, a function whose writes the pass does not know
            // (an intrinsic that stores, a C library function not in the table): anywhere.
            return vec![Check::Always];
        }
        library_writes(&name)
    } else {
        return vec![];
    };
    let args = llvm::call_arg_count(c);
    let arg = |k: u32| (k < args).then(|| llvm::operand(c, k));
    let mut checks = vec![];
    for write in writes {
        match write {
            LibraryWrite::Bounded { dest, n, times } => {
                let (Some(dest), Some(n)) = (arg(dest), arg(n)) else { continue };
                let len = match times.map(arg) {
                    None => Length::Value(n),
                    Some(Some(m)) => Length::Product(n, m),
                    Some(None) => continue,
                };
                checks.extend(span_check(td, places, dest, len));
            }
            LibraryWrite::Wide { dest, n } => {
                let (Some(dest), Some(n)) = (arg(dest), arg(n)) else { continue };
                checks.extend(span_check(td, places, dest, Length::Scaled(n, 4)));
            }
            LibraryWrite::Fixed { dest, bytes } => {
                let Some(dest) = arg(dest) else { continue };
                if !llvm::is_a_null_pointer(dest) {
                    checks.extend(span_check(td, places, dest, Length::Constant(bytes)));
                }
            }
            LibraryWrite::String { dest, src } => {
                let (Some(dest), Some(src)) = (arg(dest), arg(src)) else { continue };
                let len = match constant_string(td, src) {
                    Some(text) => Length::Constant(text.len() as u64 + 1),
                    None => Length::Unbounded,
                };
                checks.extend(span_check(td, places, dest, len));
            }
            LibraryWrite::Print { dest, format } => {
                let (Some(dest), Some(fmt)) = (arg(dest), arg(format)) else { continue };
                let len = match constant_string(td, fmt).and_then(|f| print_max_len(&f)) {
                    Some(n) => Length::Constant(n + 1),
                    None => Length::Unbounded,
                };
                checks.extend(span_check(td, places, dest, len));
            }
            LibraryWrite::Unbounded { dest } => {
                let Some(dest) = arg(dest) else { continue };
                checks.extend(span_check(td, places, dest, Length::Unbounded));
            }
            LibraryWrite::Count { format } => {
                let Some(fmt) = arg(format) else { continue };
                // Without the format, any pointer argument may get a `%lln`'s 8 bytes.
                let sizes = constant_string(td, fmt).and_then(|f| count_sizes(&f));
                for k in format + 1..args {
                    let a = llvm::operand(c, k);
                    let bytes = match &sizes {
                        Some(sizes) => match sizes.get((k - format - 1) as usize) {
                            Some(Some(n)) => *n,
                            _ => continue,
                        },
                        None if llvm::type_kind(llvm::type_of(a)) == LLVMTypeKind::LLVMPointerTypeKind => 8,
                        None => continue,
                    };
                    checks.extend(span_check(td, places, a, Length::Constant(bytes)));
                }
            }
            LibraryWrite::Scan { format } => {
                let Some(fmt) = arg(format) else { continue };
                // Without the format, every pointer argument may get a string of any length.
                let sizes = constant_string(td, fmt).and_then(|f| scan_sizes(&f));
                for k in format + 1..args {
                    let len = match sizes.as_ref().map(|s| s.get((k - format - 1) as usize).copied()) {
                        Some(Some(Some(n))) => Length::Constant(n),
                        Some(None) => continue,
                        _ => Length::Unbounded,
                    };
                    checks.extend(span_check(td, places, llvm::operand(c, k), len));
                }
            }
        }
    }
    checks
}

/// How many bytes a call writes.
enum Length {
    Constant(u64),
    /// An integer argument (an unsigned count; a narrower one is sign-extended, as C's `int n`).
    Value(llvm::Value),
    /// The product of two (`fread`'s size and count).
    Product(llvm::Value, llvm::Value),
    /// An integer argument times a constant (`wmemcpy`'s count of wide characters).
    Scaled(llvm::Value, u64),
    /// As many as the run says.
    Unbounded,
}

/// The check of a write of `len` bytes at `dest` (`None`: `dest` is not followed to an object,
/// or the write fits).
fn span_check(td: llvm_sys::target::LLVMTargetDataRef, places: &mut Places, dest: llvm::Value, len: Length) -> Option<Check> {
    if places.get(dest) == Origin::Forged && !matches!(len, Length::Constant(0)) {
        // Anywhere, a neighbour of any object included (as a store through it).
        return Some(Check::Always);
    }
    let (object, offset) = match places.offset(dest) {
        Some((object, offset)) => (Ok(object), offset),
        None => places.offset_and_size(dest).map(|(offset, size)| (Err(size), offset))?,
    };
    let len = match len {
        Length::Unbounded => return Some(Check::Always),
        Length::Constant(0) => return None,
        Length::Constant(n) => Count::Constant(n),
        // A constant length is an unsigned count (`size_t`; a negative `int` one too).
        Length::Value(n) if llvm::is_a_constant_int(n) && is_int64(n) => match constant_of(n)? as u64 {
            0 => return None,
            n => Count::Constant(n),
        },
        Length::Value(n) if is_int64(n) => Count::One(n),
        Length::Product(a, b) if is_int64(a) && is_int64(b) => Count::Two(a, b),
        Length::Scaled(n, k) if is_int64(n) => Count::Scaled(n, k),
        _ => return None,
    };
    let object = match object {
        Ok(object) => object,
        // Into one of several objects: the size of the one on the path taken.
        Err(size) => return Some(Check::Span { offset, len, size: Bytes::Count(size, 1) }),
    };
    let Some(size) = object_size(td, object) else {
        // A variable-length array or heap block: checked against the size the program computed.
        return Some(Check::Span { offset, len, size: dynamic_size(td, object)? });
    };
    if let Count::Constant(n) = len {
        // Decided here when the offset is a constant too, else a test of the offset alone.
        let hi = size as i128 - n as i128;
        return match constant_of(offset) {
            Some(o) => (o < 0 || o as i128 > hi).then_some(Check::Always),
            None if hi < 0 => Some(Check::Always),
            None => Some(Check::Offset { offset, hi: i64::try_from(hi).ok()? }),
        };
    }
    Some(Check::Span { offset, len, size: Bytes::Constant(i64::try_from(size).ok()?) })
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
pub fn mark_clobber_sites(m: LLVMModuleRef, id: u32, outside: &Outside) -> usize {
    let td = llvm::module_target_data(m);
    let writers = writers(m, id, outside);
    let mut marked = 0;
    for f in llvm::functions(m) {
        if llvm::is_declaration(f) || llvm::value_name(f) == super::target::TARGET_MARKER {
            continue;
        }
        let mut places = Places::new(td, m, f);
        let after_free = AfterFree::new(f, &places);
        let writes: Vec<(llvm::Value, Vec<Check>)> = llvm::blocks(f)
            .into_iter()
            .flat_map(llvm::instructions)
            .map(|i| match llvm::opcode(i) {
                _ if after_free.may_follow(&places, i) => (i, vec![Check::Always]),
                LLVMOpcode::LLVMStore | LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMAtomicCmpXchg => (i, check_of(td, &mut places, i).into_iter().collect()),
                LLVMOpcode::LLVMCall => (i, call_checks_of(td, &mut places, &writers, i)),
                _ => (i, vec![]),
            })
            .filter(|(_, checks)| !checks.is_empty())
            .collect();
        drop(places);
        // The tests first, before their writes, for every write: guarding one rebuilds the
        // phis of its block's successors, and a later write's check may name one (a loop's
        // offset phi); its tests, built now, keep their operands up to date.
        let tests: Vec<(llvm::Value, Vec<LLVMValueRef>)> =
            writes.into_iter().map(|(s, checks)| (s, checks.into_iter().flat_map(|check| unsafe { tests_of(m, s, check) }).collect())).collect();
        for (s, tests) in tests {
            unsafe { guard(m, s, &tests, id) };
            marked += 1;
        }
        if writers.start_runs_a_target {
            let entry = unsafe { LLVMGetEntryBasicBlock(f) };
            let first = llvm::instructions(entry).into_iter().find(|&i| llvm::opcode(i) != LLVMOpcode::LLVMPHI);
            llvm::insert_marker_call(m, super::target::TARGET_MARKER, entry, first, id);
            marked += 1;
        }
        for block in llvm::blocks(f) {
            let term = unsafe { LLVMGetBasicBlockTerminator(block) };
            let exits = writers.exit_runs_a_target && llvm::opcode(term) == LLVMOpcode::LLVMRet;
            if !term.is_null() && (is_bare_unreachable(term) || exits) {
                llvm::insert_marker_call(m, super::target::TARGET_MARKER, block, Some(term), id);
                marked += 1;
            }
        }
    }
    marked
}

/// The module's defined functions that may write memory, and whether the address of one of
/// them is taken (it may run where a call runs a function through a pointer or a callback).
struct Writers {
    set: std::collections::HashSet<llvm::Value>,
    address_taken: bool,
    /// A function run through a pointer to it reaches a real target (`--call reach_error`
    /// from a `qsort` comparator, a signal or `atexit` handler): every call that may run it
    /// is a site of its own (see [`call_checks_of`]).
    callbacks_reach_a_target: bool,
    /// Such a function may be a destructor: it runs when the program exits (`exit`, a return
    /// from `main`), so those are sites too.
    exit_runs_a_target: bool,
    /// Or a constructor: it ran before the analysed function starts, whose entry is a site.
    start_runs_a_target: bool,
    /// A function of the program that the C library calls under its own name (`malloc`)
    /// reaches a target: every call of the C library is a site.
    library_runs_a_target: bool,
    /// The `--call` function: a call of it that no marker precedes was made direct by the
    /// normalisation (through a pointer as written: `fp = reach_error; fp()`), and the native
    /// runs have no marker there.
    call_target: Option<String>,
}

/// Whether C library function `name` may run a function of the program and then return: one
/// it is given, or one registered before (a signal handler, from its registration on, since a
/// signal may come at any time after; a thread's start routine; a comparator). Not `exit` and
/// `abort`: what their handlers write, no later code of the program reads.
fn runs_callbacks(name: &str) -> bool {
    matches!(
        name,
        "raise" | "kill" | "killpg" | "tgkill" | "pthread_kill" | "sigqueue" | "alarm" | "ualarm" | "setitimer" | "timer_settime" | "pause" | "sigsuspend"
            | "signal" | "sigaction" | "sigset" | "bsd_signal" | "sysv_signal" | "sigprocmask" | "pthread_sigmask" | "sigrelse"
            | "pthread_create" | "pthread_once" | "qsort" | "qsort_r" | "bsearch" | "lfind" | "lsearch" | "tsearch" | "tfind" | "tdelete" | "twalk" | "twalk_r"
            | "ftw" | "nftw" | "scandir" | "glob"
    )
}

/// The defined functions that may write memory: a store, an atomic, a memory intrinsic, a call
/// of a C library writer, of a function through a pointer, of inline assembly, of a library
/// function given one of these (a callback), or of another of these.
/// What may run without a direct call of the program, found before the normalisation (which
/// promotes function pointers kept in locals, and with them the sign that an address was
/// taken): the functions run through pointers and those they call, by name, and whether the
/// `--call` function's own address is taken.
pub struct Outside {
    call_target: Option<String>,
    functions: std::collections::HashSet<String>,
    target_address_taken: bool,
}

impl Outside {
    pub fn of(m: LLVMModuleRef, call_target: Option<&str>) -> Outside {
        let functions = llvm::functions(m)
            .into_iter()
            .filter(|&g| !llvm::is_declaration(g) && super::target::runs_from_outside(g))
            .flat_map(super::target::reachable_functions)
            .map(llvm::value_name)
            .collect();
        let target_address_taken = call_target.and_then(|name| llvm::function_named(m, name)).is_some_and(llvm::address_taken);
        Outside { call_target: call_target.map(str::to_string), functions, target_address_taken }
    }
}

fn writers(m: LLVMModuleRef, real_targets: u32, outside: &Outside) -> Writers {
    let set = writer_set(m);
    let address_taken = set.iter().any(|&f| llvm::address_taken(f));
    // The `--call` function itself called through a pointer (`fp = reach_error; fp()`) is a
    // call of it that no marker precedes.
    let callbacks_reach_a_target =
        outside.target_address_taken || reached_from(m, real_targets, |g| llvm::address_taken(g) || outside.functions.contains(&llvm::value_name(g)));
    let exit_runs_a_target = callbacks_reach_a_target && llvm::has_destructors(m);
    let start_runs_a_target = callbacks_reach_a_target && llvm::has_constructors(m);
    // A function of the program that stands in for one of the C library (its own `malloc`),
    // which the C library's functions call (`strdup`), reaching a target.
    let library_runs_a_target = reached_from(m, real_targets, |g| super::clib::c_library_defines(&llvm::value_name(g)) == Some(true));
    Writers {
        set,
        address_taken,
        callbacks_reach_a_target: callbacks_reach_a_target || library_runs_a_target,
        exit_runs_a_target,
        start_runs_a_target,
        library_runs_a_target,
        call_target: outside.call_target.clone(),
    }
}

/// Whether a real target (a marker numbered below `real_targets`) is in a defined function
/// that `root` picks, or in one such a function calls.
fn reached_from(m: LLVMModuleRef, real_targets: u32, root: impl Fn(llvm::Value) -> bool) -> bool {
    llvm::functions(m)
        .into_iter()
        .filter(|&g| !llvm::is_declaration(g) && root(g))
        .flat_map(super::target::reachable_functions)
        .any(|g| llvm::blocks(g).into_iter().flat_map(llvm::instructions).any(|i| llvm::marker_id(i).is_some_and(|id| id < real_targets)))
}

/// Whether call `c` may run a function of the program through a pointer: a call through a
/// pointer, a C library function that runs callbacks or registers an exit handler, a call
/// given a function of the module.
fn runs_a_callback(c: llvm::Value) -> bool {
    let callee = llvm::called_value(c);
    if llvm::is_a_inline_asm(callee) {
        return false;
    }
    if !llvm::is_a_function(callee) {
        return true;
    }
    let name = llvm::value_name(callee);
    if name.starts_with("llvm.") || !llvm::is_declaration(callee) {
        return false;
    }
    runs_callbacks(&name) || registers_exit_handler(&name) || matches!(name.as_str(), "exit" | "quick_exit") || (0..llvm::call_arg_count(c)).any(|k| {
        let a = llvm::operand(c, k);
        llvm::is_a_function(a) && !llvm::is_declaration(a)
    })
}

/// Whether declared function `name` may write through a pointer it is given in ways the table
/// does not describe: an intrinsic that may store (`llvm.masked.store`, the x86 ones), or a
/// function the C library defines (it runs for real natively) that neither the table lists
/// nor is known to only read ([`reads_only`]). Other declared functions get stubs natively.
fn writes_unlisted(name: &str) -> bool {
    if let Some(intrinsic) = name.strip_prefix("llvm.") {
        const HARMLESS: &[&str] = &[
            "lifetime.", "dbg.", "va_start", "va_end", "va_copy", "prefetch", "invariant.", "launder.invariant.group", "strip.invariant.group", "objectsize",
            "ptrmask", "assume", "expect", "masked.load", "masked.gather", "stacksave", "stackrestore", "memset.", "memcpy.", "memmove.",
            "experimental.noalias.scope.decl", "annotation", "var.annotation", "ptr.annotation", "frameaddress", "returnaddress", "trap", "debugtrap",
        ];
        return !HARMLESS.iter().any(|h| intrinsic.starts_with(h));
    }
    // The compiler's runtime for atomics on objects of odd sizes (libatomic's `__atomic_store`).
    if name.starts_with("__atomic_") || name.starts_with("__sync_") {
        return true;
    }
    library_writes(name).is_empty() && !reads_only(name) && super::clib::c_library_defines(name) != Some(false)
}

/// Whether declared function `name` may write memory it is given: listed in the table, or
/// unlisted ([`writes_unlisted`]).
fn library_may_write(name: &str) -> bool {
    !library_writes(name).is_empty() || writes_unlisted(name)
}

/// Whether function `f` calls a `vprintf`-style function (a variadic wrapper of `printf`): a
/// `%n` in the format its caller gives writes through a pointer its caller gives.
fn prints_from_a_va_list(f: llvm::Value) -> bool {
    llvm::blocks(f).into_iter().flat_map(llvm::instructions).any(|i| {
        llvm::called_function_name(i).is_some_and(|n| {
            matches!(library::unfortified(&n), "vprintf" | "vfprintf" | "vdprintf" | "vsyslog" | "vasprintf" | "vsprintf" | "vsnprintf" | "vwarn" | "vwarnx" | "verr" | "verrx" | "vswprintf" | "vwprintf" | "vfwprintf")
        })
    })
}

/// Whether C library function `name` registers a handler run when the program exits.
fn registers_exit_handler(name: &str) -> bool {
    matches!(name, "atexit" | "on_exit" | "__cxa_atexit" | "at_quick_exit")
}

fn writer_set(m: LLVMModuleRef) -> std::collections::HashSet<llvm::Value> {
    functions_that_write(m, &|store| !llvm::is_uninit_call(llvm::operand(store, 0)))
}

/// The defined functions of `m` that may write memory: a store `counts`, an atomic, a memory
/// intrinsic, a call of a C library writer, of a function through a pointer or of inline
/// assembly, of a library function given one of these (a callback), or of another of these.
pub(super) fn functions_that_write(m: LLVMModuleRef, counts: &dyn Fn(llvm::Value) -> bool) -> std::collections::HashSet<llvm::Value> {
    let defined: Vec<llvm::Value> = llvm::functions(m).into_iter().filter(|&f| !llvm::is_declaration(f)).collect();
    let mut writers = std::collections::HashSet::new();
    loop {
        let before = writers.len();
        for &f in &defined {
            if writers.contains(&f) {
                continue;
            }
            let writes = llvm::blocks(f).into_iter().flat_map(llvm::instructions).any(|i| match llvm::opcode(i) {
                LLVMOpcode::LLVMStore => counts(i),
                LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMAtomicCmpXchg => true,
                LLVMOpcode::LLVMCall => {
                    let callee = llvm::called_value(i);
                    if !llvm::is_a_function(callee) {
                        return true;
                    }
                    let name = llvm::value_name(callee);
                    if let Some(intrinsic) = name.strip_prefix("llvm.") {
                        return ["memset", "memcpy", "memmove"].iter().any(|p| intrinsic.starts_with(p)) || writes_unlisted(&name);
                    }
                    writers.contains(&callee) || (llvm::is_declaration(callee) && (library_may_write(&name) || (0..llvm::call_arg_count(i)).any(|k| writers.contains(&llvm::operand(i, k)))))
                }
                _ => false,
            });
            if writes {
                writers.insert(f);
            }
        }
        if writers.len() == before {
            return writers;
        }
    }
}

/// Whether `term` is an `unreachable` the program reaches without a call before it that does
/// not return (`exit`, `abort`, `__assert_fail`, `longjmp`, a target marker):
/// `__builtin_unreachable()`, or one after a call of a function that may return. At -O0 it is
/// no instruction at all and the run falls through into whatever code follows, so a path
/// into it is a clobber site, not a dead end.
fn is_bare_unreachable(term: llvm::Value) -> bool {
    if llvm::opcode(term) != LLVMOpcode::LLVMUnreachable {
        return false;
    }
    let before = unsafe { LLVMGetPreviousInstruction(term) };
    before.is_null() || !llvm::call_does_not_return(before)
}

/// The tests that index `index` is outside `[lo, hi]`, built by `builder`.
unsafe fn index_tests(builder: LLVMBuilderRef, index: llvm::Value, lo: i64, hi: i64) -> Vec<LLVMValueRef> {
    let i64t = LLVMInt64TypeInContext(LLVMGetTypeContext(llvm::type_of(index)));
    let k64 = |c: i64| LLVMConstInt(i64t, c as u64, 1);
    match narrow_tests(index, lo, hi) {
        // The index as the program computed it (`i`, not `sext(i)`): tests like the
        // loop's own (`i > 30`), which the loop summaries bound without a quantifier.
        Some((narrow, signed, below, above)) => {
            let t = llvm::type_of(narrow);
            let (lt, gt) = if signed { (LLVMIntPredicate::LLVMIntSLT, LLVMIntPredicate::LLVMIntSGT) } else { (LLVMIntPredicate::LLVMIntULT, LLVMIntPredicate::LLVMIntUGT) };
            [(lt, below), (gt, above)]
                .into_iter()
                .filter_map(|(p, b)| b.map(|b| LLVMBuildICmp(builder, p, narrow, LLVMConstInt(t, b as u64, i32::from(signed)), c"apc.oob".as_ptr())))
                .collect()
        }
        None => {
            let wide = to_i64(builder, index, true);
            let from_lo = LLVMBuildSub(builder, wide, k64(lo), c"apc.off".as_ptr());
            let span = LLVMConstInt(i64t, hi.wrapping_sub(lo) as u64, 0);
            vec![LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntUGT, from_lo, span, c"apc.oob".as_ptr())]
        }
    }
}

/// The tests of write `s`, built right before it, each true when the write leaves its object.
/// Each gets a branch of its own ([`guard`]), not an `or`: each test alone is monotone in a
/// loop's counter, and the summaries drop the quantifier of such a test only.
unsafe fn tests_of(m: LLVMModuleRef, s: llvm::Value, check: Check) -> Vec<LLVMValueRef> {
    let ctx = LLVMGetModuleContext(m);
    let builder = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderBefore(builder, s);
    let i1 = LLVMInt1TypeInContext(ctx);
    let i64t = LLVMInt64TypeInContext(ctx);
    let k64 = |c: i64| LLVMConstInt(i64t, c as u64, 1);
    let tests = match check {
        Check::Always => vec![LLVMConstInt(i1, 1, 0)],
        Check::Outside { index, lo, hi } => index_tests(builder, index, lo, hi),
        Check::Within(ranges) => ranges.into_iter().flat_map(|(index, lo, hi)| index_tests(builder, index, lo, hi)).collect(),
        Check::Offset { offset, hi } => vec![
            LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntSLT, offset, k64(0), c"apc.oob".as_ptr()),
            LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntSGT, offset, k64(hi), c"apc.oob".as_ptr()),
        ],
        // `len > size`, or `offset < 0`, or `offset > size - len` (no overflow once
        // `len <= size`). A zero length writes nothing but is judged as any other.
        Check::Span { offset, len, size } => {
            // Lengths as C's `int n` (sign-extended); sizes unsigned (`size_t`, an `alloca`'s count).
            let wide = |v: LLVMValueRef| to_i64(builder, v, true);
            let unsigned = |v: LLVMValueRef| to_i64(builder, v, false);
            let mut tests = vec![];
            let size = match size {
                Bytes::Constant(n) => k64(n),
                Bytes::Count(count, element) => {
                    let count = unsigned(count);
                    LLVMBuildMul(builder, count, k64(element as i64), c"apc.size".as_ptr())
                }
                Bytes::Product(a, b) => {
                    // Each factor alone too: their product may wrap.
                    let (a, b) = (unsigned(a), unsigned(b));
                    let size = LLVMBuildMul(builder, a, b, c"apc.size".as_ptr());
                    for f in [a, b] {
                        tests.push(LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntUGT, f, size, c"apc.oob".as_ptr()));
                    }
                    size
                }
            };
            let len = match len {
                Count::Constant(n) => k64(n as i64),
                Count::One(n) => wide(n),
                Count::Two(a, b) => {
                    let (a, b) = (wide(a), wide(b));
                    // Each factor alone too: their product may wrap.
                    for f in [a, b] {
                        tests.push(LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntUGT, f, size, c"apc.oob".as_ptr()));
                    }
                    LLVMBuildMul(builder, a, b, c"apc.len".as_ptr())
                }
                Count::Scaled(n, k) => {
                    let n = wide(n);
                    tests.push(LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntUGT, n, size, c"apc.oob".as_ptr()));
                    LLVMBuildMul(builder, n, k64(k as i64), c"apc.len".as_ptr())
                }
            };
            tests.push(LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntUGT, len, size, c"apc.oob".as_ptr()));
            tests.push(LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntSLT, offset, k64(0), c"apc.oob".as_ptr()));
            let room = LLVMBuildSub(builder, size, len, c"apc.room".as_ptr());
            tests.push(LLVMBuildICmp(builder, LLVMIntPredicate::LLVMIntSGT, offset, room, c"apc.oob".as_ptr()));
            tests
        }
    };
    LLVMDisposeBuilder(builder);
    tests
}

/// Splits the block of store `s` right after it: what follows `s` moves to a new block, and
/// the block now ends in a branch on the check to a block with the marker (a dead end) or to
/// that rest. The store stays with the instructions that compute its value and address (a
/// loop that fills an array keeps the shape its summary recognises). After the store is as
/// good as before it: the engines model an out-of-bounds store as a write to the object's own
/// array (the DSE gives up on it, or assumes it inside and no longer claims exactness), and
/// the branch to the marker is what rules a proof out.
unsafe fn guard(m: LLVMModuleRef, s: llvm::Value, tests: &[LLVMValueRef], id: u32) {
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
    let i1 = LLVMInt1TypeInContext(ctx);
    let (last, earlier) = match tests.split_last() {
        Some((last, earlier)) => (*last, earlier),
        None => (LLVMConstInt(i1, 0, 0), &[][..]),
    };
    for &test in earlier {
        let next = LLVMInsertBasicBlockInContext(ctx, rest, c"apc.bounds".as_ptr());
        let br = LLVMBuildCondBr(builder, test, clobber, next);
        if !loc.is_null() {
            LLVMInstructionSetDebugLoc(br, loc);
        }
        LLVMPositionBuilderAtEnd(builder, next);
    }
    let br = LLVMBuildCondBr(builder, last, clobber, rest);
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
