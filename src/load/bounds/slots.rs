//! Pointers kept in a function's own locals (`int **q = &p; *q = a + 9; *p = 1`, a pointer
//! field of a local struct, a local array of pointers) or in a global only it uses (`gp = buf;
//! gp[i] = c`): a pointer loaded from such a local
//! points where the pointers stored into it point, when nothing else writes the bytes it is
//! loaded from. A pointer whose bytes were written another way (its integer view in a union,
//! `memcpy`, a `memset`) may point anywhere: it is forged. A local whose address leaves the
//! function's view (handed to a call, stored in memory, turned into an integer) is not
//! followed.

use super::super::llvm;
use super::places::{gep_byte_offset, Origin};
use llvm_sys::core::*;
use llvm_sys::LLVMOpcode;
use std::collections::HashMap;

/// Where in a local an access falls.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Span {
    /// At this constant byte offset.
    At(i64),
    /// At an offset not known here, a multiple of 8 (an index into an array of pointers).
    Aligned,
    /// Anywhere.
    Anywhere,
}

impl Span {
    fn aligned(self) -> bool {
        match self {
            Span::At(c) => c.rem_euclid(8) == 0,
            Span::Aligned => true,
            Span::Anywhere => false,
        }
    }

    /// Whether `len` bytes at `self` and `other_len` bytes at `other` may share a byte.
    fn overlaps(self, len: u64, other: Span, other_len: u64) -> bool {
        match (self, other) {
            (Span::At(a), Span::At(b)) => {
                (a as i128) < b as i128 + other_len as i128 && (b as i128) < a as i128 + len as i128
            }
            _ => true,
        }
    }
}

/// One write into a local: where, how many bytes, and the pointer it stores (`None`: bytes
/// that are not a pointer, or a pointer of another size).
struct Write {
    at: Span,
    len: u64,
    pointer: Option<llvm::Value>,
}

/// Every write of the function into each local (an `alloca` of the function, a heap block it
/// allocates, or a global), and whether the local's address stays in view.
pub(super) struct Slots {
    locals: HashMap<llvm::Value, Local>,
}

struct Local {
    writes: Vec<Write>,
    /// Whether the function's writes are all the writes into it: an `alloca` or a fresh heap
    /// block whose address stays in view, or a global only it uses. Not so, other code may
    /// store any pointer into it, or leave one the function stored.
    in_view: bool,
}

impl Slots {
    /// The writes into `f`'s locals, from the origins of its pointers as known without
    /// following loads (`origin`): a local's address reaches a loaded pointer only through
    /// memory, that is after being stored, which counts as leaving the view.
    pub(super) fn new(td: llvm_sys::target::LLVMTargetDataRef, f: llvm::Value, origin: &dyn Fn(llvm::Value) -> Origin) -> Slots {
        let mut locals: HashMap<llvm::Value, Local> = HashMap::new();
        for i in llvm::blocks(f).into_iter().flat_map(llvm::instructions) {
            for k in 0..llvm::num_operands(i) {
                let x = llvm::operand(i, k);
                let Origin::Object(local) = origin(x) else { continue };
                let entry = locals.entry(local).or_insert_with(|| {
                    if unsafe { !LLVMIsAAllocaInst(local).is_null() } || is_fresh_block(local) {
                        Local { writes: vec![], in_view: true }
                    } else {
                        let initial = llvm::is_a_global_variable(local).then(|| global_in_view(td, local, f)).flatten();
                        Local { in_view: initial.is_some(), writes: initial.unwrap_or_default() }
                    }
                });
                match use_of(td, i, k, local, origin) {
                    Use::Read => {}
                    Use::Write(w) => entry.writes.push(w),
                    Use::Escape => entry.in_view = false,
                }
            }
        }
        Slots { locals }
    }

    /// How many writes are attributed to locals.
    pub(super) fn writes(&self) -> usize {
        self.locals.values().map(|l| l.writes.len()).sum()
    }

    /// Whether the function's writes into `local` are all the writes into it (see [`Local`]).
    pub(super) fn in_view(&self, local: llvm::Value) -> bool {
        self.locals.get(&local).is_some_and(|l| l.in_view)
    }

