//! Reading and patching ELF files without starting a tool (an `llvm-objcopy` or
//! `llvm-readelf` costs 3-10 ms and a process start, on the 2 cores an analysis shares with its
//! engines): renaming sections of a relocatable object in place (what `llvm-objcopy
//! --rename-section=OLD=NEW` does for the fuzzing build), and the program interpreter and
//! `DT_NEEDED` libraries of a dynamically linked file (what `llvm-readelf --needed-libs` shows,
//! for the jail of a dynamically linked program).
//!
//! Renaming:
//! Only the names change. The section header string table is written anew at the end of the
//! file (a name may share its bytes with another's tail, `.data` inside `.rela.data`, so names
//! cannot be patched where they are), and the headers point into it; contents, symbols and
//! relocations refer to sections by index and stay as they are.

/// Renames the sections of the 64-bit little-endian ELF object `obj` named as a first element
/// of `renames` to the second. `Err` says why the file is not such an object.
pub fn rename_sections(obj: &mut Vec<u8>, renames: &[(&str, &str)]) -> Result<(), String> {
    let u16_at = |b: &[u8], at: usize| -> Result<u16, String> { b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]])).ok_or_else(|| "truncated ELF file".to_string()) };
    let u32_at = |b: &[u8], at: usize| -> Result<u32, String> { b.get(at..at + 4).map(|s| u32::from_le_bytes(s.try_into().unwrap())).ok_or_else(|| "truncated ELF file".to_string()) };
    let u64_at = |b: &[u8], at: usize| -> Result<u64, String> { b.get(at..at + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap())).ok_or_else(|| "truncated ELF file".to_string()) };
    if obj.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1][..]) {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let shoff = u64_at(obj, 0x28)? as usize;
    let shentsize = u16_at(obj, 0x3a)? as usize;
    let shnum = u16_at(obj, 0x3c)? as usize;
    let shstrndx = u16_at(obj, 0x3e)? as usize;
    if shentsize != 64 || shnum == 0 || shstrndx >= shnum {
        return Err("unexpected ELF section headers (extended numbering or none)".into());
    }
    let header = |k: usize| shoff + k * shentsize;
    let (str_off, str_size) = (u64_at(obj, header(shstrndx) + 0x18)? as usize, u64_at(obj, header(shstrndx) + 0x20)? as usize);
    let strtab = obj.get(str_off..str_off + str_size).ok_or("truncated section name table")?.to_vec();
    let name_at = |off: usize| -> Result<&[u8], String> {
        let rest = strtab.get(off..).ok_or("section name outside its table")?;
        Ok(&rest[..rest.iter().position(|&c| c == 0).ok_or("unterminated section name")?])
    };
    // The new table: the old one (LLVM keeps the symbols' names in the same table, and their
    // offsets must stay valid), then the new names.
    let mut table = strtab.clone();
    let mut offsets: Vec<u32> = Vec::with_capacity(shnum);
    for k in 0..shnum {
        let at = u32_at(obj, header(k))?;
        let old = name_at(at as usize)?;
        match renames.iter().find(|(from, _)| from.as_bytes() == old) {
            Some((_, to)) => {
                offsets.push(u32::try_from(table.len()).map_err(|_| "section name table too large")?);
                table.extend_from_slice(to.as_bytes());
                table.push(0);
            }
            None => offsets.push(at),
        }
    }
    // The table goes at the end of the file, 8-byte aligned.
    while obj.len() % 8 != 0 {
        obj.push(0);
    }
    let new_off = obj.len() as u64;
    obj.extend_from_slice(&table);
    for (k, off) in offsets.iter().enumerate() {
        obj[header(k)..header(k) + 4].copy_from_slice(&off.to_le_bytes());
    }
    obj[header(shstrndx) + 0x18..header(shstrndx) + 0x20].copy_from_slice(&new_off.to_le_bytes());
    obj[header(shstrndx) + 0x20..header(shstrndx) + 0x28].copy_from_slice(&(table.len() as u64).to_le_bytes());
    Ok(())
}

