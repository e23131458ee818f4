//! The result of the C library's comparisons (`strcmp`, `strncmp`, `memcmp`): only its sign is
//! promised. glibc's implementations differ in the magnitude, by CPU: the byte difference from
//! some, ±1 from the vectorised `memcmp` of others. The library models (`env_models.c`)
//! therefore return `__apc_sign_of(d)`, "a value with the sign of the byte difference `d`",
//! which every engine treats as an unknown of that sign (and 0 when `d` is 0).
//!
//! Most programs only test that sign (`== 0`, `< 0`, ...). Where every use of the result does,
//! [`exact_where_only_the_sign_is_used`] replaces the call by `d` itself: each test then takes
//! the branch it takes natively, whatever the magnitude, so the rewrite keeps the set of paths
//! of the compiled program and the engines stay exact there.

use crate::ir::{CastOp, Callee, Function, InstKind, IntPredicate, Operand, Terminator, ValueId};
use std::collections::HashMap;

/// The intrinsic of the library models: an unknown with the sign of its argument.
pub const SIGN_OF: &str = "__apc_sign_of";

/// Where a value is used.
#[derive(Clone, Copy)]
enum Use {
    Inst { block: usize, index: usize },
    Terminator { block: usize },
}

/// Replaces each `__apc_sign_of(d)` whose result only meets tests of its sign by `d`.
pub fn exact_where_only_the_sign_is_used(f: &mut Function) {
    let mut calls = vec![];
    for (b, block) in f.blocks.iter().enumerate() {
        for (k, inst) in block.insts.iter().enumerate() {
            if let (InstKind::Call { callee: Callee::Direct(name), args }, Some(_)) = (&inst.kind, inst.result) {
                if name == SIGN_OF && args.len() == 1 {
                    calls.push((b, k));
                }
            }
        }
    }
    if calls.is_empty() {
        return;
    }
    let uses = uses(f);
    for (b, k) in calls {
        let inst = &f.blocks[b].insts[k];
        let result = inst.result.expect("checked above");
        if !only_signs_matter(f, &uses, result) {
            continue;
        }
        let InstKind::Call { args, .. } = &inst.kind else { unreachable!("collected above") };
        let d = args[0].clone();
        f.blocks[b].insts[k].kind = InstKind::Cast { op: CastOp::BitCast, val: d };
    }
}

fn uses(f: &Function) -> HashMap<ValueId, Vec<Use>> {
    let mut map: HashMap<ValueId, Vec<Use>> = HashMap::new();
    for (b, block) in f.blocks.iter().enumerate() {
        for (k, inst) in block.insts.iter().enumerate() {
            for o in inst.kind.operands() {
                if let Operand::Value(v) = o {
                    map.entry(*v).or_default().push(Use::Inst { block: b, index: k });
                }
            }
        }
        let ops: Vec<&Operand> = match &block.term {
            Terminator::Branch { cond, .. } => vec![cond],
            Terminator::Switch { value, .. } => vec![value],
            Terminator::Return(Some(v)) => vec![v],
            _ => vec![],
        };
        for o in ops {
            if let Operand::Value(v) = o {
                map.entry(*v).or_default().push(Use::Terminator { block: b });
            }
        }
    }
    map
}

/// Whether every run takes the same branches for any value of `v` with the same sign: each use,
/// through phis, selects and sign extensions, is a comparison whose outcome only the sign
/// decides, or the function's return (the analysed function's result decides no branch in it).
fn only_signs_matter(f: &Function, uses: &HashMap<ValueId, Vec<Use>>, v: ValueId) -> bool {
    let mut todo = vec![v];
    let mut seen = vec![v];
    while let Some(x) = todo.pop() {
        for u in uses.get(&x).map(Vec::as_slice).unwrap_or(&[]) {
            match *u {
                Use::Terminator { block } => {
                    if !matches!(f.blocks[block].term, Terminator::Return(_)) {
                        return false;
                    }
                }
                Use::Inst { block, index } => {
                    let inst = &f.blocks[block].insts[index];
                    let passes_on = match &inst.kind {
                        InstKind::ICmp { pred, lhs, rhs } => {
                            if !sign_test(*pred, lhs, rhs, x) {
                                return false;
                            }
                            false
                        }
                        InstKind::Phi { .. } | InstKind::Cast { op: CastOp::SExt | CastOp::BitCast, .. } => true,
                        InstKind::Select { cond, .. } => {
                            if *cond == Operand::Value(x) {
                                return false;
                            }
                            true
                        }
                        _ => return false,
                    };
                    if passes_on {
                        let Some(r) = inst.result else { return false };
                        if !seen.contains(&r) {
                            seen.push(r);
                            todo.push(r);
                        }
                    }
                }
            }
        }
    }
    true
}

/// Whether `lhs pred rhs`, one side `x` and the other a constant, depends only on the sign of `x`.
fn sign_test(pred: IntPredicate, lhs: &Operand, rhs: &Operand, x: ValueId) -> bool {
    use IntPredicate::*;
    let (pred, other) = match (lhs, rhs) {
        (Operand::Value(l), o) if *l == x => (pred, o),
        (o, Operand::Value(r)) if *r == x => (pred.swapped(), o),
        _ => return false,
    };
    let Operand::Int { width, value } = *other else { return false };
    if width == 0 || width > 64 {
        return false;
    }
    let signed = ((value << (64 - width)) as i64) >> (64 - width);
    match pred {
        Eq | Ne => signed == 0,
        // x < 0, x < 1 (x ≤ 0); x ≥ 0, x ≥ 1 (x > 0).
        Slt | Sge => signed == 0 || signed == 1,
        // x > 0, x > −1 (x ≥ 0); x ≤ 0, x ≤ −1 (x < 0).
        Sgt | Sle => signed == 0 || signed == -1,
        // x <u 1 (x = 0), x ≥u 1 (x ≠ 0), and the constant outcomes of 0.
        Ult | Uge => value == 0 || value == 1,
        Ugt | Ule => value == 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use IntPredicate::*;

    fn c(width: u32, v: i64) -> Operand {
        Operand::Int { width, value: (v as u64) & (u64::MAX >> (64 - width)) }
    }

    #[test]
    fn tests_of_the_sign_alone_are_recognised() {
        let x = ValueId(3);
        let v = Operand::Value(x);
        for (p, k) in [(Eq, 0), (Ne, 0), (Slt, 0), (Slt, 1), (Sgt, 0), (Sgt, -1), (Sle, 0), (Sge, 1), (Ult, 1), (Ugt, 0)] {
            assert!(sign_test(p, &v, &c(32, k), x), "{p:?} {k}");
        }
        for (p, k) in [(Eq, 1), (Ne, -1), (Slt, 2), (Sgt, 1), (Sle, 1), (Sge, -1), (Ult, 2), (Ugt, 1)] {
            assert!(!sign_test(p, &v, &c(32, k), x), "{p:?} {k}");
        }
        // 1 > x is x < 1, a sign test; 1 < x is x > 1, not one.
        assert!(sign_test(Sgt, &c(32, 1), &v, x));
        assert!(!sign_test(Slt, &c(32, 1), &v, x));
        // Against another value: not a sign test.
        assert!(!sign_test(Eq, &v, &Operand::Value(ValueId(4)), x));
    }
}
