//! Turning a model of the APC into concrete inputs: parameter values, the bytes of the buffers
//! behind pointer parameters, and the sequence of `__VERIFIER_nondet_*` results; and making a
//! witness that reached the target smaller ([`reduce`]).

pub mod reduce;

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
        /// How many of `bytes` lie in front of the address passed (a header the function
        /// reads at negative offsets, see [`crate::ir::Param::front_bytes`]).
        #[serde(skip_serializing_if = "is_zero")]
        front: u64,
    },
    /// A pointer parameter passed as NULL.
    Null { name: String },
    /// A function-pointer parameter: the address of this function of the program.
    Function { name: String, function: String },
    /// A parameter of a type the tool cannot build (floating point, ...): zero.
    Zero { name: String, c_type: String },
}

/// What a pointer slot holds when it is no buffer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SlotValue {
    Null,
    Function(String),
}

/// Deepest chain of pointees a witness holds. Defined beside the symbolic state, which is below
/// this module and stops there too.
pub use crate::symex::MAX_POINTEE_DEPTH;

/// A buffer whose address is stored at byte `offset` of the enclosing buffer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pointee {
    pub offset: u64,
    pub bytes: Vec<u8>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pointees: Vec<Pointee>,
    /// NULL or a function's address instead of a buffer (then `bytes` and `pointees` are empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holds: Option<SlotValue>,
}

impl Pointee {
    pub fn buffer(offset: u64, bytes: Vec<u8>, pointees: Vec<Pointee>) -> Pointee {
        Pointee { offset, bytes, pointees, holds: None }
    }

