//! Loading: INPUT → parsed LLVM module → targets marked → normalised → owned IR.
//!
//! ```text
//! .c ──clang──▶ .bc ──parse──▶ Module ──resolve targets, insert markers──▶ (instrumented bitcode kept
//!                                       for replay) ──inline, mem2reg, loop-simplify──▶ lower ──▶ Program
//! ```

pub mod input;
mod llvm;
mod lower;
pub mod ctypes;
mod normalize;
pub mod project;
pub mod recursion;
pub mod target;
pub mod assume;
mod bounds;
pub mod clib;
pub mod comparisons;
mod demand;
mod devirt;

pub use input::{clang_path, llvm_tool, CLANG_ANALYSIS_FLAGS};
pub use devirt::FUNCTION_POINTER_FACT;
pub use target::{TargetSpec, TARGET_MARKER};

use crate::error::{list_names, Error, Result};
use crate::ir::Program;
use inkwell::context::Context;
use inkwell::values::AsValueRef;
use std::path::{Path, PathBuf};
use tracing::{debug, info};

/// The loaded program and what replay needs to run the original code.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub program: Program,
    /// The input module with target markers inserted, before any normalisation: the code that
    /// replay compiles and runs natively.
    pub instrumented_bitcode: Vec<u8>,
    /// `function:label` of every target block in the original code, by target number.
    pub target_blocks: Vec<String>,
    /// Functions the module declares without a body (they come from the environment).
    pub declared_functions: Vec<String>,
    /// The functions whose addresses the replay copy lists in [`FUNCTION_TABLE`], in order: what
    /// a witness may pass as a function pointer.
    pub function_table: Vec<String>,
    /// The source file and line of the (first) target, when the bitcode has debug lines.
    pub target_location: Option<(String, u32)>,
    /// File, line and column of every target block's start (an emitted test checks that one of
    /// them ran).
    pub target_positions: Vec<(String, u32, u32)>,
    /// How many functions with a body were normalised (the analysed function and what a call
    /// of it can run, see `demand`).
    pub functions_normalised: usize,
    /// The name `--function` has in `instrumented_bitcode` (`main` is renamed, see
    /// [`REPLAY_MAIN`], so that replay can link its own `main`).
    pub replay_function: String,
    /// What the verdict assumes of the inputs, for the report: the `--assume` conditions, the
    /// `--arg-size` buffer sizes and the length bounds they imply.
    pub assumptions: Vec<String>,
    /// Recursive functions whose calls were cut past `--recursion-depth` copies (their results
    /// are unknown beyond it), for the report's reasons.
    pub recursion_cut: Option<recursion::Unrolling>,
    /// A `--line` whose line has code in several blocks: which one the target is and the
    /// others with their columns (see [`target::ResolvedTarget::note`]).
    pub target_note: Option<String>,
}

/// The table of function addresses in the instrumented bitcode (see [`Loaded::function_table`]).
pub const FUNCTION_TABLE: &str = "__apc_function_table";

/// What `main` is called in the instrumented bitcode.
pub const REPLAY_MAIN: &str = "__apc_main";
/// Prefix of the external name a `static` function under analysis gets in the replayed copy.
pub const STATIC_PREFIX: &str = "__apc_static_";

/// C source of the library models (see `env_models.c`).
const ENV_MODELS: &str = include_str!("env_models.c");
/// Functions `env_models.c` defines.
pub const MODELLED_FUNCTIONS: &[&str] =
    &["strcmp", "strncmp", "memcmp", "strlen", "strchr", "strtol", "strtoll", "strtoul", "strtoull", "atoi", "atol", "atoll"];

/// Models that call other models: the callee is linked in with its caller.
const MODEL_CALLS: &[(&str, &str)] = &[("atoi", "strtol"), ("atol", "strtol"), ("atoll", "strtoll")];

/// C library functions of integers that are pure and that the executor has no exact model of:
/// when the program declares them, their calls get mixed concrete-symbolic solving as if named
/// by `--pure` (their results were ⋆ before).
pub const BUILTIN_PURE: &[&str] = &[
    "toupper", "tolower", "isalpha", "isdigit", "isalnum", "isspace", "isupper", "islower", "isprint", "ispunct",
    "isxdigit", "iscntrl", "isgraph", "htonl", "htons", "ntohl", "ntohs", "ffs", "ffsl", "ffsll",
];

