//! Flowgraphs in the sense of the paper (section 2.1): a start node, target nodes without
//! successors, and only nodes from which a target is reachable.

use crate::ir::{BlockId, Function};
use petgraph::graphmap::DiGraphMap;
use petgraph::visit::{Bfs, Walker};
use petgraph::Direction;
use std::collections::BTreeSet;
use std::fmt;

/// A node of a flowgraph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Node {
    /// A basic block of the function.
    Block(BlockId),
    /// The fresh target `v'` of an induced program P(C, v): "back at the entry node v".
    /// An edge `u → Back(v)` stands for the original edge `u → v`.
    Back(BlockId),
}

impl Node {
    /// The basic block this node stands for (for `Back(v)`, the entry block v itself).
    pub fn block(self) -> BlockId {
        match self {
            Node::Block(b) | Node::Back(b) => b,
        }
    }
    pub fn as_block(self) -> Option<BlockId> {
        match self {
            Node::Block(b) => Some(b),
            Node::Back(_) => None,
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Block(b) => write!(f, "b{}", b.0),
            Node::Back(b) => write!(f, "b{}'", b.0),
        }
    }
}

/// A program in the paper's sense: start node, target nodes (sinks), edges.
#[derive(Clone, Debug)]
pub struct Flowgraph {
    pub start: Node,
    pub targets: BTreeSet<Node>,
    pub graph: DiGraphMap<Node, ()>,
}

impl Flowgraph {
    /// Builds a flowgraph from explicit edges (the start and targets are always nodes), making
    /// targets sinks and pruning everything that is not on a path from start to a target.
    pub fn from_edges(start: Node, targets: impl IntoIterator<Item = Node>, edges: impl IntoIterator<Item = (Node, Node)>) -> Self {
        let targets: BTreeSet<Node> = targets.into_iter().collect();
        let mut graph = DiGraphMap::new();
        graph.add_node(start);
        for &t in &targets {
            graph.add_node(t);
        }
        for (u, v) in edges {
            // A target has no successor: reaching it ends the path.
            if !targets.contains(&u) {
                graph.add_edge(u, v, ());
            }
        }
        let mut fg = Flowgraph { start, targets, graph };
        fg.prune();
        fg
    }

    /// The flowgraph of a function towards its marked target blocks.
    pub fn of_function(f: &Function) -> Self {
        let edges = f.blocks.iter().flat_map(|b| {
            b.term.successors().into_iter().map(move |s| (Node::Block(b.id), Node::Block(s)))
        });
        let targets = f.target_blocks().into_iter().map(Node::Block);
        Flowgraph::from_edges(Node::Block(f.entry()), targets, edges)
    }

    /// Keeps only nodes reachable from the start from which some target is reachable.
    fn prune(&mut self) {
        let fwd: BTreeSet<Node> = Bfs::new(&self.graph, self.start).iter(&self.graph).collect();
        // One walk back from all targets at once: a function with hundreds of pseudo-targets
        // (stores that may leave their object) took one walk of the whole graph per target.
        let mut bwd: BTreeSet<Node> = self.targets.iter().copied().collect();
        let mut stack: Vec<Node> = bwd.iter().copied().collect();
        while let Some(n) = stack.pop() {
            for m in self.graph.neighbors_directed(n, Direction::Incoming) {
                if bwd.insert(m) {
                    stack.push(m);
                }
            }
        }
        let dead: Vec<Node> = self.graph.nodes().filter(|n| !(fwd.contains(n) && bwd.contains(n))).collect();
        for n in dead {
            if n != self.start {
                self.graph.remove_node(n);
            }
        }
        self.targets.retain(|t| self.graph.contains_node(*t));
        if self.targets.is_empty() {
            // No target is reachable: only the start node remains, without edges.
            let others: Vec<Node> = self.graph.nodes().filter(|&n| n != self.start).collect();
            for n in others {
                self.graph.remove_node(n);
            }
        }
    }

    /// Whether some target is reachable from the start at all.
    pub fn target_reachable(&self) -> bool {
        !self.targets.is_empty()
    }

