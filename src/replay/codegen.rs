//! The instrumented bitcode compiled to an object file in-process, with the LLVM this tool is
//! linked with (LLVM 19, as clang-19): what `clang-19 -O0 -c program.bc` does, without starting
//! clang, whose dynamic loading alone takes 30–40 ms of the 2 cores a small analysis has.

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple};
use inkwell::values::AsValueRef;
use inkwell::OptimizationLevel;
use std::path::Path;

/// Compiles `bitcode` for x86-64 Linux at `-O0` into the object file `obj` (position
/// independent, as Debian's clang does by default, so that it links statically or as PIE).
pub fn compile_object(bitcode: &[u8], obj: &Path) -> Result<(), String> {
    let machine = machine()?;
    // A context of this thread's own: LLVM contexts are not shared between threads.
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(bitcode, "program.bc");
    let module = Module::parse_bitcode_from_buffer(&buffer, &context).map_err(|e| e.to_string())?;
    module.set_triple(&machine.get_triple());
    structors_to_init_array(&module);
    machine.write_to_file(&module, FileType::Object, obj).map_err(|e| e.to_string())
}

/// Moves the module's constructors and destructors (`llvm.global_ctors`, `llvm.global_dtors`)
/// into arrays in `.init_array` and `.fini_array` sections, as clang's code generation does.
///
/// Why: LLVM's C API creates target machines whose options put them in `.ctors`/`.dtors`
/// (`UseInitArray` is off, with no way to set it), and neither glibc's static start-up nor lld
/// runs those: a program's `__attribute__((constructor))` never ran in replay, so runs
/// started from globals the real program never has at entry.
fn structors_to_init_array(module: &Module) {
    use llvm_sys::core::*;
    for (list, section) in [("llvm.global_ctors", ".init_array"), ("llvm.global_dtors", ".fini_array")] {
        let Some(global) = module.get_global(list) else { continue };
        let g = global.as_value_ref();
        // SAFETY: C API calls on values of this module, checked for null where they may be.
        unsafe {
            let init = LLVMGetInitializer(g);
            if init.is_null() {
                continue;
            }
            // Entries {priority, function, data}, by priority in their order.
            let mut by_priority: std::collections::BTreeMap<u64, Vec<llvm_sys::prelude::LLVMValueRef>> = Default::default();
            for k in 0..LLVMGetNumOperands(init) as u32 {
                let entry = LLVMGetAggregateElement(init, k);
                if entry.is_null() {
                    continue;
                }
                let (priority, function) = (LLVMGetAggregateElement(entry, 0), LLVMGetAggregateElement(entry, 1));
                if priority.is_null() || function.is_null() || LLVMIsNull(function) != 0 {
                    continue;
                }
                by_priority.entry(LLVMConstIntGetZExtValue(priority)).or_default().push(function);
            }
            let ptr = LLVMPointerTypeInContext(LLVMGetModuleContext(module.as_mut_ptr()), 0);
            for (priority, mut functions) in by_priority {
                let ty = LLVMArrayType2(ptr, functions.len() as u64);
                let name = std::ffi::CString::new(format!("apc{}.{priority}", section.replace('.', "_"))).expect("no NUL");
                let array = LLVMAddGlobal(module.as_mut_ptr(), ty, name.as_ptr());
                LLVMSetInitializer(array, LLVMConstArray2(ptr, functions.as_mut_ptr(), functions.len() as u64));
                LLVMSetLinkage(array, llvm_sys::LLVMLinkage::LLVMInternalLinkage);
                LLVMSetAlignment(array, 8);
                // The linker orders `.init_array.N` by N, after `.init_array.M` for M < N, and
                // the plain section last, as priorities go.
                let section = if priority >= 65535 { section.to_string() } else { format!("{section}.{priority:05}") };
                let section = std::ffi::CString::new(section).expect("no NUL");
                LLVMSetSection(array, section.as_ptr());
            }
            LLVMDeleteGlobal(g);
        }
    }
}

/// The options of LLVM's coverage pass (`sancov-module`) that `clang -fsanitize=fuzzer-no-link`
/// sets: edges and indirect calls (level 4), comparison tracing, inline 8-bit counters, the PC
/// table, stack depth. LLVM reads them from its command-line options only, so they are set
/// once per process; nothing else here runs that pass.
const SANCOV_OPTIONS: &[&str] = &[
    "apc-llvm",
    "-sanitizer-coverage-level=4",
    "-sanitizer-coverage-trace-compares",
    "-sanitizer-coverage-inline-8bit-counters",
    "-sanitizer-coverage-pc-table",
    "-sanitizer-coverage-stack-depth",
];

