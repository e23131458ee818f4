//! The C types of a function's parameters, from its debug information (`clang -g`), so that
//! witnesses print `unsigned long` values unsigned and `long long` values signed: LLVM's `i64`
//! carries no signedness.
//!
//! The LLVM-C API has no getters for a subprogram's types, so this reads the module's textual
//! metadata (`!N = !DISubprogram(...)`, `!DISubroutineType`, `!DIBasicType`, `!DIDerivedType`),
//! whose format LLVM keeps stable. Only the lines starting with `!` are looked at.

use crate::ir::CType;
use std::collections::HashMap;

/// Value of `key: ` in a metadata line's fields, up to the next `,` or `)` (quotes kept out).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}: ");
    let mut start = 0;
    // A field name, not the tail of another (`type:` vs `baseType:`): preceded by `(` or ` `.
    loop {
        let at = start + line[start..].find(&pat)?;
        if at > 0 && matches!(line.as_bytes()[at - 1], b'(' | b' ') {
            let rest = &line[at + pat.len()..];
            if let Some(q) = rest.strip_prefix('"') {
                return q.find('"').map(|e| &q[..e]);
            }
            let end = rest.find([',', ')']).unwrap_or(rest.len());
            return Some(rest[..end].trim());
        }
        start = at + pat.len();
    }
}

/// The metadata nodes of a module's text: `!N` → the rest of its line.
fn nodes(text: &str) -> HashMap<&str, &str> {
    text.lines()
        .filter(|l| l.starts_with('!'))
        .filter_map(|l| {
            let (id, rest) = l.split_once(" = ")?;
            Some((id, rest.trim_start_matches("distinct ")))
        })
        .collect()
}

/// The C type of metadata node `id`, for integers only: typedef names are kept (`size_t`), the
/// signedness comes from the basic type below typedefs and qualifiers.
fn int_type(nodes: &HashMap<&str, &str>, id: &str) -> Option<CType> {
    let mut shown: Option<String> = None;
    let mut qualifiers: Vec<&str> = vec![];
    let mut at = id;
    for _ in 0..16 {
        let node = nodes.get(at)?;
        if node.starts_with("!DIBasicType(") {
            let name = field(node, "name")?;
            let signed = match field(node, "encoding")? {
                "DW_ATE_signed" | "DW_ATE_signed_char" => true,
                "DW_ATE_unsigned" | "DW_ATE_unsigned_char" | "DW_ATE_boolean" => false,
                _ => return None,
            };
            let base = shown.unwrap_or_else(|| name.to_string());
            let name = qualifiers.iter().rev().fold(base, |acc, q| format!("{q} {acc}"));
            return Some(CType { name, signed });
        }
        if node.starts_with("!DIDerivedType(") {
            match field(node, "tag")? {
                "DW_TAG_typedef" => {
                    shown.get_or_insert_with(|| field(node, "name").unwrap_or("").to_string());
                }
                "DW_TAG_const_type" => qualifiers.push("const"),
                "DW_TAG_volatile_type" => qualifiers.push("volatile"),
                _ => return None, // pointers, members, ...
            }
            at = field(node, "baseType")?;
            continue;
        }
        if node.starts_with("!DICompositeType(") && field(node, "tag") == Some("DW_TAG_enumeration_type") {
            let name = field(node, "name").map(|n| format!("enum {n}")).unwrap_or_else(|| "enum".into());
            // An enum's values are ints unless its base type says otherwise.
            let signed = field(node, "baseType").and_then(|b| int_type(nodes, b)).is_none_or(|t| t.signed);
            return Some(CType { name: shown.unwrap_or(name), signed });
        }
        return None;
    }
    None
}

/// The size in bytes of the type a pointer type points to (through typedefs and qualifiers);
/// `None` for `void *` or when the metadata does not say.
fn pointee_size(nodes: &HashMap<&str, &str>, id: &str) -> Option<u64> {
    let mut at = id;
    // Down to the pointer type, then its base type's size.
    let mut below_pointer = false;
    for _ in 0..16 {
        let node = nodes.get(at)?;
        if below_pointer {
            if let Some(bits) = field(node, "size").and_then(|s| s.parse::<u64>().ok()) {
                return (bits >= 8).then_some(bits / 8);
            }
        }
        if !node.starts_with("!DIDerivedType(") {
            return None;
        }
        match field(node, "tag")? {
            "DW_TAG_pointer_type" if !below_pointer => below_pointer = true,
            "DW_TAG_typedef" | "DW_TAG_const_type" | "DW_TAG_volatile_type" | "DW_TAG_restrict_type" => {}
            _ => return None,
        }
        at = field(node, "baseType")?;
    }
    None
}

