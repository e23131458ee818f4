//! The instrumented bitcode compiled to an object file in-process, with the LLVM this tool is
//! linked with (LLVM 19, as clang-19): what `clang-19 -O0 -c program.bc` does, without starting
//! clang, whose dynamic loading alone takes 30–40 ms of the 2 cores a small analysis has.

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple};
use inkwell::OptimizationLevel;
use std::path::Path;

/// Compiles `bitcode` for x86-64 Linux at `-O0` into the object file `obj` (position
/// independent, as Debian's clang does by default, so that it links statically or as PIE).
pub fn compile_object(bitcode: &[u8], obj: &Path) -> Result<(), String> {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| Target::initialize_x86(&InitializationConfig::default()));
    let triple = TargetTriple::create("x86_64-pc-linux-gnu");
    let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
    let machine = target
        .create_target_machine(&triple, "x86-64", "", OptimizationLevel::None, RelocMode::PIC, CodeModel::Default)
        .ok_or("LLVM cannot create an x86-64 target machine")?;
    // A context of this thread's own: LLVM contexts are not shared between threads.
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(bitcode, "program.bc");
    let module = Module::parse_bitcode_from_buffer(&buffer, &context).map_err(|e| e.to_string())?;
    module.set_triple(&triple);
    machine.write_to_file(&module, FileType::Object, obj).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object compiled here links with clang into a program that runs as compiled C would.
    #[test]
    fn the_object_links_and_runs() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("p.c");
        std::fs::write(&c, "int twice(int x) { return 2 * x; }\n").unwrap();
        let bc = dir.path().join("p.bc");
        let clang = crate::load::input::clang_path();
        let st = std::process::Command::new(&clang).args(["-O0", "-c", "-emit-llvm"]).arg(&c).arg("-o").arg(&bc).status().unwrap();
        assert!(st.success());
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
