//! Bounded unrolling of recursion, before inlining.
//!
//! A recursive function cannot be inlined, so the analysis used to see a call to it as an
//! unknown external (⋆): sound, but nothing that happens inside it, a target two levels down a
//! recursive-descent parser say, could ever be found. Here every function of a call cycle gets
//! `depth` copies, `f.apc.rec1` … `f.apc.recD`. A call that closes a cycle (a back edge of a
//! depth-first walk of the call graph, see `back_edges`) goes one copy deeper: from the
//! original to copy 1, from copy `d` to copy `d + 1`, and from the last copy to `f.apc.cut`, a
//! declaration without a body; other calls among them stay within their copy. The module is then acyclic and inlines like any other; a cut call is an unknown call
//! (⋆ result, reachable memory havocked), exactly as the whole recursive call was before.
//!
//! **Cut sites are targets too.** An execution that recurses deeper than `depth` is not analysed
//! past the cut. When the recursive function can reach the target (it or a function it calls
//! contains the target marker, or it calls through a pointer), or may write memory outside its
//! own scalar locals (a write past its local array lands in its caller's frame, see
//! `may_write_outside_scalars`), the target marker is put before each cut call: an
//! `unreachable` proof then also shows that no execution gets that deep, so it holds for every
//! depth. A model that only reaches a cut site is replayed natively like any
//! other, on the real program, which has neither copies nor cut markers: it counts as `reachable`
//! only when the real run entered the real target.
//!
//! The copies are made by cloning the module (`LLVMCloneModule`), keeping only the recursive
//! functions' bodies in the clone (every other function and every global becomes a declaration,
//! so the link binds them to the original's), and linking it back in. Internal symbols are made
//! external for the link (a declaration cannot bind to an internal symbol) and internal again
//! afterwards; the copies are internal too, so the inliner deletes them once inlined.

use super::llvm::{self, Value};
use super::target::TARGET_MARKER;
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMLinkage, LLVMOpcode};
use std::collections::{HashMap, HashSet};
use tracing::debug;

/// Default number of copies of each recursive function (`--recursion-depth`).
pub const DEFAULT_DEPTH: u32 = 3;

/// Most copies of all recursive functions together: tree recursion inlines `calls^depth` times.
const MAX_COPIES: usize = 64;

/// Most instructions the analysed function may have once the unrolled copies are inlined into
/// it (estimated before unrolling, see [`inlined_size`]): deeper unrolling than fits is cut to
/// the depth that fits. Mutual recursion called from several sites grows exponentially with
/// the depth, and normalising the result could spend the whole budget and memory.
const MAX_INLINED_INSTRUCTIONS: u64 = 100_000;

/// What [`unroll`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unrolling {
    /// The recursive functions, by name.
    pub functions: Vec<String>,
    /// Copies made of each.
    pub depth: u32,
    /// Copies asked for (`--recursion-depth`): more than `depth` when deeper copies would not
    /// have fit the size bound once inlined.
    pub asked: u32,
    /// Cut calls that got a target marker (the recursion might reach the target past them).
    pub marked_cuts: usize,
}

fn name_of(copy_of: &str, d: u32) -> String {
    format!("{copy_of}.apc.rec{d}")
}

fn cut_name(of: &str) -> String {
    format!("{of}.apc.cut")
}

/// The recursive function a cut call's callee stands for (`None`: not a cut).
pub fn cut_of(name: &str) -> Option<&str> {
    name.strip_suffix(".apc.cut")
}

fn is_local_linkage(v: Value) -> bool {
    matches!(unsafe { LLVMGetLinkage(v) }, LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage)
}

/// Direct calls of `f`: (call instruction, callee).
fn direct_calls(f: Value) -> Vec<(Value, Value)> {
    let mut out = vec![];
    for b in llvm::blocks(f) {
        for i in llvm::instructions(b) {
            if llvm::opcode(i) == LLVMOpcode::LLVMCall {
                let c = llvm::called_value(i);
                if llvm::is_a_function(c) {
                    out.push((i, c));
                }
            }
        }
    }
    out
}