/// [`compile_object`] for libFuzzer: the functions named first in `rename` renamed to the second
/// (declarations the fuzzing driver defines under another name), the module instrumented for
/// coverage as `clang -O0 -fsanitize=fuzzer-no-link` does, and the object's sections renamed by
/// `sections` ([`super::elf::rename_sections`]). What `clang` and `llvm-objcopy` did in two
/// processes (30 ms and two process starts, beside the engines) in this one.
pub fn compile_fuzz_object(bitcode: &[u8], obj: &Path, rename: &[(String, String)], sections: &[(&str, &str)], work_tick: &str) -> Result<(), String> {
    static OPTIONS: std::sync::Once = std::sync::Once::new();
    OPTIONS.call_once(|| {
        let args: Vec<std::ffi::CString> = SANCOV_OPTIONS.iter().map(|a| std::ffi::CString::new(*a).expect("no NUL")).collect();
        let argv: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        // SAFETY: valid C strings for the call's duration. The options are LLVM 19's (this
        // binary links it statically), so parsing cannot fail (it would end the process).
        unsafe { llvm_sys::support::LLVMParseCommandLineOptions(argv.len() as i32, argv.as_ptr(), std::ptr::null()) };
    });
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(bitcode, "program.bc");
    let module = Module::parse_bitcode_from_buffer(&buffer, &context).map_err(|e| e.to_string())?;
    for (old, new) in rename {
        if let Some(f) = module.get_function(old) {
            if f.count_basic_blocks() == 0 {
                let name = std::ffi::CString::new(new.as_str()).map_err(|e| e.to_string())?;
                // SAFETY: a function of this module; the name is copied by LLVM.
                unsafe { llvm_sys::core::LLVMSetValueName2(f.as_value_ref(), name.as_ptr(), new.len()) };
            }
        }
    }
    insert_work_ticks(&module, work_tick)?;
    let machine = machine()?;
    module.set_triple(&machine.get_triple());
    module.run_passes("sancov-module", &machine, inkwell::passes::PassBuilderOptions::create()).map_err(|e| e.to_string())?;
    // After the pass: its constructor registers the coverage counters with libFuzzer (in
    // `.ctors` nothing ran it, and libFuzzer saw no coverage at all).
    structors_to_init_array(&module);
    let mut bytes = machine.write_to_memory_buffer(&module, FileType::Object).map_err(|e| e.to_string())?.as_slice().to_vec();
    super::elf::rename_sections(&mut bytes, sections)?;
    std::fs::write(obj, &bytes).map_err(|e| format!("cannot write {}: {e}", obj.display()))
}