    /// Where pointer `load`, loaded from `local`, points: the join of the pointers stored at
    /// its bytes (`origin` gives theirs), forged when other bytes were written there, unknown
    /// when nothing was stored there. From a local out of view: forged when the function
    /// stored a pointer into one of its objects there (the load may get it back, or whatever
    /// other code stored: no offset can be computed), else unknown.
    pub(super) fn loaded(
        &self,
        td: llvm_sys::target::LLVMTargetDataRef,
        load: llvm::Value,
        local: llvm::Value,
        origin: &dyn Fn(llvm::Value) -> Origin,
    ) -> Origin {
        let Some(Local { writes, in_view }) = self.locals.get(&local) else {
            return Origin::Unknown;
        };
        let len = llvm::alloc_size(td, llvm::type_of(load));
        let at = span_in(td, llvm::operand(load, 0), local);
        if !in_view {
            let ours = writes
                .iter()
                .filter(|w| w.at.overlaps(w.len, at, len))
                .any(|w| w.pointer.is_some_and(|p| matches!(origin(p), Origin::Object(_) | Origin::Several | Origin::Forged)));
            return if ours { Origin::Forged } else { Origin::Unknown };
        }
        let mut result = Origin::Unseen;
        for w in writes.iter().filter(|w| w.at.overlaps(w.len, at, len)) {
            result = match w.pointer {
                // A null pointer: a write through it is no write into a neighbour.
                Some(p) if llvm::is_a_null_pointer(p) => result,
                // The same pointer-sized slot: pointers stored at aligned offsets (an array of
                // pointers) are either this slot or another one.
                Some(p)
                    if w.len == len
                        && w.at.aligned()
                        && at.aligned()
                        && (w.at == at || !matches!((w.at, at), (Span::At(_), Span::At(_)))) =>
                {
                    result.join(origin(p))
                }
                _ => Origin::Forged,
            };
        }
        // Nothing stored there: an uninitialised pointer, which the engines do not follow
        // either. (Stored pointers the fixpoint has not reached yet leave it `Unseen`.)
        if writes.iter().any(|w| w.at.overlaps(w.len, at, len)) {
            result
        } else {
            Origin::Unknown
        }
    }
}

/// What instruction `i` does with its operand `k`, a pointer into `local`.
enum Use {
    Read,
    Write(Write),
    Escape,
}

fn use_of(
    td: llvm_sys::target::LLVMTargetDataRef,
    i: llvm::Value,
    k: u32,
    local: llvm::Value,
    origin: &dyn Fn(llvm::Value) -> Origin,
) -> Use {
    let x = llvm::operand(i, k);
    match llvm::opcode(i) {
        LLVMOpcode::LLVMLoad | LLVMOpcode::LLVMICmp => Use::Read,
        // The opaque value an uninitialised local starts with (`llvm::mark_uninitialised_locals`):
        // the engines do not follow a pointer read from it.
        LLVMOpcode::LLVMStore if k == 1 && llvm::is_uninit_call(llvm::operand(i, 0)) => Use::Read,
        LLVMOpcode::LLVMStore if k == 1 => {
            let value = llvm::operand(i, 0);
            let ty = llvm::type_of(value);
            let pointer = (llvm::type_kind(ty) == llvm_sys::LLVMTypeKind::LLVMPointerTypeKind)
                .then_some(value);
            Use::Write(Write {
                at: span_in(td, x, local),
                len: llvm::alloc_size(td, ty),
                pointer,
            })
        }
        // Derived pointers that stay into the local are followed at their own uses.
        LLVMOpcode::LLVMGetElementPtr | LLVMOpcode::LLVMPHI | LLVMOpcode::LLVMSelect
            if origin(i) == Origin::Object(local) =>
        {
            Use::Read
        }
        LLVMOpcode::LLVMCall => match llvm::called_function_name(i).as_deref() {
            Some(n) if n.starts_with("llvm.lifetime.") => Use::Read,
            Some(n)
                if (n.starts_with("llvm.memcpy.") || n.starts_with("llvm.memmove.")) && k == 1 =>
            {
                Use::Read
            }
            // Bytes copied or set into it: not pointers the pass follows.
            Some(n)
                if ["llvm.memset.", "llvm.memcpy.", "llvm.memmove."]
                    .iter()
                    .any(|p| n.starts_with(p))
                    && k == 0 =>
            {
                Use::Write(Write {
                    at: Span::Anywhere,
                    len: u64::MAX,
                    pointer: None,
                })
            }
            _ => Use::Escape,
        },
        _ => Use::Escape,
    }
}

/// Where pointer `p` (into `local`) falls in it.
fn span_in(td: llvm_sys::target::LLVMTargetDataRef, p: llvm::Value, local: llvm::Value) -> Span {
    if p == local {
        return Span::At(0);
    }
    if unsafe { LLVMIsAGetElementPtrInst(p).is_null() } {
        return Span::Anywhere;
    }
    let Some((c, terms)) = gep_byte_offset(td, p) else {
        return Span::Anywhere;
    };
    let base = span_in(td, llvm::operand(p, 0), local);
    match base {
        Span::At(b) if terms.is_empty() => Span::At(b.wrapping_add(c)),
        _ if base.aligned()
            && c.rem_euclid(8) == 0
            && terms.iter().all(|&(_, scale)| scale.rem_euclid(8) == 0) =>
        {
            Span::Aligned
        }
        _ => Span::Anywhere,
    }
}

