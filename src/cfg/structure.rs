//! Backbones, entry nodes and loops (section 2.1 of the APC paper), computed recursively through
//! induced programs so that nested loops come out per entry node.

use super::flowgraph::{Flowgraph, Node};
use crate::ir::BlockId;
use std::collections::{BTreeSet, HashMap};

/// Identifies a loop in a [`Structure`] (index into [`Structure::loops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoopId(pub u32);

/// An acyclic complete path from the start to a target, with the entry nodes on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backbone {
    pub nodes: Vec<Node>,
    /// `(position in nodes, loop entered there)`, in path order.
    pub entries: Vec<(usize, LoopId)>,
}

impl Backbone {
    pub fn loop_at(&self, pos: usize) -> Option<LoopId> {
        self.entries.iter().find(|(p, _)| *p == pos).map(|(_, l)| *l)
    }
}

/// A loop C entered at entry node v, with the backbones of its induced program P(C, v).
#[derive(Clone, Debug)]
pub struct Loop {
    pub id: LoopId,
    pub entry: BlockId,
    /// The blocks of C (v included).
    pub blocks: BTreeSet<BlockId>,
    /// Nodes outside C reached by an edge from C, in the graph where the loop was found.
    pub exits: BTreeSet<Node>,
    /// P(C, v), the program induced by the loop.
    pub induced: Flowgraph,
    /// Backbones of P(C, v): the acyclic iterations, each ending in `Back(entry)`.
    pub backbones: Vec<Backbone>,
    /// Loops entered on the backbones of P(C, v).
    pub nested: Vec<LoopId>,
    /// Whether the backbone enumeration of P(C, v) hit the bound.
    pub truncated: bool,
}

/// Bounds on the structure computation.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Maximum number of backbones enumerated per (induced) program.
    pub max_backbones: usize,
    /// When enumeration must stop (`--timeout`): hitting it truncates like the bound does. The
    /// search for paths to a target can walk exponentially many paths that reach none.
    pub deadline: Option<std::time::Instant>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_backbones: 4096, deadline: None }
    }
}

/// The loop structure of a function relative to its target.
#[derive(Clone, Debug)]
pub struct Structure {
    pub graph: Flowgraph,
    pub backbones: Vec<Backbone>,
    pub loops: Vec<Loop>,
    /// Whether any backbone enumeration (of the function or of a loop) hit the bound. The
    /// disjunction over backbones is then incomplete and must not be used to prove unreachability.
    pub truncated: bool,
}

impl Structure {
    pub fn get(&self, id: LoopId) -> &Loop {
        &self.loops[id.0 as usize]
    }

    /// Computes backbones and loops of `graph`.
    pub fn compute(graph: Flowgraph, limits: Limits) -> Structure {
        let mut b = Builder { limits, loops: vec![], index: HashMap::new(), truncated: false };
        let (backbones, truncated) = b.backbones_of(&graph);
        Structure { graph, backbones, loops: b.loops, truncated: b.truncated || truncated }
    }
}

struct Builder {
    limits: Limits,
    loops: Vec<Loop>,
    index: HashMap<(BlockId, BTreeSet<BlockId>), LoopId>,
    truncated: bool,
}

impl Builder {
    /// All acyclic paths from start to a target of `g`, at most `max_backbones`, with their
    /// entry nodes; registers (recursively) every loop entered.
    fn backbones_of(&mut self, g: &Flowgraph) -> (Vec<Backbone>, bool) {
        let (paths, truncated) = acyclic_paths_until(g, self.limits.max_backbones, self.limits.deadline);
        // Every cycle through v lies in v's strongly connected component of g, so the loop at v
        // depends only on the prefix nodes inside that component: nodes in no cycle are never
        // entry nodes, and the others are computed once per (v, prefix ∩ component).
        let mut component: HashMap<Node, std::rc::Rc<BTreeSet<Node>>> = HashMap::new();
        for scc in petgraph::algo::tarjan_scc(&g.graph) {
            let cyclic = scc.len() > 1 || g.graph.contains_edge(scc[0], scc[0]);
            if cyclic {
                let set = std::rc::Rc::new(scc.iter().copied().collect::<BTreeSet<Node>>());
                for n in scc {
                    component.insert(n, set.clone());
                }
            }
        }
        let mut memo: HashMap<(Node, Vec<Node>), Option<LoopId>> = HashMap::new();
        let mut out = Vec::with_capacity(paths.len());
        let mut truncated = truncated;
        for nodes in paths {
            // Each path costs a set of its nodes (a straight line of 38,000 blocks: seconds for
            // the bound's paths), so the deadline is looked at between paths too.
            if self.limits.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                truncated = true;
                break;
            }
            let mut entries = vec![];
            let mut prefix = BTreeSet::new();
            for (pos, &v) in nodes.iter().enumerate() {
                if let Some(comp) = component.get(&v) {
                    let key: Vec<Node> = prefix.intersection(comp.as_ref()).copied().collect();
                    let found = match memo.get(&(v, key.clone())) {
                        Some(&l) => l,
                        None => {
                            let l = g.loop_at(v, &prefix).map(|c| self.register(g, v, c));
                            memo.insert((v, key), l);
                            l
                        }
                    };
                    if let Some(l) = found {
                        entries.push((pos, l));
                    }
                }
                prefix.insert(v);
            }
            out.push(Backbone { nodes, entries });
        }
        (out, truncated)
    }

    fn register(&mut self, g: &Flowgraph, v: Node, c: BTreeSet<Node>) -> LoopId {
        let blocks: BTreeSet<BlockId> = c.iter().filter_map(|n| n.as_block()).collect();
        let key = (v.block(), blocks.clone());
        if let Some(&id) = self.index.get(&key) {
            return id;
        }
        let id = LoopId(self.loops.len() as u32);
        self.index.insert(key, id);
        let induced = g.induced(&c, v);
        // Reserve the slot first so that nested loops get later ids than their parent.
        self.loops.push(Loop {
            id,
            entry: v.block(),
            blocks,
            exits: g.exits(&c),
            induced: induced.clone(),
            backbones: vec![],
            nested: vec![],
            truncated: false,
        });
        let (backbones, truncated) = self.backbones_of(&induced);
        self.truncated |= truncated;
        let mut nested: Vec<LoopId> = backbones.iter().flat_map(|b| b.entries.iter().map(|e| e.1)).collect();
        nested.sort();
        nested.dedup();
        let l = &mut self.loops[id.0 as usize];
        l.backbones = backbones;
        l.nested = nested;
        l.truncated = truncated;
        id
    }
}