    pub fn successors(&self, n: Node) -> impl Iterator<Item = Node> + '_ {
        self.graph.neighbors_directed(n, Direction::Outgoing)
    }

    pub fn nodes(&self) -> impl Iterator<Item = Node> + '_ {
        self.graph.nodes()
    }

    pub fn contains(&self, n: Node) -> bool {
        self.graph.contains_node(n)
    }

    /// The loop entered at `v` when the nodes of `prefix` are already on the path: `v` and every
    /// node on a cycle `v β v` whose nodes avoid `prefix`, i.e. the strongly connected component of
    /// `v` in the graph without `prefix`. `None` when there is no such cycle (v is not an entry node).
    pub fn loop_at(&self, v: Node, prefix: &BTreeSet<Node>) -> Option<BTreeSet<Node>> {
        let reach = |dir: Direction| {
            let mut seen = BTreeSet::new();
            let mut stack = vec![v];
            let mut back_to_v = false;
            while let Some(n) = stack.pop() {
                for m in self.graph.neighbors_directed(n, dir) {
                    if m == v {
                        back_to_v = true;
                    } else if !prefix.contains(&m) && seen.insert(m) {
                        stack.push(m);
                    }
                }
            }
            (seen, back_to_v)
        };
        let (fwd, cyclic) = reach(Direction::Outgoing);
        if !cyclic {
            return None;
        }
        let (bwd, _) = reach(Direction::Incoming);
        let mut c: BTreeSet<Node> = fwd.intersection(&bwd).copied().collect();
        c.insert(v);
        Some(c)
    }

    /// The program P(C, v) induced by loop `c` at entry `v`: the subgraph on `c`, started at `v`,
    /// with every edge into `v` redirected to the fresh target `Back(v)`.
    pub fn induced(&self, c: &BTreeSet<Node>, v: Node) -> Flowgraph {
        let entry = v.block();
        let edges: Vec<(Node, Node)> = c
            .iter()
            .flat_map(|&u| self.successors(u).filter(|w| c.contains(w)).map(move |w| (u, w)))
            .map(|(u, w)| if w == v { (u, Node::Back(entry)) } else { (u, w) })
            .collect();
        Flowgraph::from_edges(v, [Node::Back(entry)], edges)
    }

    /// Nodes outside `c` that an edge leaves `c` for.
    pub fn exits(&self, c: &BTreeSet<Node>) -> BTreeSet<Node> {
        c.iter().flat_map(|&u| self.successors(u)).filter(|w| !c.contains(w)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn b(i: u32) -> Node {
        Node::Block(BlockId(i))
    }

    #[test]
    fn pruning_drops_nodes_that_cannot_reach_the_target() {
        // 0 → 1 → 3(target), 0 → 2 (dead end), 3 → 1 (target's successor dropped)
        let g = Flowgraph::from_edges(b(0), [b(3)], [(b(0), b(1)), (b(1), b(3)), (b(0), b(2)), (b(3), b(1))]);
        assert!(g.contains(b(1)) && !g.contains(b(2)));
        assert_eq!(g.successors(b(3)).count(), 0);
    }

    #[test]
    fn unreachable_target_leaves_only_the_start() {
        let g = Flowgraph::from_edges(b(0), [b(2)], [(b(0), b(1))]);
        assert!(!g.target_reachable());
        assert_eq!(g.nodes().count(), 1);
    }

    #[test]
    fn loop_is_the_scc_without_the_prefix() {
        // Figure 2 of the paper: ls=0, a=1, b=2, c=3, d=4, lt=5
        // ls→a, ls→b, a→b, b→c, c→b, b→d, d→a, d→lt
        let g = Flowgraph::from_edges(
            b(0),
            [b(5)],
            [(b(0), b(1)), (b(0), b(2)), (b(1), b(2)), (b(2), b(3)), (b(3), b(2)), (b(2), b(4)), (b(4), b(1)), (b(4), b(5))],
        );
        let pre: BTreeSet<Node> = [b(0)].into();
        assert_eq!(g.loop_at(b(2), &pre).unwrap(), [b(1), b(2), b(3), b(4)].into());
        let pre2: BTreeSet<Node> = [b(0), b(1)].into();
        assert_eq!(g.loop_at(b(2), &pre2).unwrap(), [b(2), b(3)].into());
        let pre3: BTreeSet<Node> = [b(0), b(1), b(2)].into();
        assert_eq!(g.loop_at(b(4), &pre3), None);
    }

    #[test]
    fn induced_program_redirects_edges_into_the_entry() {
        let g = Flowgraph::from_edges(b(0), [b(3)], [(b(0), b(1)), (b(1), b(2)), (b(2), b(1)), (b(1), b(3))]);
        let c = g.loop_at(b(1), &[b(0)].into()).unwrap();
        let p = g.induced(&c, b(1));
        assert_eq!(p.start, b(1));
        assert!(p.targets.contains(&Node::Back(BlockId(1))));
        assert!(p.graph.contains_edge(b(2), Node::Back(BlockId(1))));
        assert!(!p.graph.contains_edge(b(2), b(1)));
        assert_eq!(g.exits(&c), [b(3)].into());
    }
}