/// Defined functions that may reach the target marker: they call it, call through a pointer,
/// or call a function that may.
fn may_reach_marker(m: LLVMModuleRef) -> HashSet<String> {
    let funcs: Vec<Value> = llvm::functions(m).into_iter().filter(|&f| !llvm::is_declaration(f)).collect();
    let mut reach: HashSet<String> = HashSet::new();
    for &f in &funcs {
        let direct_marker = direct_calls(f).iter().any(|(_, c)| llvm::value_name(*c) == TARGET_MARKER);
        let indirect = llvm::blocks(f).into_iter().flat_map(llvm::instructions).any(|i| {
            llvm::opcode(i) == LLVMOpcode::LLVMCall && {
                let c = llvm::called_value(i);
                !llvm::is_a_function(c) && !llvm::is_a_inline_asm(c)
            }
        });
        if direct_marker || indirect {
            reach.insert(llvm::value_name(f));
        }
    }
    loop {
        let before = reach.len();
        for &f in &funcs {
            let name = llvm::value_name(f);
            if !reach.contains(&name) && direct_calls(f).iter().any(|(_, c)| reach.contains(&llvm::value_name(*c))) {
                reach.insert(name);
            }
        }
        if reach.len() == before {
            return reach;
        }
    }
}

/// Defined functions that may write memory outside their own scalar locals: a store or atomic
/// into anything but a whole local variable (an array element, a struct field, memory a
/// pointer points to), a memory intrinsic, a C library writer, a call through a pointer or of
/// inline assembly, a library call given one of these (a callback), or a call of one of these.
///
/// Why: a cut call stands for recursion deeper than the copies, which the analysis does not
/// see. The bounds pass ([`super::bounds`]) tests the copies' writes, not the cut's: at depth
/// `depth + 1` a write past the callee's own local array lands in its caller's frame (natively,
/// a local of the analysed function). Such a cut is marked as a target like one that may reach
/// the target, so that a proof also shows no run gets that deep. Computed before mem2reg, on
/// the code as clang wrote it: a scalar local is one `alloca` written whole.
fn may_write_outside_scalars(m: LLVMModuleRef) -> HashSet<String> {
    let td = llvm::module_target_data(m);
    let whole_local = |store: Value| {
        let (value, ptr) = (llvm::operand(store, 0), llvm::operand(store, 1));
        let alloca = unsafe { !LLVMIsAAllocaInst(ptr).is_null() };
        alloca && llvm::is_a_constant_int(llvm::operand(ptr, 0)) && llvm::const_int_zext(llvm::operand(ptr, 0)) >= 1 && {
            let (t, held) = (llvm::type_of(value), llvm::allocated_type(ptr));
            llvm::is_sized(t) && llvm::is_sized(held) && llvm::alloc_size(td, t) <= llvm::alloc_size(td, held)
        }
    };
    super::bounds::functions_that_write(m, &|store| !whole_local(store)).into_iter().map(llvm::value_name).collect()
}

/// The calls among `recursive` functions that close a cycle: the back edges of a depth-first
/// walk of their call graph, from the ones the rest of the program calls (then by name).
/// Removing them leaves the graph acyclic, so only these calls go one copy deeper: a level of
/// recursion is one trip around a cycle (`value → list → value`), not one call.
fn back_edges(m: LLVMModuleRef, recursive: &HashSet<String>) -> HashSet<(String, String)> {
    let mut edges: HashMap<String, Vec<String>> = HashMap::new();
    let mut called_from_outside: HashSet<String> = HashSet::new();
    for f in llvm::functions(m).into_iter().filter(|&f| !llvm::is_declaration(f)) {
        let name = llvm::value_name(f);
        for (_, c) in direct_calls(f) {
            let callee = llvm::value_name(c);
            if !recursive.contains(&callee) {
                continue;
            }
            if recursive.contains(&name) {
                let out = edges.entry(name.clone()).or_default();
                if !out.contains(&callee) {
                    out.push(callee);
                }
            } else {
                called_from_outside.insert(callee);
            }
        }
    }
    let mut roots: Vec<&String> = recursive.iter().collect();
    roots.sort_by_key(|n| (!called_from_outside.contains(*n), (*n).clone()));
    let mut back = HashSet::new();
    // 0 unvisited, 1 on the stack, 2 done.
    let mut state: HashMap<&str, u8> = HashMap::new();
    for root in roots {
        if state.get(root.as_str()).copied().unwrap_or(0) != 0 {
            continue;
        }
        // Iterative DFS: (node, index of the next edge to follow).
        let mut stack: Vec<(&str, usize)> = vec![(root.as_str(), 0)];
        state.insert(root.as_str(), 1);
        while let Some((node, next)) = stack.last().copied() {
            let succ = edges.get(node).map(|v| v.as_slice()).unwrap_or(&[]);
            if next == succ.len() {
                state.insert(node, 2);
                stack.pop();
                continue;
            }
            stack.last_mut().expect("non-empty").1 += 1;
            let to = succ[next].as_str();
            match state.get(to).copied().unwrap_or(0) {
                0 => {
                    state.insert(to, 1);
                    stack.push((to, 0));
                }
                1 => {
                    back.insert((node.to_string(), to.to_string()));
                }
                _ => {}
            }
        }
    }
    back
}