/// Enumerates acyclic paths from start to the targets, depth first, at most `max` of them.
/// Returns the paths and whether the bound cut the enumeration short.
pub fn acyclic_paths(g: &Flowgraph, max: usize) -> (Vec<Vec<Node>>, bool) {
    acyclic_paths_until(g, max, None)
}

/// [`acyclic_paths`], also cut short (reported as truncated) at `deadline`.
pub fn acyclic_paths_until(g: &Flowgraph, max: usize, deadline: Option<std::time::Instant>) -> (Vec<Vec<Node>>, bool) {
    let mut out = vec![];
    let mut steps = 0u32;
    if !g.target_reachable() {
        return (out, false);
    }
    let mut path = vec![g.start];
    let mut on_path: BTreeSet<Node> = [g.start].into();
    // Stack of successor lists still to try, one per node on the path.
    let succ = |n: Node| -> Vec<Node> {
        let mut s: Vec<Node> = g.successors(n).collect();
        s.sort();
        s.reverse(); // pop() then yields the smallest first: deterministic order
        s
    };
    let mut stack = vec![succ(g.start)];
    if g.targets.contains(&g.start) {
        return (vec![path], false);
    }
    while let Some(top) = stack.last_mut() {
        steps = steps.wrapping_add(1);
        if steps % 4096 == 0 && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return (out, true);
        }
        match top.pop() {
            Some(n) if on_path.contains(&n) => {}
            Some(n) if g.targets.contains(&n) => {
                if out.len() == max {
                    return (out, true);
                }
                let mut p = path.clone();
                p.push(n);
                out.push(p);
            }
            Some(n) => {
                path.push(n);
                on_path.insert(n);
                stack.push(succ(n));
            }
            None => {
                stack.pop();
                if let Some(n) = path.pop() {
                    on_path.remove(&n);
                }
            }
        }
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(i: u32) -> Node {
        Node::Block(BlockId(i))
    }

    fn figure2() -> Flowgraph {
        // ls=0, a=1, b=2, c=3, d=4, lt=5
        Flowgraph::from_edges(
            b(0),
            [b(5)],
            [(b(0), b(1)), (b(0), b(2)), (b(1), b(2)), (b(2), b(3)), (b(3), b(2)), (b(2), b(4)), (b(4), b(1)), (b(4), b(5))],
        )
    }

    #[test]
    fn figure2_entry_nodes_differ_per_backbone() {
        let s = Structure::compute(figure2(), Limits::default());
        assert_eq!(s.backbones.len(), 2);
        let by_nodes = |nodes: &[Node]| s.backbones.iter().find(|bb| bb.nodes == nodes).unwrap().clone();
        // π1 = ls b d lt: one entry (b) with loop {a,b,c,d}
        let p1 = by_nodes(&[b(0), b(2), b(4), b(5)]);
        assert_eq!(p1.entries.len(), 1);
        let l = s.get(p1.entries[0].1);
        assert_eq!((l.entry, l.blocks.len()), (BlockId(2), 4));
        // π2 = ls a b d lt: entries a (loop {a,b,c,d}) and b (loop {b,c})
        let p2 = by_nodes(&[b(0), b(1), b(2), b(4), b(5)]);
        assert_eq!(p2.entries.len(), 2);
        let (la, lb) = (s.get(p2.entries[0].1), s.get(p2.entries[1].1));
        assert_eq!(la.entry, BlockId(1));
        assert_eq!(la.blocks, [1, 2, 3, 4].map(BlockId).into());
        assert_eq!(lb.entry, BlockId(2));
        assert_eq!(lb.blocks, [2, 3].map(BlockId).into());
        assert!(!s.truncated);
    }

    #[test]
    fn enumeration_bound_is_reported() {
        // A chain of 12 diamonds has 4096 paths; bound them at 100.
        let mut edges = vec![];
        for k in 0..12u32 {
            let (s, l, r, j) = (3 * k, 3 * k + 1, 3 * k + 2, 3 * k + 3);
            edges.extend([(b(s), b(l)), (b(s), b(r)), (b(l), b(j)), (b(r), b(j))]);
        }
        let g = Flowgraph::from_edges(b(0), [b(36)], edges);
        let (paths, truncated) = acyclic_paths(&g, 100);
        assert_eq!(paths.len(), 100);
        assert!(truncated);
        let (all, t2) = acyclic_paths(&g, 10_000);
        assert_eq!((all.len(), t2), (4096, false));
    }

    #[test]
    fn self_loop_is_a_loop() {
        let g = Flowgraph::from_edges(b(0), [b(2)], [(b(0), b(1)), (b(1), b(1)), (b(1), b(2))]);
        let s = Structure::compute(g, Limits::default());
        assert_eq!(s.loops.len(), 1);
        assert_eq!(s.loops[0].backbones.len(), 1);
        assert_eq!(s.loops[0].backbones[0].nodes, vec![b(1), Node::Back(BlockId(1))]);
    }
}