/// The signatures of the `--pure` functions (an error when one is missing or not a function of
/// integers), and of the [`BUILTIN_PURE`] functions the module declares without a body.
fn pure_signatures(module: &inkwell::module::Module<'_>, names: &[String]) -> Result<Vec<crate::ir::PureSignature>> {
    let mut out = vec![];
    for name in names {
        let Some(f) = module.get_function(name) else {
            return Err(Error::bad_input(format!("--pure {name}: the program neither defines nor declares `{name}`")));
        };
        out.push(pure_signature(f).map_err(|why| Error::bad_input(format!("--pure {name}: {why}")))?);
    }
    for name in BUILTIN_PURE {
        if names.iter().any(|n| n == name) {
            continue;
        }
        if let Some(f) = module.get_function(name).filter(|f| f.count_basic_blocks() == 0) {
            if let Ok(sig) = pure_signature(f) {
                out.push(sig);
            }
        }
    }
    Ok(out)
}

/// The signature of `f` when it takes and returns integers of 1 to 64 bits.
fn pure_signature(f: inkwell::values::FunctionValue<'_>) -> std::result::Result<crate::ir::PureSignature, String> {
    use inkwell::attributes::{Attribute, AttributeLoc};
    use inkwell::types::BasicMetadataTypeEnum;
    let ty = f.get_type();
    let ret = match ty.get_return_type() {
        Some(inkwell::types::BasicTypeEnum::IntType(i)) => i.get_bit_width(),
        _ => return Err("only functions returning an integer can be evaluated natively".into()),
    };
    let mut params = vec![];
    for (k, p) in ty.get_param_types().iter().enumerate() {
        let w = match p {
            BasicMetadataTypeEnum::IntType(i) if matches!(i.get_bit_width(), 1 | 8 | 16 | 32 | 64) => i.get_bit_width(),
            _ => return Err(format!("parameter {} is not an integer; only integer parameters can be passed natively", k + 1)),
        };
        let signext = f.get_enum_attribute(AttributeLoc::Param(k as u32), Attribute::get_named_enum_kind_id("signext")).is_some();
        params.push(crate::ir::PureParam { width: w, signed: signext });
    }
    if ty.is_var_arg() || !matches!(ret, 1 | 8 | 16 | 32 | 64) {
        return Err("variadic functions and results wider than 64 bits are not supported".into());
    }
    let name = f.get_name().to_string_lossy().into_owned();
    Ok(crate::ir::PureSignature { name, params, ret, defined: f.count_basic_blocks() > 0 })
}

/// Links models of the library functions the program declares (and does not define) into the
/// analysed module, so that their loops are summarised like the program's own.
fn link_environment_models<'ctx>(ctx: &'ctx Context, module: &inkwell::module::Module<'ctx>, declared: &[String], dir: &Path) -> Result<()> {
    let mut needed: Vec<&str> = MODELLED_FUNCTIONS.iter().copied().filter(|f| declared.iter().any(|d| d == f)).collect();
    for (caller, callee) in MODEL_CALLS {
        if needed.contains(caller) && !needed.contains(callee) {
            needed.push(callee);
        }
    }
    if needed.is_empty() {
        return Ok(());
    }
    let src = dir.join("env_models.c");
    std::fs::write(&src, ENV_MODELS).map_err(|e| Error::internal(format!("writing {}: {e}", src.display())))?;
    let bc = input::compile_c(&src, dir).map_err(|e| Error::internal(format!("library models: {e}")))?;
    let models = input::parse_module(ctx, &bc)?;
    for f in models.get_functions() {
        let name = f.get_name().to_string_lossy().into_owned();
        if f.count_basic_blocks() > 0 && !needed.contains(&name.as_str()) {
            unsafe { f.delete() };
        }
    }
    // Not inkwell's `link_in_module`: it leaves a diagnostic handler pointing into its own
    // stack frame installed on the context (see `llvm::link_modules`).
    llvm::link_modules(module, models).map_err(|e| Error::internal(format!("linking library models: {e}")))?;
    debug!(?needed, "library models linked");
    Ok(())
}

/// Largest bitcode (bytes) whose text is printed to read parameter types from.
const MAX_BITCODE_FOR_C_TYPES: usize = 1 << 20;