/// What a dynamically linked ELF file asks of the dynamic loader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicNeeds {
    /// The program interpreter (`PT_INTERP`), for an executable.
    pub interpreter: Option<String>,
    /// The `DT_NEEDED` names, in order.
    pub needed: Vec<String>,
}

/// The interpreter and needed libraries of the 64-bit little-endian ELF file `file` (an
/// executable or a shared object; a static executable needs nothing). `Err` says why the file is
/// not one that can be read so.
#[cfg(test)]
pub fn dynamic_needs(file: &[u8]) -> Result<DynamicNeeds, String> {
    dynamic_needs_by(&mut |at, len| file.get(at..at.saturating_add(len)).map(<[u8]>::to_vec).ok_or_else(|| "truncated ELF file".to_string()))
}

/// [`dynamic_needs`] of the file at `path`, reading only its headers, its dynamic section and
/// its string table (a few kilobytes of a 2 MB C library: reading whole libraries into the
/// analyser's memory while the engines run cost them page faults and TLB flushes).
pub fn dynamic_needs_of(path: &std::path::Path) -> Result<DynamicNeeds, String> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    dynamic_needs_by(&mut |at, len| {
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, at as u64).map_err(|_| "truncated ELF file".to_string())?;
        Ok(buf)
    })
}

/// The longest dynamic section, interpreter path or string table read (far above any real one).
const MAX_DYNAMIC_PART: usize = 1 << 20;