/// Calls `tick` (a `void (void)` function the driver defines) at the entry of every function
/// the module defines and at the start of every block a backward edge enters (a successor at
/// or before its block in layout order): every cycle of a control-flow graph has such an edge,
/// so every loop iteration and every recursive call ticks. The fuzz driver counts the ticks
/// of an input and abandons it past a budget: a cut-off in work done, the same on any machine
/// under any load, where one in CPU time (sampled at a timer's ticks) cut the same input at
/// another point from one run to the next, and libFuzzer then went down another path.
fn insert_work_ticks(module: &Module, tick: &str) -> Result<(), String> {
    let context = module.get_context();
    let functions: Vec<_> = module.get_functions().filter(|f| f.count_basic_blocks() > 0).collect();
    if functions.is_empty() {
        return Ok(());
    }
    let tick_fn = module.get_function(tick).unwrap_or_else(|| module.add_function(tick, context.void_type().fn_type(&[], false), None));
    let builder = context.create_builder();
    for f in functions {
        let blocks = f.get_basic_blocks();
        let position: std::collections::HashMap<_, usize> = blocks.iter().enumerate().map(|(k, b)| (*b, k)).collect();
        let mut ticked: Vec<inkwell::basic_block::BasicBlock> = vec![blocks[0]];
        let mut seen = std::collections::HashSet::from([blocks[0]]);
        for (at, b) in blocks.iter().enumerate() {
            let Some(term) = b.get_terminator() else { continue };
            for k in 0..term.get_num_operands() {
                if let Some(inkwell::values::Operand::Block(succ)) = term.get_operand(k) {
                    if position.get(&succ).is_some_and(|p| *p <= at) && seen.insert(succ) {
                        ticked.push(succ);
                    }
                }
            }
        }
        for b in ticked {
            // After the block's phis (they must stay first).
            let mut at = b.get_first_instruction();
            while let Some(i) = at.filter(|i| i.get_opcode() == inkwell::values::InstructionOpcode::Phi) {
                at = i.get_next_instruction();
            }
            let Some(at) = at else { continue };
            builder.position_before(&at);
            builder.build_call(tick_fn, &[], "").map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The x86-64 Linux target machine at `-O0`, position independent.
fn machine() -> Result<inkwell::targets::TargetMachine, String> {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| Target::initialize_x86(&InitializationConfig::default()));
    let triple = TargetTriple::create("x86_64-pc-linux-gnu");
    let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
    target
        .create_target_machine(&triple, "x86-64", "", OptimizationLevel::None, RelocMode::PIC, CodeModel::Default)
        .ok_or_else(|| "LLVM cannot create an x86-64 target machine".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `source` compiled by clang to bitcode in `dir` (`-O0`, functions left optimisable as the
    /// tool's users compile them).
    fn bitcode_of(dir: &Path, source: &str) -> std::path::PathBuf {
        let (c, bc) = (dir.join("p.c"), dir.join("p.bc"));
        std::fs::write(&c, source).unwrap();
        let st = std::process::Command::new(crate::load::input::clang_path()).args(["-O0", "-Xclang", "-disable-O0-optnone", "-c", "-emit-llvm"]).arg(&c).arg("-o").arg(&bc).status().unwrap();
        assert!(st.success());
        bc
    }

    /// The fuzzing object: coverage instrumentation as clang's (8-bit counters, PC table,
    /// comparison and indirect-call tracing), the redirected function renamed, the data
    /// sections renamed.
    #[test]
    fn the_fuzzing_object_is_instrumented_and_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let bc = bitcode_of(dir.path(), "int memcmp(const void *, const void *, unsigned long);\nint g = 3, z; int (*fp)(int);\nint f(int x, const char *s) { if (x == 1234) z = 1; if (memcmp(s, \"abc\", 3) == 0) g++; return fp ? fp(x) : g; }\n");
        let obj = dir.path().join("p.o");
        let rename = vec![("memcmp".to_string(), "apc_fuzz_memcmp".to_string())];
        compile_fuzz_object(&std::fs::read(&bc).unwrap(), &obj, &rename, &[(".data", "apc_g_data"), (".bss", "apc_g_bss")], "apc_work_tick").unwrap();
        let bytes = std::fs::read(&obj).unwrap();
        let sections = super::super::elf::section_names(&bytes).unwrap();
        for want in ["__sancov_cntrs", "__sancov_pcs", "apc_g_data", "apc_g_bss"] {
            assert!(sections.iter().any(|s| s == want), "no {want} in {sections:?}");
        }
        assert!(!sections.iter().any(|s| s == ".data" || s == ".bss"), "{sections:?}");
        let nm = std::process::Command::new(crate::load::input::llvm_tool("llvm-nm")).arg(&obj).output().unwrap();
        let symbols = String::from_utf8_lossy(&nm.stdout);
        for want in ["apc_fuzz_memcmp", "__sanitizer_cov_trace_const_cmp4", "__sanitizer_cov_trace_pc_indir", "__sancov_lowest_stack", "apc_work_tick"] {
            assert!(symbols.lines().any(|l| l.ends_with(&format!(" {want}"))), "no {want} in\n{symbols}");
        }
        assert!(!symbols.lines().any(|l| l.ends_with(" memcmp")), "{symbols}");
    }

    /// Work ticks: one at each function's entry and one at each block a backward edge enters
    /// (a loop's header), after its phis; none elsewhere.
    #[test]
    fn work_ticks_go_to_function_entries_and_loop_headers() {
        let dir = tempfile::tempdir().unwrap();
        use inkwell::values::AnyValue;
        let bc = bitcode_of(dir.path(), "int g(int x) { return x + 1; }\nint f(int n) { int s = 0; for (int i = 0; i < n; i++) for (int j = 0; j < i; j++) s += g(j); if (s > 3) s = 0; return s; }\n");
        let context = Context::create();
        let module = Module::parse_bitcode_from_path(&bc, &context).unwrap();
        insert_work_ticks(&module, "tick").unwrap();
        assert!(module.verify().is_ok(), "{:?}", module.verify());
        let ticks_in = |name: &str| -> Vec<String> {
            let f = module.get_function(name).unwrap();
            f.get_basic_blocks()
                .into_iter()
                .filter(|b| {
                    let mut at = b.get_first_instruction();
                    while let Some(i) = at.filter(|i| i.get_opcode() == inkwell::values::InstructionOpcode::Phi) {
                        at = i.get_next_instruction();
                    }
                    at.is_some_and(|i| i.get_opcode() == inkwell::values::InstructionOpcode::Call && i.print_to_string().to_string().contains("@tick"))
                })
                .map(|b| b.get_name().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(ticks_in("g").len(), 1, "the entry only");
        // The entry and the two loop headers (`for.cond`, `for.cond1` at -O0).
        assert_eq!(ticks_in("f").len(), 3, "{:?}", ticks_in("f"));
    }

    /// An object compiled here links with clang into a program that runs as compiled C would.
    #[test]
    fn the_object_links_and_runs() {
        let dir = tempfile::tempdir().unwrap();
        let bc = bitcode_of(dir.path(), "int twice(int x) { return 2 * x; }\n");
        let clang = crate::load::input::clang_path();
        let obj = dir.path().join("p.o");
        compile_object(&std::fs::read(&bc).unwrap(), &obj).unwrap();
        let main = dir.path().join("main.c");
        std::fs::write(&main, "int twice(int);\nint main(void) { return twice(21) == 42 ? 0 : 1; }\n").unwrap();
        let exe = dir.path().join("p");
        let st = std::process::Command::new(&clang).arg("-static").arg(&main).arg(&obj).arg("-o").arg(&exe).status().unwrap();
        assert!(st.success());
        assert!(std::process::Command::new(&exe).status().unwrap().success());
    }
}
