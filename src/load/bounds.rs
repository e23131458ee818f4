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
//!   handed to inline assembly, and any access to a heap block after a `free` of it.
//!
//! Not covered: writes through pointers the pass cannot follow to one object (parameters,
//! pointers loaded from memory, including a pointer moved through its integer view in memory,
//! or returned by calls, a phi of two objects), library functions not in the table, and
//! `longjmp` back into a frame whose locals changed since `setjmp`.

use super::llvm;
use llvm_sys::core::*;
use llvm_sys::debuginfo::{LLVMInstructionGetDebugLoc, LLVMInstructionSetDebugLoc};
use llvm_sys::prelude::*;
use llvm_sys::{LLVMIntPredicate, LLVMOpcode, LLVMTypeKind};

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

/// The size in bytes of the object `base` is (an `alloca` of a constant count, or a global),
/// if it is one.
fn object_size(td: llvm_sys::target::LLVMTargetDataRef, base: llvm::Value) -> Option<u64> {
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
fn dynamic_size(td: llvm_sys::target::LLVMTargetDataRef, base: llvm::Value) -> Option<Bytes> {
    let int = |v: llvm::Value| llvm::type_kind(llvm::type_of(v)) == LLVMTypeKind::LLVMIntegerTypeKind && (1..=64).contains(&llvm::int_width(llvm::type_of(v)));
    if unsafe { !LLVMIsACallInst(base).is_null() } {
        // A heap block of a size the program computes (`malloc(n)`, `calloc(n, 4)`).
        let (a, b) = allocation_size_args(base)?;
        let (a, b) = (llvm::operand(base, a), b.map(|b| llvm::operand(base, b)));
        if !int(a) || !b.is_none_or(int) {
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
    (!llvm::is_a_constant_int(count) && llvm::is_sized(t) && int(count)).then(|| Bytes::Count(count, llvm::alloc_size(td, t)))
}

/// The arguments of an allocator's call that give the block's size: one (`malloc(n)`,
/// `realloc(p, n)`) or two multiplied (`calloc(n, size)`).
fn allocation_size_args(call: llvm::Value) -> Option<(u32, Option<u32>)> {
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
enum Bytes {
    Constant(i64),
    Count(llvm::Value, u64),
    Product(llvm::Value, llvm::Value),
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
    let (object, offset) = places.offset(ptr)?;
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

/// How a function of the C library writes through a pointer argument (arguments by position).
#[derive(Clone, Copy)]
enum LibraryWrite {
    /// At most `len` bytes at `dest`, `len` being argument `n` (times argument `times`).
    Bounded { dest: u32, n: u32, times: Option<u32> },
    /// A fixed number of bytes at `dest` (`strtol`'s end pointer).
    Fixed { dest: u32, bytes: u64 },
    /// At most argument `n` wide characters (4 bytes each) at `dest`.
    Wide { dest: u32, n: u32 },
    /// A copy of the string at `src`, its NUL included (`strcpy`): bounded when that string is
    /// a constant.
    String { dest: u32, src: u32 },
    /// As much as its other inputs say (`strcat`, `gets`).
    Unbounded { dest: u32 },
    /// A `sprintf`: as much as its format (argument `format`) prints at most, when that is a
    /// constant of bounded conversions.
    Print { dest: u32, format: u32 },
    /// A `scanf`: each conversion of the format (argument `format`) writes through one of
    /// the arguments after it.
    Scan { format: u32 },
}

/// The functions of the C library that write through a pointer argument, and how. Not listed:
/// everything else, whose writes are not checked (a stubbed external writes nothing natively).
fn library_write(name: &str) -> Option<LibraryWrite> {
    use LibraryWrite::*;
    // glibc's headers name the C99 `scanf`s `__isoc99_sscanf` (`__isoc23_` for C23).
    let name = name.strip_prefix("__isoc99_").or_else(|| name.strip_prefix("__isoc23_")).unwrap_or(name);
    // The fortified variants (`__memcpy_chk`): their object-size argument comes last, or
    // before the format.
    match name {
        "__sprintf_chk" | "__vsprintf_chk" => return Some(Print { dest: 0, format: 3 }),
        "__snprintf_chk" | "__vsnprintf_chk" => return Some(Bounded { dest: 0, n: 1, times: None }),
        "__fgets_chk" => return Some(Bounded { dest: 0, n: 2, times: None }),
        "__read_chk" => return Some(Bounded { dest: 1, n: 2, times: None }),
        _ => {}
    }
    let name = name.strip_prefix("__").and_then(|n| n.strip_suffix("_chk")).unwrap_or(name);
    Some(match name {
        "memccpy" => Bounded { dest: 0, n: 3, times: None },
        "swab" => Bounded { dest: 1, n: 2, times: None },
        "strxfrm" => Bounded { dest: 0, n: 2, times: None },
        "strerror_r" | "ttyname_r" => Bounded { dest: 1, n: 2, times: None },
        "getlogin_r" => Bounded { dest: 0, n: 1, times: None },
        "qsort" => Bounded { dest: 0, n: 1, times: Some(2) },
        // `wchar_t` is 4 bytes here.
        "mbstowcs" | "wcsncpy" | "wmemcpy" | "wmemmove" | "wmemset" => Wide { dest: 0, n: 2 },
        "wcscpy" | "wcscat" | "wcsncat" => Unbounded { dest: 0 },
        "time" => Fixed { dest: 0, bytes: 8 },
        "pipe" => Fixed { dest: 0, bytes: 8 },
        "gettimeofday" => Fixed { dest: 0, bytes: 16 },
        "localtime_r" | "gmtime_r" => Fixed { dest: 1, bytes: 56 },
        "stat" | "fstat" | "lstat" => Fixed { dest: 1, bytes: 144 },
        "frexp" | "frexpf" | "remquo" => Fixed { dest: if name == "remquo" { 2 } else { 1 }, bytes: 4 },
        "modf" => Fixed { dest: 1, bytes: 8 },
        "memset" | "memcpy" | "memmove" | "mempcpy" | "strncpy" | "stpncpy" => Bounded { dest: 0, n: 2, times: None },
        "bzero" | "explicit_bzero" | "snprintf" | "vsnprintf" | "fgets" | "getcwd" | "gethostname" => Bounded { dest: 0, n: 1, times: None },
        "read" | "pread" | "recv" | "readlink" => Bounded { dest: 1, n: 2, times: None },
        "fread" => Bounded { dest: 0, n: 1, times: Some(2) },
        "strtol" | "strtoul" | "strtoll" | "strtoull" | "strtod" | "strtof" | "strtold" | "strtoimax" | "strtoumax" => Fixed { dest: 1, bytes: 8 },
        "strcpy" | "stpcpy" => String { dest: 0, src: 1 },
        "sprintf" | "vsprintf" => Print { dest: 0, format: 1 },
        "strcat" | "strncat" | "gets" => Unbounded { dest: 0 },
        "realpath" => Unbounded { dest: 1 },
        "scanf" | "vscanf" => Scan { format: 0 },
        "sscanf" | "fscanf" | "vsscanf" | "vfscanf" => Scan { format: 1 },
        _ => return None,
    })
}

/// The checks a call `c` that writes memory needs, one per object it may write past:
/// `llvm.memset`, `llvm.memcpy` and `llvm.memmove` of a length past their destination, and
/// the C library's writers ([`library_write`]) into a known object.
fn call_checks_of(td: llvm_sys::target::LLVMTargetDataRef, places: &mut Places, c: llvm::Value) -> Vec<Check> {
    let callee = unsafe { LLVMGetCalledValue(c) };
    if !callee.is_null() && llvm::is_a_inline_asm(callee) {
        // Inline assembly may write anywhere from a pointer it is given.
        let args = llvm::call_arg_count(c);
        let reaches = (0..args).map(|k| places.get(llvm::operand(c, k))).any(|o| matches!(o, Origin::Object(_) | Origin::Forged));
        return if reaches { vec![Check::Always] } else { vec![] };
    }
    if callee.is_null() || !llvm::is_a_function(callee) {
        return vec![];
    }
    let name = llvm::value_name(callee);
    let write = if ["llvm.memset.", "llvm.memcpy.", "llvm.memmove."].iter().any(|p| name.starts_with(p)) {
        LibraryWrite::Bounded { dest: 0, n: 2, times: None }
    } else if llvm::is_declaration(callee) {
        match library_write(&name) {
            Some(w) => w,
            None => return vec![],
        }
    } else {
        return vec![];
    };
    let args = llvm::call_arg_count(c);
    let arg = |k: u32| (k < args).then(|| llvm::operand(c, k));
    let mut checks = vec![];
    match write {
        LibraryWrite::Bounded { dest, n, times } => {
            let (Some(dest), Some(n)) = (arg(dest), arg(n)) else { return vec![] };
            let len = match times.map(arg) {
                None => Length::Value(n),
                Some(Some(m)) => Length::Product(n, m),
                Some(None) => return vec![],
            };
            checks.extend(span_check(td, places, dest, len));
        }
        LibraryWrite::Wide { dest, n } => {
            let (Some(dest), Some(n)) = (arg(dest), arg(n)) else { return vec![] };
            checks.extend(span_check(td, places, dest, Length::Scaled(n, 4)));
        }
        LibraryWrite::Fixed { dest, bytes } => {
            let Some(dest) = arg(dest) else { return vec![] };
            if !llvm::is_a_null_pointer(dest) {
                checks.extend(span_check(td, places, dest, Length::Constant(bytes)));
            }
        }
        LibraryWrite::String { dest, src } => {
            let (Some(dest), Some(src)) = (arg(dest), arg(src)) else { return vec![] };
            let len = match constant_string(td, src) {
                Some(text) => Length::Constant(text.len() as u64 + 1),
                None => Length::Unbounded,
            };
            checks.extend(span_check(td, places, dest, len));
        }
        LibraryWrite::Print { dest, format } => {
            let (Some(dest), Some(fmt)) = (arg(dest), arg(format)) else { return vec![] };
            let len = match constant_string(td, fmt).and_then(|f| print_max_len(&f)) {
                Some(n) => Length::Constant(n + 1),
                None => Length::Unbounded,
            };
            checks.extend(span_check(td, places, dest, len));
        }
        LibraryWrite::Unbounded { dest } => {
            let Some(dest) = arg(dest) else { return vec![] };
            checks.extend(span_check(td, places, dest, Length::Unbounded));
        }
        LibraryWrite::Scan { format } => {
            let Some(fmt) = arg(format) else { return vec![] };
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
    let (object, offset) = places.offset(dest)?;
    let int = |v: &llvm::Value| llvm::type_kind(llvm::type_of(*v)) == LLVMTypeKind::LLVMIntegerTypeKind && llvm::int_width(llvm::type_of(*v)) <= 64;
    let len = match len {
        Length::Unbounded => return Some(Check::Always),
        Length::Constant(0) => return None,
        Length::Constant(n) => Count::Constant(n),
        // A constant length is an unsigned count (`size_t`; a negative `int` one too).
        Length::Value(n) if llvm::is_a_constant_int(n) && int(&n) => match constant_of(n)? as u64 {
            0 => return None,
            n => Count::Constant(n),
        },
        Length::Value(n) if int(&n) => Count::One(n),
        Length::Product(a, b) if int(&a) && int(&b) => Count::Two(a, b),
        Length::Scaled(n, k) if int(&n) => Count::Scaled(n, k),
        _ => return None,
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

/// The NUL-terminated string a pointer constant points to: a constant global's initializer,
/// from its start or a constant offset into it (without the NUL).
fn constant_string(td: llvm_sys::target::LLVMTargetDataRef, p: llvm::Value) -> Option<Vec<u8>> {
    let (global, skip) = if llvm::is_a_global_variable(p) {
        (p, 0)
    } else if is_gep(p) && llvm::is_a_constant_expr(p) {
        let (c, terms) = gep_byte_offset(td, p)?;
        (llvm::operand(p, 0), usize::try_from(c).ok().filter(|_| terms.is_empty())?)
    } else {
        return None;
    };
    if !llvm::is_a_global_variable(global) || !llvm::is_global_constant(global) {
        return None;
    }
    let init = llvm::initializer(global)?;
    // SAFETY: reading the bytes of a constant data array (checked first) that outlives the call.
    let bytes = unsafe {
        if LLVMIsAConstantDataSequential(init).is_null() || LLVMIsConstantString(init) == 0 {
            return None;
        }
        let mut len = 0usize;
        let ptr = LLVMGetAsString(init, &mut len);
        std::slice::from_raw_parts(ptr as *const u8, len).to_vec()
    };
    let bytes = bytes.get(skip..)?;
    let end = bytes.iter().position(|&b| b == 0)?;
    Some(bytes[..end].to_vec())
}

/// A conversion's length modifier (`l`, `hh`, ...) and its conversion character, read from
/// `format` at `k` (past its flags, width and precision), `k` moved past them.
fn conversion_spec(format: &[u8], k: &mut usize) -> Option<(String, u8)> {
    let modifier: String = format[*k..].iter().take_while(|b| b"hljztLq".contains(b)).map(|&b| b as char).collect();
    *k += modifier.len();
    let conversion = *format.get(*k)?;
    *k += 1;
    Some((modifier, conversion))
}

/// The most bytes a `printf` format prints (its NUL not counted), whatever its arguments:
/// `None` when a conversion is unbounded (`%s` without a precision, floating point, a `*`
/// width) or the format is not understood. Generous: signs, prefixes and precisions are
/// counted at their widest.
fn print_max_len(format: &[u8]) -> Option<u64> {
    let mut total: u64 = 0;
    let mut k = 0;
    while k < format.len() {
        if format[k] != b'%' {
            total += 1;
            k += 1;
            continue;
        }
        k += 1;
        if format.get(k) == Some(&b'%') {
            total += 1;
            k += 1;
            continue;
        }
        k += format[k..].iter().take_while(|b| b"-+ #0'".contains(b)).count();
        let number = |k: &mut usize| -> Option<u64> {
            if format.get(*k) == Some(&b'*') {
                return None;
            }
            let digits = format[*k..].iter().take_while(|b| b.is_ascii_digit()).count();
            let n = if digits == 0 { 0 } else { std::str::from_utf8(&format[*k..*k + digits]).ok()?.parse().ok()? };
            *k += digits;
            Some(n)
        };
        let width = number(&mut k)?;
        let precision = if format.get(k) == Some(&b'.') {
            k += 1;
            Some(number(&mut k)?)
        } else {
            None
        };
        let (modifier, conversion) = conversion_spec(format, &mut k)?;
        // The longest value of each integer conversion at each size: "-2147483648" is 11.
        let integer = |long: u64, int: u64, short: u64, char: u64| -> Option<u64> {
            let digits = match modifier.as_str() {
                "hh" => char,
                "h" => short,
                "" => int,
                "l" | "ll" | "j" | "z" | "t" | "q" => long,
                _ => return None,
            };
            // A precision pads the digits; a sign, a space or a `0x` prefix comes on top.
            Some(digits.max(precision.unwrap_or(0) + 1) + 2)
        };
        let len = match conversion {
            b'd' | b'i' => integer(20, 11, 6, 4)?,
            b'u' => integer(20, 10, 5, 3)?,
            b'x' | b'X' => integer(16, 8, 4, 2)?,
            b'o' => integer(22, 11, 6, 3)?,
            b'c' => 1,
            b's' => precision?,
            b'p' => 18,
            b'n' => 0,
            _ => return None,
        };
        total = total.checked_add(len.max(width))?;
    }
    Some(total)
}

/// What each argument after a `scanf` format gets, in order: `Some(n)`, at most `n` bytes
/// (`%d` 4, `%lf` 8, `%5s` 6); `None`, a string of any length (`%s`, `%[` without a width).
/// `None` overall when the format is not understood.
fn scan_sizes(format: &[u8]) -> Option<Vec<Option<u64>>> {
    let mut out = vec![];
    let mut k = 0;
    while k < format.len() {
        if format[k] != b'%' {
            k += 1;
            continue;
        }
        k += 1;
        if format.get(k) == Some(&b'%') {
            k += 1;
            continue;
        }
        let suppressed = format.get(k) == Some(&b'*');
        if suppressed {
            k += 1;
        }
        let digits = format[k..].iter().take_while(|b| b.is_ascii_digit()).count();
        let width: Option<u64> = if digits > 0 { std::str::from_utf8(&format[k..k + digits]).ok()?.parse().ok() } else { None };
        k += digits;
        let (modifier, conversion) = conversion_spec(format, &mut k)?;
        if conversion == b'[' {
            // The set runs to the next `]` (a `]` right after `[` or `[^` belongs to it).
            if format.get(k) == Some(&b'^') {
                k += 1;
            }
            if format.get(k) == Some(&b']') {
                k += 1;
            }
            k += format[k..].iter().position(|&b| b == b']')? + 1;
        }
        if suppressed {
            continue;
        }
        let size = match conversion {
            b'd' | b'i' | b'u' | b'o' | b'x' | b'X' | b'n' => Some(match modifier.as_str() {
                "hh" => 1,
                "h" => 2,
                "" => 4,
                "l" | "ll" | "j" | "z" | "t" | "q" | "L" => 8,
                _ => return None,
            }),
            b'f' | b'e' | b'g' | b'E' | b'a' | b'G' | b'F' | b'A' => Some(match modifier.as_str() {
                "" => 4,
                "l" => 8,
                "L" => 16,
                _ => return None,
            }),
            b'p' => Some(8),
            b'c' => Some(width.unwrap_or(1)),
            b's' | b'[' => width.map(|w| w + 1),
            _ => return None,
        };
        out.push(size);
    }
    Some(out)
}

fn is_gep(v: llvm::Value) -> bool {
    let instruction = unsafe { !LLVMIsAGetElementPtrInst(v).is_null() };
    instruction || (llvm::is_a_constant_expr(v) && llvm::const_expr_opcode(v) == LLVMOpcode::LLVMGetElementPtr)
}

/// The value of an integer constant, sign-extended (`None`: not a constant of at most 64 bits).
fn constant_of(v: llvm::Value) -> Option<i64> {
    if !llvm::is_a_constant_int(v) {
        return None;
    }
    let w = llvm::int_width(llvm::type_of(v));
    (1..=64).contains(&w).then(|| ((llvm::const_int_zext(v) << (64 - w)) as i64) >> (64 - w))
}

/// What the pass knows of a pointer value: which object it points into.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Not known yet (the fixpoint has not reached it).
    Unseen,
    /// Into this object (an `alloca`, a global, a constant-size heap block), on every path.
    Object(llvm::Value),
    /// Into several objects, or into memory the pass does not follow (parameters, loaded
    /// pointers, pointers from calls).
    Unknown,
    /// Made from an integer (`inttoptr`) or by inline assembly, on some path: anywhere,
    /// a neighbour of any object included.
    Forged,
}

impl Origin {
    fn join(self, other: Origin) -> Origin {
        match (self, other) {
            (Origin::Unseen, o) | (o, Origin::Unseen) => o,
            (Origin::Forged, _) | (_, Origin::Forged) => Origin::Forged,
            (Origin::Object(a), Origin::Object(b)) if a == b => self,
            _ => Origin::Unknown,
        }
    }
}

/// The object every pointer of one function points into, and, on demand, its byte offset
/// into that object as an `i64` computed beside it: `0` at the object, `+ c + Σ index·scale`
/// at a `getelementptr`, a phi of offsets beside a phi of pointers (a pointer walked by a
/// loop becomes an integer walked by it, which the loop summaries count), a select beside a
/// select. Offsets wrap as the machine's addresses do.
struct Places {
    td: llvm_sys::target::LLVMTargetDataRef,
    origin: std::collections::HashMap<llvm::Value, Origin>,
    offsets: std::collections::HashMap<llvm::Value, llvm::Value>,
    i64t: LLVMTypeRef,
    builder: LLVMBuilderRef,
}

impl Places {
    fn new(td: llvm_sys::target::LLVMTargetDataRef, m: LLVMModuleRef, f: llvm::Value) -> Places {
        let ctx = unsafe { LLVMGetModuleContext(m) };
        let mut places = Places {
            td,
            origin: Default::default(),
            offsets: Default::default(),
            i64t: unsafe { LLVMInt64TypeInContext(ctx) },
            builder: unsafe { LLVMCreateBuilderInContext(ctx) },
        };
        let pointers: Vec<llvm::Value> = llvm::blocks(f)
            .into_iter()
            .flat_map(llvm::instructions)
            .filter(|&i| llvm::type_kind(llvm::type_of(i)) == LLVMTypeKind::LLVMPointerTypeKind)
            .collect();
        // A fixpoint from `Unseen` upwards: each round can only move a value up the
        // three-level lattice, so a few rounds settle it.
        loop {
            let mut changed = false;
            for &p in &pointers {
                let now = places.step(p);
                if places.origin.get(&p).copied().unwrap_or(Origin::Unseen) != now {
                    places.origin.insert(p, now);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        places
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
            _ => Origin::Unknown,
        }
    }

    fn get(&self, v: llvm::Value) -> Origin {
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
    fn offset(&mut self, p: llvm::Value) -> Option<(llvm::Value, llvm::Value)> {
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
            _ => {
                // A getelementptr: the base's offset plus what it adds.
                let base = self.materialise(llvm::operand(p, 0), object);
                let (c, terms) = gep_byte_offset(self.td, p).expect("a GEP the fixpoint followed");
                let o = unsafe {
                    self.position_after(p);
                    let mut o = base;
                    if c != 0 {
                        o = LLVMBuildAdd(self.builder, o, self.constant(c), c"apc.off".as_ptr());
                    }
                    for (index, scale) in terms {
                        let w = llvm::int_width(llvm::type_of(index));
                        let wide = match w.cmp(&64) {
                            std::cmp::Ordering::Less => LLVMBuildSExt(self.builder, index, self.i64t, c"apc.idx".as_ptr()),
                            std::cmp::Ordering::Greater => LLVMBuildTrunc(self.builder, index, self.i64t, c"apc.idx".as_ptr()),
                            std::cmp::Ordering::Equal => index,
                        };
                        let scaled = if scale == 1 { wide } else { LLVMBuildMul(self.builder, wide, self.constant(scale), c"apc.idx".as_ptr()) };
                        o = LLVMBuildAdd(self.builder, o, scaled, c"apc.off".as_ptr());
                    }
                    o
                };
                self.offsets.insert(p, o);
                o
            }
        }
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
fn gep_byte_offset(td: llvm_sys::target::LLVMTargetDataRef, gep: llvm::Value) -> Option<(i64, Vec<(llvm::Value, i64)>)> {
    let indices: Vec<llvm::Value> = (1..llvm::num_operands(gep)).map(|k| llvm::operand(gep, k)).collect();
    let (c, terms) = llvm::gep_byte_offset(td, llvm::gep_source_type(gep), &indices)?;
    terms.iter().all(|(i, _)| llvm::type_kind(llvm::type_of(*i)) == LLVMTypeKind::LLVMIntegerTypeKind).then_some((c, terms))
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
    use super::{in_bounds_indices, print_max_len, scan_sizes};

    #[test]
    fn printf_formats_print_at_most() {
        // "%d" at most "-2147483648" (11, counted generously as 13), "x=" two more.
        assert_eq!(print_max_len(b"x=%d"), Some(15));
        assert_eq!(print_max_len(b"%hhx|%8c|%.3s|%%"), Some(4 + 1 + 8 + 1 + 3 + 1 + 1));
        // Unbounded: a string without a precision, a `*` width, floating point.
        assert_eq!(print_max_len(b"%s"), None);
        assert_eq!(print_max_len(b"%*d"), None);
        assert_eq!(print_max_len(b"%f"), None);
    }

    #[test]
    fn scanf_formats_say_how_much_each_argument_gets() {
        assert_eq!(scan_sizes(b"%d %ld %hhu %lf %f %Lf %p"), Some(vec![Some(4), Some(8), Some(1), Some(8), Some(4), Some(16), Some(8)]));
        // Strings: their width plus the NUL, or unbounded; `%c` its width; suppressed and
        // literal percents take no argument.
        assert_eq!(scan_sizes(b"%7s %s %3c %c %*d %% %[a-z] %5[^]x]"), Some(vec![Some(8), None, Some(3), Some(1), None, Some(6)]));
        // Not understood: no sizes at all (every argument is then unbounded).
        assert_eq!(scan_sizes(b"%lk"), None);
        assert_eq!(scan_sizes(b"%"), None);
    }

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
        let mut places = Places::new(td, m, f);
        let after_free = AfterFree::new(f, &places);
        let writes: Vec<(llvm::Value, Vec<Check>)> = llvm::blocks(f)
            .into_iter()
            .flat_map(llvm::instructions)
            .map(|i| match llvm::opcode(i) {
                _ if after_free.may_follow(&places, i) => (i, vec![Check::Always]),
                LLVMOpcode::LLVMStore | LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMAtomicCmpXchg => (i, check_of(td, &mut places, i).into_iter().collect()),
                LLVMOpcode::LLVMCall => (i, call_checks_of(td, &mut places, i)),
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
    }
    marked
}

/// The heap blocks a function frees, and where that may have happened: an access to a block
/// after its `free` (or a `realloc` that may have moved it) reads or writes whatever block
/// `malloc` handed out at that address since. Such accesses are clobber sites too.
struct AfterFree {
    /// Each freed block, with the blocks of code reachable from the `free` (its own included
    /// when a loop leads back to it) and the `free` call itself.
    frees: Vec<(llvm::Value, llvm::Value, std::collections::HashSet<LLVMBasicBlockRef>)>,
}

impl AfterFree {
    fn new(f: llvm::Value, places: &Places) -> AfterFree {
        let mut frees = vec![];
        for i in llvm::blocks(f).into_iter().flat_map(llvm::instructions) {
            if llvm::opcode(i) != LLVMOpcode::LLVMCall || llvm::call_arg_count(i) == 0 {
                continue;
            }
            let callee = llvm::called_value(i);
            if !llvm::is_a_function(callee) || !matches!(llvm::value_name(callee).as_str(), "free" | "realloc") {
                continue;
            }
            let Origin::Object(block) = places.get(llvm::operand(i, 0)) else { continue };
            if unsafe { LLVMIsACallInst(block).is_null() } {
                continue;
            }
            let mut seen = std::collections::HashSet::new();
            let mut work: Vec<LLVMBasicBlockRef> = llvm::successors(unsafe { LLVMGetBasicBlockTerminator(LLVMGetInstructionParent(i)) });
            while let Some(b) = work.pop() {
                if seen.insert(b) {
                    work.extend(llvm::successors(unsafe { LLVMGetBasicBlockTerminator(b) }));
                }
            }
            frees.push((block, i, seen));
        }
        AfterFree { frees }
    }

    /// Whether `i` loads from or writes into a block that may have been freed before it.
    fn may_follow(&self, places: &Places, i: llvm::Value) -> bool {
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
                return (0..llvm::call_arg_count(i)).any(|k| self.freed_before(places.get(llvm::operand(i, k)), i));
            }
            _ => return false,
        };
        self.freed_before(places.get(ptr), i)
    }

    fn freed_before(&self, origin: Origin, i: llvm::Value) -> bool {
        let Origin::Object(object) = origin else { return false };
        let block = unsafe { LLVMGetInstructionParent(i) };
        self.frees.iter().filter(|(o, ..)| *o == object).any(|(_, free, reach)| {
            reach.contains(&block) || (unsafe { LLVMGetInstructionParent(*free) } == block && llvm::instructions(block).iter().position(|&x| x == *free) < llvm::instructions(block).iter().position(|&x| x == i))
        })
    }
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
            let w = llvm::int_width(llvm::type_of(index));
            let wide = match w.cmp(&64) {
                std::cmp::Ordering::Less => LLVMBuildSExt(builder, index, i64t, c"apc.idx".as_ptr()),
                std::cmp::Ordering::Greater => LLVMBuildTrunc(builder, index, i64t, c"apc.idx".as_ptr()),
                std::cmp::Ordering::Equal => index,
            };
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
            let wide = |v: LLVMValueRef| match llvm::int_width(llvm::type_of(v)).cmp(&64) {
                std::cmp::Ordering::Less => LLVMBuildSExt(builder, v, i64t, c"apc.len".as_ptr()),
                _ => v,
            };
            // Sizes are unsigned (`size_t`, an `alloca`'s count).
            let unsigned = |v: LLVMValueRef| match llvm::int_width(llvm::type_of(v)).cmp(&64) {
                std::cmp::Ordering::Less => LLVMBuildZExt(builder, v, i64t, c"apc.count".as_ptr()),
                _ => v,
            };
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