/// Whether `o` is a heap block that starts without pointers: `malloc`'s, `calloc`'s (not
/// `realloc`'s, which holds the old block's bytes).
fn is_fresh_block(o: llvm::Value) -> bool {
    matches!(llvm::called_function_name(o).as_deref(), Some("malloc" | "calloc" | "aligned_alloc"))
}

/// The initial writes of global `g` when only `f` can write it: defined in the module, every
/// use of it in `f` or in a function nothing calls (a helper inlined into `f`), and an
/// initialiser understood. `None` otherwise (other code may store any pointer into it).
fn global_in_view(td: llvm_sys::target::LLVMTargetDataRef, g: llvm::Value, f: llvm::Value) -> Option<Vec<Write>> {
    fn uses_in_view(v: llvm::Value, f: llvm::Value) -> bool {
        let mut u = unsafe { LLVMGetFirstUse(v) };
        while !u.is_null() {
            let user = unsafe { LLVMGetUser(u) };
            let fine = if unsafe { !LLVMIsAInstruction(user).is_null() } {
                let owner = unsafe { LLVMGetBasicBlockParent(LLVMGetInstructionParent(user)) };
                owner == f || unsafe { LLVMGetFirstUse(owner).is_null() }
            } else {
                // A constant expression (a `getelementptr` into it) is in view where it is used;
                // another global's initialiser holding its address is not.
                let expression = unsafe { !LLVMIsAConstantExpr(user).is_null() };
                expression && uses_in_view(user, f)
            };
            if !fine {
                return false;
            }
            u = unsafe { LLVMGetNextUse(u) };
        }
        true
    }
    let init = llvm::initializer(g)?;
    if !uses_in_view(g, f) {
        return None;
    }
    let mut writes = vec![];
    initial_writes(td, init, 0, &mut writes)?;
    Some(writes)
}

/// The writes a global's initialiser `c` makes at `offset`: each pointer in it, and its other
/// bytes that are not zero. `None` when it is not understood.
fn initial_writes(td: llvm_sys::target::LLVMTargetDataRef, c: llvm::Value, offset: i64, out: &mut Vec<Write>) -> Option<()> {
    use llvm_sys::LLVMTypeKind::*;
    if llvm::is_a_null_pointer(c) || llvm::is_a_aggregate_zero(c) || llvm::is_a_undef(c) {
        return Some(());
    }
    let ty = llvm::type_of(c);
    match llvm::type_kind(ty) {
        LLVMPointerTypeKind => out.push(Write { at: Span::At(offset), len: 8, pointer: Some(c) }),
        LLVMStructTypeKind => {
            for k in 0..llvm::struct_element_types(ty).len() as u32 {
                let at = offset.checked_add(i64::try_from(llvm::struct_offset(td, ty, k)).ok()?)?;
                initial_writes(td, llvm::aggregate_element(c, k)?, at, out)?;
            }
        }
        LLVMArrayTypeKind if contains_pointer(ty) => {
            let size = i64::try_from(llvm::alloc_size(td, llvm::element_type(ty))).ok()?;
            for k in 0..u32::try_from(llvm::array_length(ty)).ok()? {
                initial_writes(td, llvm::aggregate_element(c, k)?, offset.checked_add(size.checked_mul(k as i64)?)?, out)?;
            }
        }
        _ if llvm::is_a_constant_int(c) && llvm::const_int_zext(c) == 0 => {}
        // Bytes that are no pointer the pass follows.
        _ => out.push(Write { at: Span::At(offset), len: llvm::alloc_size(td, ty), pointer: None }),
    }
    Some(())
}

/// Whether a value of type `t` holds a pointer somewhere.
fn contains_pointer(t: llvm::Type) -> bool {
    use llvm_sys::LLVMTypeKind::*;
    match llvm::type_kind(t) {
        LLVMPointerTypeKind => true,
        LLVMStructTypeKind => llvm::struct_element_types(t).into_iter().any(contains_pointer),
        LLVMArrayTypeKind => contains_pointer(llvm::element_type(t)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::Span;

    #[test]
    fn spans_overlap_by_their_bytes() {
        assert!(Span::At(0).overlaps(8, Span::At(4), 4));
        assert!(!Span::At(0).overlaps(8, Span::At(8), 8));
        assert!(!Span::At(8).overlaps(4, Span::At(0), 8));
        assert!(Span::Aligned.overlaps(8, Span::At(100), 1));
        assert!(Span::At(16).aligned() && !Span::At(12).aligned() && !Span::Anywhere.aligned());
    }
}