/// The number of instructions `function` would have once the recursion is unrolled `depth`
/// deep (see the module docs) and every call inlined: each call site adds its callee's
/// inlined size, a call that closes a cycle goes one copy deeper, and a cut call adds nothing.
/// Saturating: tree recursion grows exponentially with the depth.
fn inlined_size(m: LLVMModuleRef, function: &str, recursive: &HashSet<String>, depth: u32) -> u64 {
    let back = back_edges(m, recursive);
    let mut bodies: HashMap<String, (u64, Vec<String>)> = HashMap::new();
    for f in llvm::functions(m).into_iter().filter(|&f| !llvm::is_declaration(f)) {
        let own = llvm::blocks(f).into_iter().map(|b| llvm::instructions(b).len() as u64).sum();
        let calls = direct_calls(f).into_iter().map(|(_, c)| llvm::value_name(c)).collect();
        bodies.insert(llvm::value_name(f), (own, calls));
    }
    fn size(f: &str, copy: u32, cx: &(&HashMap<String, (u64, Vec<String>)>, &HashSet<String>, &HashSet<(String, String)>, u32), memo: &mut HashMap<(String, u32), u64>) -> u64 {
        let (bodies, recursive, back, depth) = *cx;
        let Some((own, calls)) = bodies.get(f) else { return 0 };
        if let Some(&s) = memo.get(&(f.to_string(), copy)) {
            return s;
        }
        let mut total = *own;
        for g in calls {
            let s = if recursive.contains(f) && back.contains(&(f.to_string(), g.clone())) {
                if copy == depth {
                    0
                } else {
                    size(g, copy + 1, cx, memo)
                }
            } else if recursive.contains(f) && recursive.contains(g) {
                size(g, copy, cx, memo)
            } else {
                // Functions outside the cycles have one body, which calls the originals.
                size(g, 0, cx, memo)
            };
            total = total.saturating_add(s);
        }
        memo.insert((f.to_string(), copy), total);
        total
    }
    size(function, 0, &(&bodies, recursive, &back, depth), &mut HashMap::new())
}

/// In a clone: `f` becomes a declaration of the same name and type (its uses now refer to it).
unsafe fn make_declaration(m: LLVMModuleRef, f: Value) {
    let name = llvm::value_name(f);
    llvm::set_value_name(f, &format!("{name}.apc.dead"));
    let cname = std::ffi::CString::new(name).unwrap_or_default();
    let decl = LLVMAddFunction(m, cname.as_ptr(), LLVMGlobalGetValueType(f));
    LLVMReplaceAllUsesWith(f, decl);
    LLVMDeleteFunction(f);
}