/// Knobs of loading.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Copies of each recursive function inlined before a cut (see [`recursion`]); 0 leaves
    /// recursive calls unknown.
    pub recursion_depth: u32,
    /// More inputs linked with the first (`.c`, `.bc`, `.ll`).
    pub extra_inputs: Vec<PathBuf>,
    /// A compilation database (`-p`): its C files are inputs too, each compiled with its own
    /// flags (see [`project`]).
    pub compile_commands: Option<PathBuf>,
    /// `--assume` conditions on the function's parameters (see [`assume`]).
    pub assumptions: Vec<String>,
    /// `--arg-size NAME=BYTES`: the size of the buffer behind a pointer parameter.
    pub arg_sizes: Vec<(String, u64)>,
    /// `--pure NAME`: functions kept as calls (never inlined) whose calls the analysis leaves
    /// to mixed concrete-symbolic solving.
    pub pure_functions: Vec<String>,
    /// The user's clang flags for every `.c` input (`-I`, `-D`, `-U`, `-include`, `--std`,
    /// `--cflags`), after a compilation database entry's own.
    pub cflags: Vec<String>,
    /// The inputs compiled and linked once for every load that shares it (the targets of a
    /// batch): each load then starts from its bitcode instead of running clang again.
    pub module_cache: Option<std::sync::Arc<ModuleCache>>,
}

/// The linked module of a batch's inputs, as bitcode, once the first load has made it. Only
/// loads of the same inputs with the same options may share one.
#[derive(Debug, Default)]
pub struct ModuleCache {
    linked: std::sync::Mutex<Option<std::sync::Arc<Vec<u8>>>>,
}

impl ModuleCache {
    fn get(&self) -> Option<std::sync::Arc<Vec<u8>>> {
        self.linked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn put(&self, bitcode: Vec<u8>) {
        self.linked.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(|| std::sync::Arc::new(bitcode));
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            recursion_depth: recursion::DEFAULT_DEPTH,
            extra_inputs: vec![],
            compile_commands: None,
            assumptions: vec![],
            arg_sizes: vec![],
            pure_functions: vec![],
            cflags: vec![],
            module_cache: None,
        }
    }
}

/// Loads INPUT, marks the target and lowers `function` into the owned IR, with the default
/// [`LoadOptions`].
pub fn load(path: &Path, function: &str, spec: &TargetSpec) -> Result<Loaded> {
    load_with(path, function, spec, &LoadOptions::default())
}

/// Checks INPUT, compiles the C inputs (into `tmp`), parses and links every input into one module
/// of `ctx`, and checks that `function` has a body in it.
fn open_module<'ctx>(ctx: &'ctx Context, path: &Path, function: &str, options: &LoadOptions, tmp: &Path) -> Result<inkwell::module::Module<'ctx>> {
    if !path.exists() {
        return Err(Error::bad_input(format!("{}: no such file", path.display())));
    }
    if path.is_dir() {
        return Err(Error::bad_input(format!("{}: is a directory, expected .c, .bc or .ll", path.display())));
    }
    // Checked before anything opens it: reading a FIFO or a device would block or never end.
    if !path.metadata().is_ok_and(|m| m.is_file()) {
        return Err(Error::bad_input(format!("{}: not a regular file (a FIFO, socket or device?), expected .c, .bc or .ll", path.display())));
    }
    let cached = options.module_cache.as_ref().and_then(|c| c.get());
    let module = match cached {
        Some(bitcode) => ctx
            .create_module_from_ir(inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(&bitcode, "input"))
            .map_err(|e| Error::internal(format!("the module compiled for this batch no longer parses: {e}")))?,
        None => {
            let module = compile_and_link(ctx, path, options, tmp)?;
            if let Some(c) = &options.module_cache {
                c.put(module.write_bitcode_to_memory().as_slice().to_vec());
            }
            module
        }
    };
    let defined: Vec<String> = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() > 0)
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .collect();
    if !defined.iter().any(|n| n == function) {
        return Err(Error::bad_input(format!(
            "no function '{function}' with a body in {}; defined functions: {}",
            path.display(),
            list_names(&defined)
        )));
    }
    // Before targets are resolved: a target behind a function pointer is then behind a call.
    devirt::devirtualize(module.as_mut_ptr(), function);

    Ok(module)
}

