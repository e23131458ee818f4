//! Turning a model of the APC into concrete inputs: parameter values, the bytes of the buffers
//! behind pointer parameters, and the sequence of `__VERIFIER_nondet_*` results.

use crate::apc::Apc;
use crate::expr::{children_of, Expr, ExprId, ExprPool};
use crate::ir::{Program, Ty};
use crate::solve::ModelView;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Bytes after the last byte the APC constrains: zero, so that strings end and loops that read
/// a little further than the APC says still find defined memory.
pub const BUFFER_SLACK: usize = 64;
/// Largest buffer or input stream a witness materialises.
const MAX_INPUT_LEN: u64 = 1 << 16;

/// The value of one parameter of `--function`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ParamInput {
    /// An integer parameter: `value` holds its bits, zero-extended.
    Int { name: String, width: u32, value: u64 },
    /// A pointer parameter: a fresh buffer with these bytes, and the buffers its pointer slots
    /// point to.
    Buffer {
        name: String,
        bytes: Vec<u8>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pointees: Vec<Pointee>,
    },
    /// A parameter of a type the tool cannot build (floating point, ...): zero.
    Zero { name: String, c_type: String },
}

/// A buffer whose address is stored at byte `offset` of the enclosing buffer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pointee {
    pub offset: u64,
    pub bytes: Vec<u8>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pointees: Vec<Pointee>,
}

impl ParamInput {
    pub fn name(&self) -> &str {
        match self {
            ParamInput::Int { name, .. } | ParamInput::Buffer { name, .. } | ParamInput::Zero { name, .. } => name,
        }
    }
}

/// Concrete inputs for one run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Witness {
    pub params: Vec<ParamInput>,
    /// Results of the nondet calls in call order, as 64-bit values (each call keeps its low bits).
    pub nondet: Vec<u64>,
}

/// The symbol an array expression ultimately stores into (through stores).
fn array_root(pool: &ExprPool, mut a: ExprId) -> ExprId {
    while let Expr::Store { array, .. } = pool.get(a) {
        a = *array;
    }
    a
}

/// Loads `(array root, offset, bytes)` and selects `(array, index, 1)` reachable from `root`.
fn loads_in(pool: &ExprPool, root: ExprId) -> Vec<(ExprId, ExprId, u32)> {
    let mut out = vec![];
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        let node = pool.get(e);
        match node {
            Expr::Load { array, offset, width } => out.push((array_root(pool, *array), *offset, width / 8)),
            Expr::Select(array, index) => out.push((*array, *index, 1)),
            _ => {}
        }
        stack.extend(children_of(node));
    }
    out
}

/// The bytes of input buffer `obj` (sized from the loads of the solved formula, with slack,
/// and covering its pointer slots) and the buffers its slots point to.
fn buffer_contents(apc: &Apc, obj: crate::symex::ObjectId, loads: &[(ExprId, ExprId, u32)], m: &mut ModelView) -> (Vec<u8>, Vec<Pointee>) {
    let info = apc.inputs.object(obj);
    let slots = apc.inputs.pointees_of(obj);
    let mut needed = slots.iter().map(|(o, _)| o + 8).max().unwrap_or(0);
    for (root, off, n) in loads {
        if *root == info.initial {
            if let Some(o) = m.eval(*off) {
                if o < MAX_INPUT_LEN {
                    needed = needed.max(o + *n as u64);
                }
            }
        }
    }
    let mut bytes: Vec<u8> = (0..needed).map(|k| m.eval_element(info.initial, k).unwrap_or(0) as u8).collect();
    bytes.extend(std::iter::repeat_n(0, BUFFER_SLACK));
    let pointees = slots
        .into_iter()
        .map(|(offset, child)| {
            let (bytes, pointees) = buffer_contents(apc, child, loads, m);
            Pointee { offset, bytes, pointees }
        })
        .collect();
    (bytes, pointees)
}

/// Builds the witness from a model of `solved` (the APC or its unfolding, with any extra
/// constraints): buffer sizes come from the loads in the formula that was actually solved.
pub fn from_model(program: &Program, apc: &Apc, pool: &ExprPool, solved: ExprId, m: &mut ModelView) -> Witness {
    let loads = loads_in(pool, solved);
    let mut params = vec![];
    for p in &program.function.params {
        match &p.ty {
            Ty::Int(w) => {
                let value = apc.inputs.param_input(&p.name).and_then(|s| m.eval(s)).unwrap_or(0);
                params.push(ParamInput::Int { name: p.name.clone(), width: *w, value });
            }
            Ty::Ptr => {
                let (bytes, pointees) = match apc.inputs.param_buffer_object(&p.name) {
                    Some(obj) => buffer_contents(apc, obj.id, &loads, m),
                    None => (vec![0; BUFFER_SLACK], vec![]),
                };
                params.push(ParamInput::Buffer { name: p.name.clone(), bytes, pointees });
            }
            other => params.push(ParamInput::Zero { name: p.name.clone(), c_type: other.to_string() }),
        }
    }
    let mut nondet = vec![];
    if let Some(stream) = apc.inputs.nondet_stream {
        // The stream positions the solved formula reads (inside loops they depend on counters).
        let mut len = 0u64;
        let mut evaluated: HashMap<ExprId, Option<u64>> = HashMap::new();
        for (array, index, _) in &loads {
            if *array == stream {
                let idx = *evaluated.entry(*index).or_insert_with(|| m.eval(*index));
                if let Some(i) = idx.filter(|&i| i < MAX_INPUT_LEN) {
                    len = len.max(i + 1);
                }
            }
        }
        nondet = (0..len).map(|k| m.eval_element(stream, k).unwrap_or(0)).collect();
    }
    Witness { params, nondet }
}