/// Unrolls the recursion of `module` to `depth` copies (see the module docs); `None` when there
/// is none, or when it cannot be done (aliases, too many copies): the recursive calls then stay
/// unknown calls, as before.
pub fn unroll(module: &inkwell::module::Module<'_>, function: &str, depth: u32, cut_marker_id: u32) -> Option<Unrolling> {
    let recursive = super::normalize::recursive_functions(module);
    if recursive.is_empty() || depth == 0 {
        return None;
    }
    let m = module.as_mut_ptr();
    let asked = depth;
    let fits = |d: u32| {
        let size = inlined_size(m, function, &recursive, d);
        debug!(depth = d, size, "recursion unrolled: estimated size once inlined");
        recursive.len() * d as usize <= MAX_COPIES && size <= MAX_INLINED_INSTRUCTIONS
    };
    let depth = (1..=depth).rev().find(|&d| fits(d))?;
    if depth < asked {
        tracing::info!(asked, depth, "recursion unrolled less deep: deeper copies would not fit the size bound once inlined");
    }
    if !unsafe { LLVMGetFirstGlobalAlias(m) }.is_null() || !unsafe { LLVMGetFirstGlobalIFunc(m) }.is_null() {
        debug!("recursion not unrolled: the module has aliases");
        return None;
    }
    let reaches = may_reach_marker(m);
    let clobbers = may_write_outside_scalars(m);
    let back = back_edges(m, &recursive);
    let mut names: Vec<String> = recursive.iter().cloned().collect();
    names.sort();

    // Internal symbols become external for the link; their linkage is restored afterwards.
    let mut local: Vec<(Value, LLVMLinkage)> = vec![];
    for v in llvm::functions(m).into_iter().chain(llvm::globals(m)) {
        if is_local_linkage(v) {
            local.push((v, unsafe { LLVMGetLinkage(v) }));
            unsafe { LLVMSetLinkage(v, LLVMLinkage::LLVMExternalLinkage) };
        }
    }

    let mut linked = true;
    for d in 1..=depth {
        let clone = unsafe { LLVMCloneModule(m) };
        unsafe {
            for f in llvm::functions(clone) {
                let name = llvm::value_name(f);
                if recursive.contains(&name) {
                    llvm::set_value_name(f, &name_of(&name, d));
                    LLVMSetLinkage(f, LLVMLinkage::LLVMExternalLinkage);
                } else if !llvm::is_declaration(f) {
                    make_declaration(clone, f);
                }
            }
            for g in llvm::globals(clone) {
                if !LLVMGetInitializer(g).is_null() {
                    LLVMSetInitializer(g, std::ptr::null_mut());
                }
                LLVMSetLinkage(g, LLVMLinkage::LLVMExternalLinkage);
            }
        }
        if let Err(e) = llvm::link_raw(m, clone) {
            debug!(%e, "recursion copies could not be linked");
            linked = false;
            break;
        }
    }

    // Redirect: copy d (0 = the original) calls copy d + 1; the last copy calls the cut.
    let mut marked_cuts = 0;
    if linked {
        let mut cut_decls: HashMap<String, Value> = HashMap::new();
        for d in 0..=depth {
            for name in &names {
                let here = if d == 0 { name.clone() } else { name_of(name, d) };
                let Some(f) = llvm::function_named(m, &here) else { continue };
                for (call, callee) in direct_calls(f) {
                    let callee_name = llvm::value_name(callee);
                    let original = if d == 0 {
                        callee_name.clone()
                    } else {
                        callee_name.strip_suffix(&format!(".apc.rec{d}")).unwrap_or(&callee_name).to_string()
                    };
                    if !recursive.contains(&original) {
                        continue;
                    }
                    let to = if !back.contains(&(name.clone(), original.clone())) {
                        // Within one level: the same copy.
                        if d == 0 {
                            continue;
                        }
                        llvm::function_named(m, &name_of(&original, d))
                    } else if d < depth {
                        llvm::function_named(m, &name_of(&original, d + 1))
                    } else {
                        let decl = *cut_decls.entry(original.clone()).or_insert_with(|| unsafe {
                            let c = std::ffi::CString::new(cut_name(&original)).unwrap_or_default();
                            LLVMAddFunction(m, c.as_ptr(), LLVMGlobalGetValueType(callee))
                        });
                        if reaches.contains(&original) || clobbers.contains(&original) {
                            let block = unsafe { LLVMGetInstructionParent(call) };
                            llvm::insert_marker_call(m, TARGET_MARKER, block, Some(call), cut_marker_id);
                            marked_cuts += 1;
                        }
                        Some(decl)
                    };
                    if let Some(to) = to {
                        unsafe { LLVMSetOperand(call, LLVMGetNumOperands(call) as u32 - 1, to) };
                    }
                }
            }
        }
    }
    for name in &names {
        for d in 1..=depth {
            if let Some(f) = llvm::function_named(m, &name_of(name, d)) {
                unsafe { LLVMSetLinkage(f, LLVMLinkage::LLVMInternalLinkage) };
            }
        }
    }
    for (v, linkage) in local {
        unsafe { LLVMSetLinkage(v, linkage) };
    }
    if !linked {
        return None;
    }
    debug!(?names, depth, marked_cuts, "recursion unrolled");
    Some(Unrolling { functions: names, depth, asked, marked_cuts })
}