/// The C integer type a pointer type points to (through typedefs and qualifiers on both sides).
fn pointee_int_type(nodes: &HashMap<&str, &str>, id: &str) -> Option<CType> {
    let mut at = id;
    for _ in 0..16 {
        let node = nodes.get(at)?;
        if !node.starts_with("!DIDerivedType(") {
            return None;
        }
        match field(node, "tag")? {
            "DW_TAG_pointer_type" => return int_type(nodes, field(node, "baseType")?),
            "DW_TAG_typedef" | "DW_TAG_const_type" | "DW_TAG_volatile_type" | "DW_TAG_restrict_type" => {}
            _ => return None,
        }
        at = field(node, "baseType")?;
    }
    None
}

/// Per parameter of `function` (defined in this module), in order: its C integer type (see
/// `int_type`; for a pointer, the integer type it points to, which says how its buffer is
/// shown) and, for a pointer, the size of what it points to (see `pointee_size`).
/// `None`s when the module has no debug information for it.
pub fn param_types(module_text: &str, function: &str, params: usize) -> Vec<(Option<CType>, Option<u64>)> {
    let none = || vec![(None, None); params];
    let nodes = nodes(module_text);
    let Some(sp) = nodes.values().find(|n| {
        n.starts_with("!DISubprogram(") && field(n, "name") == Some(function) && n.contains("DISPFlagDefinition")
    }) else {
        return none();
    };
    let Some(types) = field(sp, "type").and_then(|t| nodes.get(t)).and_then(|t| field(t, "types")).and_then(|l| nodes.get(l)) else {
        return none();
    };
    // `!{ret, p1, p2, ...}`
    let list: Vec<&str> = types.trim_start_matches("!{").trim_end_matches('}').split(',').map(str::trim).collect();
    let mut out: Vec<(Option<CType>, Option<u64>)> = list.iter().skip(1).map(|id| (int_type(&nodes, id).or_else(|| pointee_int_type(&nodes, id)), pointee_size(&nodes, id))).collect();
    out.resize(params, (None, None));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"define i32 @g(i64 %a, i64 %b, ptr %s, i64 %len, i32 %e) !dbg !10 {
!10 = distinct !DISubprogram(name: "g", scope: !1, file: !1, line: 1, type: !11, scopeLine: 1, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition, unit: !0, retainedNodes: !19)
!11 = !DISubroutineType(types: !12)
!12 = !{!13, !14, !15, !16, !30, !40}
!13 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
!14 = !DIBasicType(name: "long long", size: 64, encoding: DW_ATE_signed)
!15 = !DIBasicType(name: "unsigned long", size: 64, encoding: DW_ATE_unsigned)
!16 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !17, size: 64)
!17 = !DIDerivedType(tag: DW_TAG_const_type, baseType: !18)
!18 = !DIBasicType(name: "char", size: 8, encoding: DW_ATE_signed_char)
!30 = !DIDerivedType(tag: DW_TAG_const_type, baseType: !31)
!31 = !DIDerivedType(tag: DW_TAG_typedef, name: "size_t", file: !1, line: 3, baseType: !15)
!40 = distinct !DICompositeType(tag: DW_TAG_enumeration_type, name: "mode", file: !1, line: 2, baseType: !41, size: 32, elements: !42)
!41 = !DIBasicType(name: "unsigned int", size: 32, encoding: DW_ATE_unsigned)
"#;

    #[test]
    fn parameter_types_come_through_typedefs_and_qualifiers() {
        let t = param_types(TEXT, "g", 5);
        assert_eq!(t.iter().map(|(_, p)| *p).collect::<Vec<_>>(), vec![None, None, Some(1), None, None], "a const char * points to bytes");
        let shown: Vec<Option<(String, bool)>> = t.into_iter().map(|(c, _)| c.map(|c| (c.name, c.signed))).collect();
        assert_eq!(
            shown,
            vec![
                Some(("long long".into(), true)),
                Some(("unsigned long".into(), false)),
                Some(("const char".into(), true)),
                Some(("const size_t".into(), false)),
                Some(("enum mode".into(), false)),
            ]
        );
    }

    #[test]
    fn no_debug_information_gives_nothing() {
        assert_eq!(param_types("define i32 @g(i32 %a) {\n}\n", "g", 1), vec![(None, None)]);
        assert_eq!(param_types(TEXT, "other", 2), vec![(None, None), (None, None)]);
    }
}
