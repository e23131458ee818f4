//! `--dot`: the analysed function's flowgraph as Graphviz DOT, with what the analysis sees in it:
//! loops as nested clusters, loop entry nodes (double outline), the target blocks (red), the
//! entry (green), the edges on the program's backbones (bold blue), back edges to a loop's entry
//! (dashed), and the blocks from which no target can be reached (grey: they play no part).

use super::flowgraph::Node;
use super::structure::{LoopId, Structure};
use crate::ir::{BlockId, Function};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The DOT text of `f` with `s`'s loops and backbones.
pub fn to_dot(f: &Function, s: &Structure) -> String {
    // One cluster per distinct loop (an entry and its blocks), innermost loops inside outer ones.
    let mut distinct: Vec<(BlockId, BTreeSet<BlockId>, LoopId)> = vec![];
    for l in &s.loops {
        if !distinct.iter().any(|(e, b, _)| *e == l.entry && *b == l.blocks) {
            distinct.push((l.entry, l.blocks.clone(), l.id));
        }
    }
    // A loop's parent: the smallest other loop whose blocks strictly contain its blocks.
    let parent: Vec<Option<usize>> = distinct
        .iter()
        .map(|(_, b, _)| {
            distinct
                .iter()
                .enumerate()
                .filter(|(_, (_, o, _))| o.len() > b.len() && b.is_subset(o))
                .min_by_key(|(_, (_, o, _))| o.len())
                .map(|(j, _)| j)
        })
        .collect();
    // A block's cluster: the smallest loop containing it.
    let home: BTreeMap<BlockId, usize> = f
        .blocks
        .iter()
        .filter_map(|b| distinct.iter().enumerate().filter(|(_, (_, bs, _))| bs.contains(&b.id)).min_by_key(|(_, (_, bs, _))| bs.len()).map(|(k, _)| (b.id, k)))
        .collect();
    let entries: BTreeSet<BlockId> = distinct.iter().map(|(e, _, _)| *e).collect();
    let targets: BTreeSet<BlockId> = f.target_blocks().into_iter().collect();
    let live: BTreeSet<BlockId> = s.graph.nodes().map(Node::block).collect();
    let on_backbone: BTreeSet<(BlockId, BlockId)> =
        s.backbones.iter().flat_map(|b| b.nodes.windows(2).map(|w| (w[0].block(), w[1].block())).collect::<Vec<_>>()).collect();

    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(&f.name));
    let _ = writeln!(out, "  node [shape=box, fontname=\"monospace\"];\n  label={};\n  labelloc=t;", quote(&format!("{} — {} loop(s), {} backbone(s)", f.name, distinct.len(), s.backbones.len())));
    let node_line = |b: BlockId| -> String {
        let mut attrs = vec![format!("label={}", quote(f.label(b)))];
        if targets.contains(&b) {
            attrs.push("style=filled, fillcolor=\"#f4a6a6\", color=red".into());
        } else if b == f.entry() {
            attrs.push("style=filled, fillcolor=\"#b8e0b8\"".into());
        } else if !live.contains(&b) {
            attrs.push("color=grey, fontcolor=grey".into());
        }
        if entries.contains(&b) {
            attrs.push("peripheries=2".into());
        }
        format!("\"b{}\" [{}];", b.0, attrs.join(", "))
    };
    /// The loops' clusters: which loops there are, which contains which, and each block's.
    struct Clusters<'a> {
        distinct: &'a [(BlockId, BTreeSet<BlockId>, LoopId)],
        parent: &'a [Option<usize>],
        home: &'a BTreeMap<BlockId, usize>,
    }
    fn cluster(out: &mut String, k: usize, depth: usize, c: &Clusters, node_line: &dyn Fn(BlockId) -> String, f: &Function) {
        let pad = "  ".repeat(depth + 1);
        let (entry, _, id) = &c.distinct[k];
        let _ = writeln!(out, "{pad}subgraph cluster_loop{k} {{");
        let _ = writeln!(out, "{pad}  label={}; style=rounded; color=\"#6a8caf\";", quote(&format!("loop {} (entry {})", id.0, f.label(*entry))));
        for (b, _) in c.home.iter().filter(|(_, h)| **h == k) {
            let _ = writeln!(out, "{pad}  {}", node_line(*b));
        }
        for child in (0..c.distinct.len()).filter(|&ch| c.parent[ch] == Some(k)) {
            cluster(out, child, depth + 1, c, node_line, f);
        }
        let _ = writeln!(out, "{pad}}}");
    }
    for b in f.blocks.iter().filter(|b| !home.contains_key(&b.id)) {
        let _ = writeln!(out, "  {}", node_line(b.id));
    }
    let clusters = Clusters { distinct: &distinct, parent: &parent, home: &home };
    for k in (0..distinct.len()).filter(|&k| parent[k].is_none()) {
        cluster(&mut out, k, 0, &clusters, &node_line, f);
    }
    for b in &f.blocks {
        for succ in b.term.successors() {
            let mut attrs = vec![];
            if on_backbone.contains(&(b.id, succ)) {
                attrs.push("color=\"#1f5fbf\", penwidth=2.5");
            }
            // Back to the entry of a loop that contains the edge: an iteration ends.
            if entries.contains(&succ) && distinct.iter().any(|(e, bs, _)| *e == succ && bs.contains(&b.id)) {
                attrs.push("style=dashed");
            }
            let _ = writeln!(out, "  \"b{}\" -> \"b{}\"{};", b.id.0, succ.0, if attrs.is_empty() { String::new() } else { format!(" [{}]", attrs.join(", ")) });
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfg::{Flowgraph, Limits};
    use crate::ir::{Block, Terminator, Ty};

    /// A function with these blocks and edges (conditions unknown), `target` the target block.
    fn function(edges: &[(&str, &[&str])], target: &str) -> Function {
        let id = |l: &str| BlockId(edges.iter().position(|(n, _)| *n == l).unwrap() as u32);
        let blocks = edges
            .iter()
            .enumerate()
            .map(|(k, (label, succs))| Block {
                id: BlockId(k as u32),
                label: label.to_string(),
                insts: vec![],
                term: if succs.is_empty() { Terminator::Return(None) } else { Terminator::Unknown { opcode: "br".into(), succs: succs.iter().map(|s| id(s)).collect() } },
                target: (*label == target).then_some(0),
            })
            .collect();
        let mut f = Function { name: "f".into(), params: vec![], ret: Ty::Void, blocks, value_types: vec![], value_names: vec![], in_cycle: vec![] };
        f.compute_cycles();
        f
    }

    /// A loop around a branch, the target after it: the loop is a cluster with its entry
    /// double-outlined, the back edge dashed, the exit path to the target on a backbone.
    #[test]
    fn a_loop_is_a_cluster_and_the_backbone_is_drawn() {
        let f = function(&[("entry", &["head"]), ("head", &["body", "exit"]), ("body", &["head"]), ("exit", &["target"]), ("target", &[])], "target");
        let s = Structure::compute(Flowgraph::of_function(&f), Limits { max_backbones: 100, deadline: None });
        let dot = to_dot(&f, &s);
        assert!(dot.starts_with("digraph"), "{dot}");
        assert!(dot.contains("subgraph cluster_loop0"), "{dot}");
        assert!(dot.contains("label=\"head\", peripheries=2"), "{dot}");
        assert!(dot.contains("fillcolor=\"#f4a6a6\""), "the target is red: {dot}");
        let edge = |from: &str, to: &str| {
            let id = |l: &str| f.blocks.iter().find(|b| f.label(b.id) == l).unwrap().id.0;
            dot.lines().find(|x| x.trim_start().starts_with(&format!("\"b{}\" -> \"b{}\"", id(from), id(to)))).unwrap_or_else(|| panic!("no edge {from} -> {to}: {dot}")).to_string()
        };
        assert!(edge("body", "head").contains("style=dashed"), "{dot}");
        assert!(edge("exit", "target").contains("penwidth"), "{dot}");
        assert_eq!(dot.matches('{').count(), dot.matches('}').count(), "{dot}");
    }
}