    pub fn holding(offset: u64, value: SlotValue) -> Pointee {
        Pointee { offset, bytes: vec![], pointees: vec![], holds: Some(value) }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ParamInput {
    pub fn name(&self) -> &str {
        match self {
            ParamInput::Int { name, .. }
            | ParamInput::Buffer { name, .. }
            | ParamInput::Null { name }
            | ParamInput::Function { name, .. }
            | ParamInput::Zero { name, .. } => name,
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

impl Witness {
    /// Gives every buffer parameter with a size of the user's (`--arg-size`) exactly that many
    /// bytes (cut, or padded with zeros): what every replay runs and every report shows,
    /// whichever engine found the witness.
    pub fn fit_buffers(&mut self, params: &[crate::ir::Param]) {
        fit_buffers(&mut self.params, params);
    }
}

/// [`Witness::fit_buffers`] on a list of inputs (a report's).
pub fn fit_buffers(inputs: &mut [ParamInput], params: &[crate::ir::Param]) {
    for input in inputs {
        if let ParamInput::Buffer { name, bytes, front, .. } = input {
            if let Some(n) = params.iter().find(|p| &p.name == name).and_then(|p| p.buffer_bytes) {
                bytes.resize((*front + n) as usize, 0);
            }
        }
    }
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
            // Offsets inside λρ. … depend on its bound ρ, which has no value in a model; the
            // reads of the λ itself are reduced to its body at their offsets already.
            Expr::Lambda { .. } => continue,
            _ => {}
        }
        stack.extend(children_of(node));
    }
    out
}

/// The data part of a witness buffer: its bytes without the trailing zeros that
/// [`BUFFER_SLACK`] stands for (exactly that many when there are as many, else all of them).
/// Every engine's buffers are their data followed by the slack.
pub fn buffer_data(bytes: &[u8]) -> &[u8] {
    let zeros = bytes.iter().rev().take_while(|b| **b == 0).count();
    &bytes[..bytes.len() - zeros.min(BUFFER_SLACK)]
}

/// How each parameter of `program`'s function may be cut by [`reduce`]: its tied length
/// parameter, and whether the user sized it (`--arg-size`).
pub fn buffer_shapes(program: &Program) -> Vec<reduce::BufferShape> {
    let ties = length_ties(program);
    program
        .function
        .params
        .iter()
        .enumerate()
        .map(|(k, p)| reduce::BufferShape { length_param: ties.iter().find(|(b, _)| *b == k).map(|(_, l)| *l), fixed: p.buffer_bytes.is_some() })
        .collect()
}

/// Largest length a tied length parameter is first asked to stay within (see [`length_ties`]).
pub const PREFERRED_MAX_LEN: u64 = 64;

/// `(buffer parameter, length parameter)` index pairs of the function under analysis (see
/// [`crate::ir::length_ties`]). The APC engine first asks for models with such lengths at most
/// [`PREFERRED_MAX_LEN`] (a preference, dropped when unsatisfiable, never a proof), and the
/// buffer of a witness is made as long as its length says, so that a replay does not read past
/// it (a `len = 64 GiB` model with a 64-byte buffer crashed replays).
pub fn length_ties(program: &Program) -> Vec<(usize, usize)> {
    let params: Vec<(&str, &Ty)> = program.function.params.iter().map(|p| (p.name.as_str(), &p.ty)).collect();
    crate::ir::length_ties(&params)
}

/// The bytes of input buffer `obj` and the buffers its slots point to. Its size: `tied_len`
/// elements when a length parameter says it (see [`length_ties`]), else from the loads of the
/// solved formula; always covering its pointer slots, with slack.
fn buffer_contents(
    apc: &Apc,
    obj: crate::symex::ObjectId,
    loads: &[(ExprId, ExprId, u32)],
    m: &mut ModelView,
    tied_len: Option<u64>,
    c_elem: Option<u64>,
) -> (Vec<u8>, Vec<Pointee>) {
    let info = apc.inputs.object(obj);
    let slots = apc.inputs.pointees_of(obj);
    // A tied length counts elements: as many bytes as the widest load of this buffer reads
    // (an `int *A, int n` buffer holds 4n bytes), else as its C type says (`c_elem`), else 8.
    let elem = loads.iter().filter(|(root, _, _)| *root == info.initial).map(|(_, _, n)| *n as u64).max().or(c_elem).unwrap_or(8);
    let mut needed = slots.iter().map(|(o, _)| o + 8).max().unwrap_or(0).max(tied_len.map_or(0, |l| l.saturating_mul(elem)));
    for (root, off, n) in loads {
        if *root == info.initial && tied_len.is_none() {
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
        .map(|(offset, child)| match pointer_value(apc, child, m) {
            Some(v) => {
                // The slot's bytes are the pointer's: zero for NULL, the driver's for a function.
                if let Some(b) = bytes.get_mut(offset as usize..offset as usize + 8) {
                    b.fill(0);
                }
                Pointee::holding(offset, v)
            }
            None => {
                let (bytes, pointees) = buffer_contents(apc, child, loads, m, None, None);
                Pointee::buffer(offset, bytes, pointees)
            }
        })
        .collect();
    (bytes, pointees)
}

/// What an input pointer to `obj` is in the model when it is no buffer: NULL when its address
/// is 0, a function when the program uses it as a function pointer (the one whose address it
/// equals, else the first one the program mentions).
fn pointer_value(apc: &Apc, obj: crate::symex::ObjectId, m: &mut ModelView) -> Option<SlotValue> {
    let address = apc.inputs.address_symbol(obj).and_then(|a| m.eval(a));
    if address == Some(0) && (apc.inputs.is_address_compared(obj) || apc.inputs.is_function_pointer(obj)) {
        return Some(SlotValue::Null);
    }
    if !apc.inputs.is_function_pointer(obj) {
        return None;
    }
    let functions = apc.inputs.function_addresses();
    let chosen = functions.iter().find(|(f, _)| address.is_some() && m.eval(*f) == address).or(functions.first());
    Some(chosen.map_or(SlotValue::Null, |(_, name)| SlotValue::Function(name.clone())))
}

/// Builds the witness from a model of `solved` (the APC or its unfolding, with any extra
/// constraints): buffer sizes come from the loads in the formula that was actually solved.
pub fn from_model(program: &Program, apc: &Apc, pool: &ExprPool, solved: ExprId, m: &mut ModelView) -> Witness {
    let loads = loads_in(pool, solved);
    let ties = length_ties(program);
    let fparams = &program.function.params;
    // A tied length's value (when it fits an input) is its buffer's size.
    let tied_len = |k: usize, m: &mut ModelView| -> Option<u64> {
        ties.iter()
            .filter(|(b, _)| *b == k)
            .filter_map(|(_, l)| apc.inputs.param_input(&fparams[*l].name).and_then(|s| m.eval(s)))
            .filter(|v| *v <= MAX_INPUT_LEN)
            .max()
    };
    let mut params = vec![];
    for (k, p) in fparams.iter().enumerate() {
        match &p.ty {
            Ty::Int(w) => {
                let value = apc.inputs.param_input(&p.name).and_then(|s| m.eval(s)).unwrap_or(0);
                params.push(ParamInput::Int { name: p.name.clone(), width: *w, value });
            }
            Ty::Ptr if p.buffer_bytes.is_none() && apc.inputs.param_buffer_object(&p.name).is_some_and(|o| pointer_value(apc, o.id, m).is_some()) => {
                let obj = apc.inputs.param_buffer_object(&p.name).expect("checked").id;
                params.push(match pointer_value(apc, obj, m) {
                    Some(SlotValue::Function(function)) => ParamInput::Function { name: p.name.clone(), function },
                    _ => ParamInput::Null { name: p.name.clone() },
                });
            }
            Ty::Ptr => {
                let tied = tied_len(k, m);
                let (mut bytes, pointees) = match apc.inputs.param_buffer_object(&p.name) {
                    Some(obj) => buffer_contents(apc, obj.id, &loads, m, tied, p.pointee_bytes),
                    None => (vec![0; (tied.unwrap_or(0) * p.pointee_bytes.unwrap_or(8)) as usize + BUFFER_SLACK], vec![]),
                };
                if let Some(n) = p.buffer_bytes {
                    // The user's size (`--arg-size`), the model's bytes in it.
                    let initial = apc.inputs.param_buffer_object(&p.name).map(|o| apc.inputs.object(o.id).initial);
                    bytes = (0..n).map(|k| initial.and_then(|a| m.eval_element(a, k)).unwrap_or(0) as u8).collect();
                }
                // The bytes the function reads in front of the address (a header at `s[-1]`):
                // the model's, at negative indices of the same array.
                let front = p.front_bytes;
                let mut pointees = pointees;
                if front > 0 {
                    let initial = apc.inputs.param_buffer_object(&p.name).map(|o| apc.inputs.object(o.id).initial);
                    // Only the bytes the solved formula reads get the model's values; the rest
                    // stay zero (the model's default for unread cells is arbitrary).
                    let mut read = vec![false; front as usize];
                    for (root, off, n) in &loads {
                        if Some(*root) == initial {
                            if let Some(o) = m.eval(*off) {
                                for b in 0..*n as u64 {
                                    let at = o.wrapping_add(b).wrapping_add(front);
                                    if at < front {
                                        read[at as usize] = true;
                                    }
                                }
                            }
                        }
                    }
                    let mut all: Vec<u8> = (0..front)
                        .map(|k| if read[k as usize] { initial.and_then(|a| m.eval_element(a, k.wrapping_sub(front))).unwrap_or(0) as u8 } else { 0 })
                        .collect();
                    all.extend(bytes);
                    bytes = all;
                    for pt in &mut pointees {
                        pt.offset += front;
                    }
                }
                params.push(ParamInput::Buffer { name: p.name.clone(), bytes, pointees, front });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Function, Param, ParamExt, ValueId};

    fn program(params: &[(&str, Ty)]) -> Program {
        let function = Function {
            name: "f".into(),
            params: params.iter().enumerate().map(|(k, (n, ty))| Param { value: ValueId(k as u32), name: (*n).into(), ty: ty.clone(), ext: ParamExt::None, c_type: None, pointee_bytes: None, buffer_bytes: None, front_bytes: 0 }).collect(),
            ret: Ty::Void,
            blocks: vec![],
            value_types: vec![],
            value_names: vec![],
            in_cycle: vec![],
        };
        Program { function, globals: vec![], target_names: vec![], pure_functions: vec![] }
    }

    #[test]
    fn lengths_tie_to_the_nearest_buffer_before_them_else_after() {
        let p = program(&[("s", Ty::Ptr), ("len", Ty::Int(64)), ("flags", Ty::Int(32)), ("out", Ty::Ptr), ("out_size", Ty::Int(32))]);
        assert_eq!(length_ties(&p), vec![(0, 1), (3, 4)]);
        let p = program(&[("n", Ty::Int(32)), ("buf", Ty::Ptr)]);
        assert_eq!(length_ties(&p), vec![(1, 0)]);
        // One length per buffer, the nearest.
        let p = program(&[("s", Ty::Ptr), ("len", Ty::Int(64)), ("n", Ty::Int(32))]);
        assert_eq!(length_ties(&p), vec![(0, 1)]);
        // Not lengths: other names, flags, no buffer at all.
        assert!(length_ties(&program(&[("s", Ty::Ptr), ("mode", Ty::Int(32)), ("c", Ty::Int(1))])).is_empty());
        assert!(length_ties(&program(&[("len", Ty::Int(32))])).is_empty());
    }
}
