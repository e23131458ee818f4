//! Normalisation with LLVM's own passes: inline every non-recursive function with a body into
//! the analysed function, promote memory to SSA registers (mem2reg), give loops preheaders and
//! dedicated exits (loop-simplify), and name every value (instnamer).

use super::llvm;
use super::target::TARGET_MARKER;
use crate::error::{Error, Result};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use llvm_sys::LLVMOpcode;
use petgraph::graph::DiGraph;
use std::collections::{HashMap, HashSet};

/// The pass pipeline run on the module.
/// Inlining runs twice: a call through a function pointer becomes direct only once mem2reg has
/// propagated the pointer, and is then inlined like any other.
pub const PIPELINE: &str = "always-inline,mem2reg,always-inline,mem2reg,loop-simplify,instnamer";

/// Names of defined functions that take part in a call cycle (directly or mutually recursive):
/// they cannot be inlined.
pub fn recursive_functions(module: &Module) -> HashSet<String> {
    let m = module.as_mut_ptr();
    let funcs: Vec<_> = llvm::functions(m).into_iter().filter(|&f| !llvm::is_declaration(f)).collect();
    let mut g = DiGraph::<String, ()>::new();
    let idx: HashMap<usize, _> =
        funcs.iter().map(|&f| (f as usize, g.add_node(llvm::value_name(f)))).collect();
    for &f in &funcs {
        for b in llvm::blocks(f) {
            for i in llvm::instructions(b) {
                if llvm::opcode(i) == LLVMOpcode::LLVMCall {
                    let c = llvm::called_value(i);
                    if let Some(&ci) = idx.get(&(c as usize)) {
                        g.update_edge(idx[&(f as usize)], ci, ());
                    }
                }
            }
        }
    }
    let mut out = HashSet::new();
    for scc in petgraph::algo::tarjan_scc(&g) {
        let cyclic = scc.len() > 1 || g.contains_edge(scc[0], scc[0]);
        if cyclic {
            out.extend(scc.iter().map(|&n| g[n].clone()));
        }
    }
    out
}

fn target_machine() -> Result<TargetMachine> {
    // LLVM's target registry is a global list that `LLVMInitializeX86Target*` extends without a
    // lock: initialise it once per process, never from two threads at a time (library users and
    // unit tests may load on several threads).
    static X86_INIT: std::sync::Once = std::sync::Once::new();
    X86_INIT.call_once(|| Target::initialize_x86(&InitializationConfig::default()));
    let triple = TargetTriple::create("x86_64-pc-linux-gnu");
    let target = Target::from_triple(&triple).map_err(|e| Error::internal(format!("x86 target: {e}")))?;
    target
        .create_target_machine(&triple, "x86-64", "", OptimizationLevel::None, RelocMode::Default, CodeModel::Default)
        .ok_or_else(|| Error::internal("cannot create an x86-64 target machine"))
}

/// Prepares attributes and runs [`PIPELINE`]. `keep` are functions never to inline (the analysed
/// function itself and the `--call` function, whose calls are the target).
pub fn normalize(ctx: &Context, module: &Module, keep: &[&str]) -> Result<()> {
    let recursive = recursive_functions(module);
    let kind = |name: &str| Attribute::get_named_enum_kind_id(name);
    let (noinline, optnone, alwaysinline) = (kind("noinline"), kind("optnone"), kind("alwaysinline"));
    for f in module.get_functions() {
        if f.count_basic_blocks() == 0 {
            continue;
        }
        // `optnone` (clang -O0 without -disable-O0-optnone) would make mem2reg skip the function.
        f.remove_enum_attribute(AttributeLoc::Function, optnone);
        let name = f.get_name().to_string_lossy().into_owned();
        if keep.contains(&name.as_str()) || recursive.contains(&name) || name == TARGET_MARKER || name == super::devirt::FUNCTION_POINTER_FACT {
            continue;
        }
        f.remove_enum_attribute(AttributeLoc::Function, noinline);
        f.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(alwaysinline, 0));
    }
    // Before mem2reg: see `mark_uninitialised_locals` (an uninitialised local is ⋆, never a
    // value LLVM picked for `undef`).
    let marked = llvm::mark_uninitialised_locals(module.as_mut_ptr(), &[TARGET_MARKER]);
    tracing::debug!(locals = marked, "uninitialised locals marked");
    // Both before mem2reg: what the run does at -O0, not what the compiler may assume.
    let assumptions = llvm::erase_assumptions(module.as_mut_ptr());
    let setjmp_functions = llvm::keep_locals_in_memory_across_setjmp(module.as_mut_ptr());
    tracing::debug!(assumptions, setjmp_functions, "__builtin_assume erased, locals kept in memory across setjmp");
    let tm = target_machine()?;
    module
        .run_passes(PIPELINE, &tm, PassBuilderOptions::create())
        .map_err(|e| Error::internal(format!("LLVM passes '{PIPELINE}' failed: {e}")))?;
    module
        .verify()
        .map_err(|e| Error::internal(format!("module invalid after normalisation: {e}")))?;
    Ok(())
}