/// Compiles the C inputs (into `tmp`) with their flags, and parses and links every input into
/// one module of `ctx`.
fn compile_and_link<'ctx>(ctx: &'ctx Context, path: &Path, options: &LoadOptions, tmp: &Path) -> Result<inkwell::module::Module<'ctx>> {
    // Every input with the flags its compilation database entry gives it (if any).
    let database = match &options.compile_commands {
        Some(p) => project::read_compile_commands(p)?,
        None => vec![],
    };
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut inputs: Vec<PathBuf> = std::iter::once(path.to_path_buf()).chain(options.extra_inputs.iter().cloned()).collect();
    for e in &database {
        if !inputs.iter().any(|i| canonical(i) == canonical(&e.file)) {
            inputs.push(e.file.clone());
        }
    }
    let mut bitcode_paths = vec![];
    for (k, input) in inputs.iter().enumerate() {
        if k > 0 && !input.is_file() {
            return Err(Error::bad_input(format!("{}: no such file", input.display())));
        }
        if input::classify(input, &[]) == input::InputKind::C {
            info!("compiling {} with clang", input.display());
            let entry = database.iter().find(|e| canonical(&e.file) == canonical(input));
            let (flags, cwd) = entry.map_or((&[][..], None), |e| (&e.flags[..], Some(e.directory.as_path())));
            let flags: Vec<String> = flags.iter().chain(&options.cflags).cloned().collect();
            bitcode_paths.push(input::compile_c_with(input, tmp, &format!("{k}-"), &flags, cwd)?);
        } else {
            bitcode_paths.push(input.to_path_buf());
        }
    }
    let bitcode_path = bitcode_paths[0].clone();

    let module = input::parse_module(ctx, &bitcode_path)?;
    for (other, input) in bitcode_paths.iter().zip(&inputs).skip(1) {
        let o = input::parse_module(ctx, other)?;
        llvm::link_modules(&module, o).map_err(|e| Error::bad_input(format!("{}: cannot be linked with the other inputs: {e}", input.display())))?;
    }
    Ok(module)
}

/// A set of targets analysed one by one (`--cover`, `--all-calls`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetSet {
    /// Every basic block of the function, as written.
    EveryBlock,
    /// Every block (of the function or the functions it calls) that calls this function.
    EveryCallTo(String),
    /// Every line of this source file with code of the function or the functions it calls
    /// (`--all-lines FILE`).
    EveryLineOf(String),
    /// Targets listed by the user (`--targets FILE`).
    Listed(Vec<TargetSpec>),
}

/// A temporary directory for a load's compiled inputs.
fn load_tempdir() -> Result<tempfile::TempDir> {
    crate::scratch::tempdir("apc-load-")
}

/// The targets of `set` in `function` as written, each a `--block` target of its own (callees'
/// blocks as `FUNC:LABEL`).
pub fn list_targets(path: &Path, function: &str, set: &TargetSet, options: &LoadOptions) -> Result<Vec<TargetSpec>> {
    if let TargetSet::Listed(t) = set {
        return Ok(t.clone());
    }
    let tmp = load_tempdir()?;
    let _registered = crate::cleanup::Guard::new(tmp.path());
    let ctx = Context::create();
    let module = open_module(&ctx, path, function, options, tmp.path())?;
    let f = module.get_function(function).expect("checked by open_module");
    match set {
        TargetSet::Listed(_) => unreachable!("returned above"),
        TargetSet::EveryBlock => {
            let labels: Vec<String> = f.get_basic_block_iter().map(|b| b.get_name().to_string_lossy().into_owned()).collect();
            if labels.iter().any(|l| l.is_empty()) {
                return Err(Error::bad_input(format!("--cover: the blocks of '{function}' have no names (compile with -fno-discard-value-names)")));
            }
            Ok(labels.into_iter().map(TargetSpec::Block).collect())
        }
        TargetSet::EveryCallTo(callee) => {
            let hits = target::resolve(module.as_mut_ptr(), function, &TargetSpec::Call(callee.clone()))
                .map_err(|e| Error::bad_input(e.to_string().replace("--call", "--all-calls")))?;
            if hits.iter().any(|h| h.label.is_empty()) {
                return Err(Error::bad_input(format!("--all-calls {callee}: the calling blocks have no names (compile with -fno-discard-value-names)")));
            }
            let mut out: Vec<TargetSpec> = vec![];
            for h in hits {
                let t = TargetSpec::Block(format!("{}:{}", h.function, h.label));
                if !out.contains(&t) {
                    out.push(t);
                }
            }
            Ok(out)
        }
        TargetSet::EveryLineOf(file) => target::lines_of(module.as_mut_ptr(), function, file),
    }
}