/// [`dynamic_needs`] over `read(offset, length)`.
fn dynamic_needs_by(read: &mut dyn FnMut(usize, usize) -> Result<Vec<u8>, String>) -> Result<DynamicNeeds, String> {
    let u16_in = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_in = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_in = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let c_string = |b: &[u8], at: usize| -> Result<String, String> {
        let rest = b.get(at..).ok_or("a string outside its table")?;
        let end = rest.iter().position(|&c| c == 0).ok_or("an unterminated string")?;
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    };
    let header = read(0, 64)?;
    if header[..6] != [0x7f, b'E', b'L', b'F', 2, 1] {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let (phoff, phentsize, phnum) = (u64_in(&header, 0x20) as usize, u16_in(&header, 0x36) as usize, u16_in(&header, 0x38) as usize);
    if phnum > 0 && phentsize != 56 {
        return Err("unexpected ELF program header size".into());
    }
    const PT_LOAD: u32 = 1;
    const PT_DYNAMIC: u32 = 2;
    const PT_INTERP: u32 = 3;
    let table = read(phoff, phnum * 56)?;
    // (type, file offset, virtual address, size in the file) of each program header.
    let headers: Vec<(u32, usize, u64, usize)> =
        (0..phnum).map(|k| (u32_in(&table, 56 * k), u64_in(&table, 56 * k + 8) as usize, u64_in(&table, 56 * k + 16), u64_in(&table, 56 * k + 32) as usize)).collect();
    let part = |size: usize| if size <= MAX_DYNAMIC_PART { Ok(size) } else { Err("an implausibly large dynamic part".to_string()) };
    let interpreter = match headers.iter().find(|h| h.0 == PT_INTERP) {
        Some(&(_, offset, _, size)) => Some(c_string(&read(offset, part(size)?)?, 0)?),
        None => None,
    };
    let mut needed = vec![];
    if let Some(&(_, offset, _, size)) = headers.iter().find(|h| h.0 == PT_DYNAMIC) {
        const DT_NEEDED: u64 = 1;
        const DT_STRTAB: u64 = 5;
        const DT_STRSZ: u64 = 10;
        let dynamic = read(offset, part(size)? / 16 * 16)?;
        let entries: Vec<(u64, u64)> = (0..dynamic.len() / 16).map(|k| (u64_in(&dynamic, 16 * k), u64_in(&dynamic, 16 * k + 8))).take_while(|&(tag, _)| tag != 0).collect();
        let value = |tag: u64| entries.iter().find(|e| e.0 == tag).map(|e| e.1);
        let (Some(strtab_address), Some(strtab_size)) = (value(DT_STRTAB), value(DT_STRSZ)) else {
            return Err("a dynamic section without a string table".into());
        };
        // The string table's address, as a file offset through the loaded segment holding it.
        let strtab_offset = headers
            .iter()
            .find(|&&(kind, _, address, filesz)| kind == PT_LOAD && address <= strtab_address && strtab_address < address + filesz as u64)
            .map(|&(_, offset, address, _)| offset + (strtab_address - address) as usize)
            .ok_or("the dynamic string table lies outside the loaded segments")?;
        let strtab = read(strtab_offset, part(strtab_size as usize)?)?;
        for &(tag, v) in &entries {
            if tag == DT_NEEDED {
                needed.push(c_string(&strtab, v as usize)?);
            }
        }
    }
    Ok(DynamicNeeds { interpreter, needed })
}

/// The names of the sections of `obj` (for tests).
#[cfg(test)]
pub fn section_names(obj: &[u8]) -> Result<Vec<String>, String> {
    let mut copy = obj.to_vec();
    // A rename of nothing rebuilds the table: the same parsing, one place.
    rename_sections(&mut copy, &[])?;
    let shoff = u64::from_le_bytes(copy[0x28..0x30].try_into().unwrap()) as usize;
    let shnum = u16::from_le_bytes([copy[0x3c], copy[0x3d]]) as usize;
    let shstrndx = u16::from_le_bytes([copy[0x3e], copy[0x3f]]) as usize;
    let h = |k: usize| shoff + k * 64;
    let str_off = u64::from_le_bytes(copy[h(shstrndx) + 0x18..h(shstrndx) + 0x20].try_into().unwrap()) as usize;
    (0..shnum)
        .map(|k| {
            let at = str_off + u32::from_le_bytes(copy[h(k)..h(k) + 4].try_into().unwrap()) as usize;
            let end = copy[at..].iter().position(|&c| c == 0).ok_or("unterminated section name")?;
            Ok(String::from_utf8_lossy(&copy[at..at + end]).into_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object_of(c: &str) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let (src, obj) = (dir.path().join("a.c"), dir.path().join("a.o"));
        std::fs::write(&src, c).unwrap();
        let st = std::process::Command::new(crate::load::input::clang_path()).args(["-O0", "-c", "-fPIC"]).arg(&src).arg("-o").arg(&obj).status().unwrap();
        assert!(st.success());
        std::fs::read(&obj).unwrap()
    }

    fn symbols(obj: &[u8]) -> String {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.o"), obj).unwrap();
        let out = std::process::Command::new(crate::load::input::llvm_tool("llvm-nm")).arg(dir.path().join("a.o")).output().unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The renamed object links, the renamed sections bracket the program's data
    /// (`__start_`/`__stop_` symbols exist only for sections with C-identifier names), and the
    /// data keeps its values.
    #[test]
    fn renamed_data_sections_link_and_are_bracketed() {
        let mut obj = object_of("int g = 42; int z; int *p = &g;\nint get(void) { return g + z + (p == &g); }\n");
        let symbols_before = symbols(&obj);
        let before = section_names(&obj).unwrap();
        assert!(before.iter().any(|n| n == ".data") && before.iter().any(|n| n == ".bss") && before.iter().any(|n| n == ".rela.data"), "{before:?}");
        rename_sections(&mut obj, &[(".data", "apc_g_data"), (".bss", "apc_g_bss"), (".data.rel", "apc_g_dr")]).unwrap();
        let after = section_names(&obj).unwrap();
        assert!(after.iter().any(|n| n == "apc_g_data") && after.iter().any(|n| n == "apc_g_bss"), "{after:?}");
        assert!(!after.iter().any(|n| n == ".data" || n == ".bss"), "{after:?}");
        // Relocation sections keep their names (as with objcopy), symbols theirs.
        assert!(after.iter().any(|n| n == ".rela.data"), "{after:?}");
        assert_eq!(symbols(&obj), symbols_before);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.o"), &obj).unwrap();
        let main = dir.path().join("main.c");
        std::fs::write(
            &main,
            "extern unsigned char __start_apc_g_data[], __stop_apc_g_data[], __start_apc_g_bss[], __stop_apc_g_bss[];\n\
             int get(void);\n\
             int main(void) { return (get() == 43 && __stop_apc_g_data - __start_apc_g_data >= 4 && __stop_apc_g_bss - __start_apc_g_bss >= 4) ? 0 : 1; }\n",
        )
        .unwrap();
        let exe = dir.path().join("p");
        let st = std::process::Command::new(crate::load::input::clang_path()).arg("-static").arg(&main).arg(dir.path().join("a.o")).arg("-o").arg(&exe).status().unwrap();
        assert!(st.success());
        assert!(std::process::Command::new(&exe).status().unwrap().success());
    }

    #[test]
    fn what_is_not_an_elf_object_is_refused() {
        assert!(rename_sections(&mut b"not an object".to_vec(), &[]).is_err());
        let mut obj = object_of("int x;\n");
        obj.truncate(80);
        assert!(rename_sections(&mut obj, &[(".bss", "b")]).is_err());
    }

    /// What `llvm-readelf` shows as the interpreter and the needed libraries.
    fn readelf_needs(file: &std::path::Path) -> DynamicNeeds {
        let out = std::process::Command::new(crate::load::input::llvm_tool("llvm-readelf")).args(["--needed-libs", "--program-headers"]).arg(file).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let interpreter = text.lines().find_map(|l| l.trim().strip_prefix("[Requesting program interpreter: ")?.strip_suffix(']').map(str::to_string));
        let needed = match text.split_once("NeededLibraries [") {
            Some((_, rest)) => rest.lines().map(str::trim).take_while(|l| *l != "]").filter(|l| !l.is_empty()).map(str::to_string).collect(),
            None => vec![],
        };
        DynamicNeeds { interpreter, needed }
    }

    /// A dynamic executable, a static one and the system's libraries read as `llvm-readelf`
    /// reads them.
    #[test]
    fn dynamic_needs_agree_with_readelf() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("m.c");
        std::fs::write(&src, "#include <math.h>\nint main(int c, char **v) { return (int)sqrt((double)c); }\n").unwrap();
        let mut files = vec![];
        for (name, flags) in [("dynamic", &["-lm"][..]), ("static", &["-static", "-lm"][..])] {
            let exe = dir.path().join(name);
            let st = std::process::Command::new(crate::load::input::clang_path()).arg(&src).args(flags).arg("-o").arg(&exe).status().unwrap();
            assert!(st.success());
            files.push(exe);
        }
        files.extend(["/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6"].map(std::path::PathBuf::from).into_iter().filter(|p| p.is_file()));
        for f in &files {
            // llvm-readelf lists the names sorted; the file's order is the loader's.
            let mut ours = dynamic_needs_of(f).unwrap();
            assert_eq!(ours, dynamic_needs(&std::fs::read(f).unwrap()).unwrap());
            ours.needed.sort();
            assert_eq!(ours, readelf_needs(f), "{}", f.display());
        }
        let dynamic = dynamic_needs(&std::fs::read(&files[0]).unwrap()).unwrap();
        assert!(dynamic.interpreter.is_some() && dynamic.needed.iter().any(|n| n.starts_with("libc.so")), "{dynamic:?}");
        assert_eq!(dynamic_needs(&std::fs::read(&files[1]).unwrap()).unwrap(), DynamicNeeds { interpreter: None, needed: vec![] });
        assert!(dynamic_needs(b"not an ELF file").is_err());
        let mut cut = std::fs::read(&files[0]).unwrap();
        cut.truncate(100);
        assert!(dynamic_needs(&cut).is_err());
    }
}
