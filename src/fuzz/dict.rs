//! libFuzzer dictionaries from the APC's comparison constants: an input byte string the
//! program compares with is spliced into inputs whole instead of being found byte by byte.

use std::fmt::Write;

/// Longest entry libFuzzer accepts (its `kMaxDictElementSize`); longer ones are left out,
/// since one bad line makes libFuzzer refuse the whole file.
pub const MAX_ENTRY: usize = 64;
/// Most entries written.
pub const MAX_ENTRIES: usize = 1024;

/// A constant a comparison of the APC tests an input against, with the width of the compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmpConstant {
    pub value: u64,
    pub width: u32,
}

/// The byte strings of comparison constants as the input format holds them: little-endian, one
/// byte per 8 bits of the compare's width (an `i1` or narrower compare is one byte). Zero and
/// duplicates are left out (libFuzzer finds zero bytes on its own).
pub fn constant_entries(constants: &[CmpConstant]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vec![];
    // A set beside the list: a large function compares with tens of thousands of constants.
    let mut seen = std::collections::HashSet::new();
    for c in constants {
        let n = (c.width.div_ceil(8) as usize).clamp(1, 8);
        let bytes = c.value.to_le_bytes()[..n].to_vec();
        if c.value != 0 && seen.insert(bytes.clone()) {
            out.push(bytes);
        }
    }
    out
}

/// Renders entries as a libFuzzer dictionary file (`-dict=`): one `kN="\xHH..."` line per
/// entry, every byte escaped; empty, too long and repeated entries are left out.
pub fn render(entries: &[Vec<u8>]) -> String {
    let mut out = String::new();
    let mut seen: Vec<&[u8]> = vec![];
    for e in entries {
        if e.is_empty() || e.len() > MAX_ENTRY || seen.contains(&e.as_slice()) || seen.len() >= MAX_ENTRIES {
            continue;
        }
        seen.push(e);
        let _ = write!(out, "k{}=\"", seen.len());
        for b in e {
            let _ = write!(out, "\\x{b:02X}");
        }
        out.push_str("\"\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_become_little_endian_entries_of_their_width() {
        let e = constant_entries(&[
            CmpConstant { value: 0x1234_5678, width: 32 },
            CmpConstant { value: b'H' as u64, width: 8 },
            CmpConstant { value: 0, width: 32 },
            CmpConstant { value: 0x1234_5678, width: 32 },
            CmpConstant { value: 1, width: 1 },
        ]);
        assert_eq!(e, vec![vec![0x78, 0x56, 0x34, 0x12], vec![b'H'], vec![1]]);
    }

    #[test]
    fn rendering_escapes_every_byte_and_skips_what_libfuzzer_rejects() {
        let text = render(&[b"He\"l\\o".to_vec(), vec![], vec![0; 65], b"He\"l\\o".to_vec(), vec![0xff]]);
        assert_eq!(text, "k1=\"\\x48\\x65\\x22\\x6C\\x5C\\x6F\"\nk2=\"\\xFF\"\n");
    }
}