/// Loads INPUT, marks the target and lowers `function` into the owned IR.
pub fn load_with(path: &Path, function: &str, spec: &TargetSpec, options: &LoadOptions) -> Result<Loaded> {
    let tmp = load_tempdir()?;
    let _registered = crate::cleanup::Guard::new(tmp.path());
    // One LLVM context per load, used by this thread only; every LLVM object of the load (module,
    // linked models, pass builder, target machine, raw values handed to `lower`) is dropped
    // before it: `module` is declared after `ctx`, so it is dropped first, and `Loaded` holds
    // owned data only (ARCHITECTURE.md, "Threads and FFI ownership").
    let ctx = Context::create();
    let module = open_module(&ctx, path, function, options, tmp.path())?;
    let m = module.as_mut_ptr();
    llvm::install_diagnostic_logger(m);

    // The user's assumptions become part of the program (see `assume`): before anything reads it.
    let assumptions = assume::compile(&module, function, &options.assumptions, &options.arg_sizes)?;

    let resolved = target::resolve(m, function, spec)?;
    let target_note = resolved.iter().find_map(|t| t.note.clone());
    let target_location = resolved.first().and_then(target::source_location);
    let target_positions: Vec<(String, u32, u32)> = resolved.iter().filter_map(target::source_position).collect();
    debug!(?spec, count = resolved.len(), "target resolved");
    let target_blocks: Vec<String> =
        resolved.iter().map(|t| format!("{}:{}", t.function, t.label)).collect();
    for (k, t) in resolved.iter().enumerate() {
        target::instrument(m, std::slice::from_ref(t), k as u32);
    }
    // Functions a pointer may hold: a witness may pass one, and the replay driver finds it in
    // a table added to the copy kept for replay (only there: in the analysed module the table
    // would make every one of them look called from outside).
    let table_functions: Vec<llvm::Value> =
        llvm::functions(m).into_iter().filter(|&g| !llvm::is_intrinsic(g) && !llvm::value_name(g).starts_with("__apc") && llvm::used_as_value(g)).collect();
    let function_table: Vec<String> = table_functions.iter().map(|&g| llvm::value_name(g)).collect();
    let declared_functions: Vec<String> = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() == 0)
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .collect();
    // Replay links its own `main`: the program's is renamed in the copy kept for replay.
    let main = module.get_function("main").filter(|f| f.count_basic_blocks() > 0);
    if let Some(f) = main {
        llvm::set_value_name(f.as_value_ref(), REPLAY_MAIN);
    }
    // A `static` function under analysis is made callable by the replay driver in the copy:
    // external linkage, under a name of its own (never stubbed by the link).
    let internal = module
        .get_function(function)
        .filter(|f| function != "main" && f.count_basic_blocks() > 0)
        .filter(|f| matches!(f.get_linkage(), inkwell::module::Linkage::Internal | inkwell::module::Linkage::Private))
        .map(|f| (f, f.get_linkage()));
    if let Some((f, _)) = internal {
        f.set_linkage(inkwell::module::Linkage::External);
        llvm::set_value_name(f.as_value_ref(), &format!("{STATIC_PREFIX}{function}"));
    }
    let table = llvm::add_function_table(m, FUNCTION_TABLE, &table_functions);
    let instrumented_bitcode = module.write_bitcode_to_memory().as_slice().to_vec();
    llvm::delete_global(table);
    if let Some(f) = main {
        llvm::set_value_name(f.as_value_ref(), "main");
    }
    if let Some((f, linkage)) = internal {
        llvm::set_value_name(f.as_value_ref(), function);
        f.set_linkage(linkage);
    }
    let replay_function = if function == "main" {
        REPLAY_MAIN.to_string()
    } else if internal.is_some() {
        format!("{STATIC_PREFIX}{function}")
    } else {
        function.to_string()
    };

    // Only what a call of the function can run is normalised and scanned from here on.
    let mut roots: Vec<&str> = options.pure_functions.iter().map(String::as_str).collect();
    if let TargetSpec::Call(callee) = spec {
        roots.push(callee.as_str());
    }
    let functions_normalised = demand::keep_what_can_run(m, function, &roots);
    debug!(functions_normalised, "only what a call of '{function}' can run is analysed");
    // Parameters' C types from the debug information, while the function is as written, and
    // once only what can run is left (the text of a huge module is not worth printing for this).
    let c_types = if instrumented_bitcode.len() <= MAX_BITCODE_FOR_C_TYPES {
        let n = module.get_function(function).map_or(0, |f| f.count_params() as usize);
        ctypes::param_types(&module.print_to_string().to_string(), function, n)
    } else {
        vec![]
    };

    link_environment_models(&ctx, &module, &declared_functions, tmp.path())?;

    // Recursion unrolled to a bound, cut calls marked as targets when they may lead to it.
    let recursion_cut = recursion::unroll(&module, function, options.recursion_depth, resolved.len() as u32);
    if let Some(u) = &recursion_cut {
        info!(functions = ?u.functions, depth = u.depth, marked_cuts = u.marked_cuts, "recursion unrolled");
    }

    let mut keep = vec![function];
    if let TargetSpec::Call(callee) = spec {
        keep.push(callee.as_str());
    }
    let pure_signatures = pure_signatures(&module, &options.pure_functions)?;
    keep.extend(options.pure_functions.iter().map(String::as_str));
    // Before the normalisation, which promotes function pointers kept in locals and so forgets
    // that their functions' addresses were taken (a read past an array of function pointers
    // natively reaches its neighbour, `g = reach_error`).
    let outside = bounds::Outside::of(m, match spec {
        TargetSpec::Call(callee) => Some(callee.as_str()),
        _ => None,
    });
    normalize::normalize(&ctx, &module, &keep)?;
    info!("normalised with '{}'", normalize::PIPELINE);
    // Stores that may leave their object: pseudo-targets as well (see `bounds`), with the cut
    // sites' id. After normalisation: a helper's stores into its caller's array, a `malloc`
    // block and a pointer to a local are then addressed from their object directly.
    let clobber_sites = bounds::mark_clobber_sites(m, resolved.len() as u32, &outside);
    if clobber_sites > 0 {
        info!(clobber_sites, "stores that may leave their object marked");
    }

    let f = module.get_function(function).expect("checked above").as_value_ref();
    let mut program = lower::lower(m, f, target_blocks.clone())?;
    comparisons::exact_where_only_the_sign_is_used(&mut program.function);
    program.pure_functions = pure_signatures;
    for (p, (c, pointee)) in program.function.params.iter_mut().zip(c_types) {
        p.c_type = c;
        p.pointee_bytes = pointee;
    }
    for k in 0..program.function.params.len() {
        let front = match program.function.params[k].ty {
            crate::ir::Ty::Ptr => crate::ir::bytes_before(&program.function, program.function.params[k].value),
            _ => 0,
        };
        let p = &mut program.function.params[k];
        p.buffer_bytes = options.arg_sizes.iter().find(|(n, _)| *n == p.name).map(|(_, b)| *b);
        p.front_bytes = front;
    }
    // No marker left anywhere in the module: the target blocks were dropped as dead code (the
    // inliner copies only the blocks a call can reach, and removes internal functions it
    // inlined everywhere), so nothing leads to them and the analysis answers unreachable. A
    // marker still in another function (a recursive callee, one called through a pointer)
    // means the target may be reached in code the analysis does not see.
    // Functions run through pointers to them are not such code: the calls that may run them
    // are sites of their own (see `bounds`).
    let callback_code: std::collections::HashSet<llvm::Value> =
        llvm::functions(m).into_iter().filter(|&g| !llvm::is_declaration(g) && target::runs_from_outside(g)).flat_map(target::reachable_functions).collect();
    let marker_elsewhere = llvm::functions(m).into_iter().filter(|&g| g != f && !callback_code.contains(&g)).any(|g| {
        llvm::blocks(g).into_iter().flat_map(llvm::instructions).any(|i| {
            llvm::opcode(i) == llvm_sys::LLVMOpcode::LLVMCall && llvm::value_name(llvm::called_value(i)) == TARGET_MARKER
        })
    });
    // The real targets: clobber sites and cut sites (`resolved.len()` on) do not count.
    let real_targets = program.function.blocks.iter().any(|b| b.target.is_some_and(|t| (t as usize) < resolved.len()));
    if !real_targets && !marker_elsewhere && !resolved.is_empty() {
        info!("every target block was dropped as dead code during normalisation");
    } else if !real_targets {
        let callee = resolved.iter().find(|t| t.function != function).map(|t| t.function.clone());
        return Err(Error::bad_input(match callee {
            Some(c) => format!(
                "{}: the target is in '{c}', which cannot be inlined into '{function}' (recursive)",
                spec.describe()
            ),
            None => format!("{}: the target disappeared during normalisation", spec.describe()),
        }));
    }
    info!(
        blocks = program.function.blocks.len(),
        targets = program.function.target_blocks().len(),
        "lowered '{function}'"
    );
    Ok(Loaded { program, instrumented_bitcode, target_blocks, declared_functions, function_table, replay_function, assumptions, recursion_cut, target_location, target_positions, functions_normalised, target_note })
}
