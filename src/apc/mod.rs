//! The abstract path condition: apc_π for every backbone π (Algorithm 1), and their disjunction.

use crate::cfg::{Backbone, Node, Structure};
use crate::expr::{Expr, ExprId, ExprPool, Printer};
use crate::ir::Program;
use crate::summary;
use crate::symex::{Executor, Inputs};
use tracing::debug;

/// The conjunction of the tests along one backbone.
#[derive(Clone, Debug)]
pub struct BackboneApc {
    /// Index into `Structure::backbones`.
    pub backbone: usize,
    pub tests: Vec<ExprId>,
    pub formula: ExprId,
    /// Loops on this backbone summarised only coarsely (all they touch forgotten).
    pub havocked_loops: usize,
}

/// The APC of a program: a necessary condition on the inputs to reach the target.
#[derive(Clone, Debug)]
pub struct Apc {
    pub formula: ExprId,
    pub backbones: Vec<BackboneApc>,
    pub inputs: Inputs,
    /// Whether `formula` covers every backbone: only then does its unsatisfiability prove the
    /// target unreachable.
    pub complete: bool,
}

/// Adds a test to a conjunction: ⋆ tests are dropped (sound), conjunctions are split so that a
/// ⋆ in one conjunct does not cost the others.
pub fn push_test(pool: &ExprPool, tests: &mut Vec<ExprId>, t: ExprId) {
    match pool.get(t) {
        Expr::Star(_) => {}
        Expr::Bool(true) => {}
        Expr::And(xs) => {
            for &x in xs.clone().iter() {
                push_test(pool, tests, x);
            }
        }
        _ => {
            if !tests.contains(&t) {
                tests.push(t)
            }
        }
    }
}

/// Symbolically executes backbone `bb` and returns its tests (Algorithm 1).
pub fn execute_backbone(program: &Program, structure: &Structure, pool: &mut ExprPool, inputs: &mut Inputs, index: usize, bb: &Backbone) -> BackboneApc {
    let mut ex = Executor::new(program, pool, inputs);
    let mut st = ex.initial_state();
    let mut tests = vec![];
    let mut havocked = 0;
    let nodes = &bb.nodes;
    for (pos, &node) in nodes.iter().enumerate() {
        let b = node.block();
        let pred = pos.checked_sub(1).map(|p| nodes[p].block());
        ex.exec_phis(&mut st, b, pred);
        if let Some(loop_id) = bb.loop_at(pos) {
            summary::havoc_loop(program, ex.pool, ex.inputs, &mut st, structure.get(loop_id));
            havocked += 1;
        }
        // The target is reached on entering its block: its body is not executed.
        if pos + 1 == nodes.len() || matches!(node, Node::Back(_)) {
            break;
        }
        for t in ex.exec_body(&mut st, b) {
            push_test(ex.pool, &mut tests, t);
        }
        let next = nodes[pos + 1].block();
        for t in ex.edge_tests(&mut st, b, next) {
            push_test(ex.pool, &mut tests, t);
        }
    }
    let formula = pool.and(tests.iter().copied());
    BackboneApc { backbone: index, tests, formula, havocked_loops: havocked }
}

/// Builds the APC: the disjunction of apc_π over all backbones.
pub fn build(program: &Program, structure: &Structure, pool: &mut ExprPool) -> Apc {
    let mut inputs = Inputs::default();
    let mut backbones = vec![];
    for (i, bb) in structure.backbones.iter().enumerate() {
        let a = execute_backbone(program, structure, pool, &mut inputs, i, bb);
        debug!(backbone = i, apc = %Printer::new(pool).print(a.formula), "apc of backbone");
        backbones.push(a);
    }
    let formula = pool.or(backbones.iter().map(|b| b.formula));
    Apc { formula, backbones, inputs, complete: !structure.truncated }
}
