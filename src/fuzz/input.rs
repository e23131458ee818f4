//! The fuzzer's input format: how libFuzzer's bytes become the inputs replay uses.
//!
//! The decoding is *total*: every byte string, of any length, is some input (missing bytes read
//! as zero), so no mutation is wasted on a rejected input and the fuzzer never has to learn a
//! syntax. It is laid out for byte-level mutation:
//!
//! 1. each parameter, in order:
//!    * an integer of `w` bits: its `⌈w/8⌉` bytes (at most 8), little-endian, masked to `w` bits;
//!    * a pointer: a buffer (below);
//!    * `argv` of `main(argc, argv)`: one buffer (below, without pointer slots) per argument
//!      1..argc (argc as decoded just before, between 1 and 64, as replay clamps it); `argv[0]`
//!      is the driver's own;
//!    * anything else (floating point): no bytes;
//! 2. the rest feeds the `__VERIFIER_nondet_*` calls in call order, each taking its type's size
//!    (1 byte for `char`, 4 for `int`, ...), so a string compared with a stream of `nondet_char`
//!    results is a contiguous run of input bytes that libFuzzer's compare tracing can patch.
//!
//! A pointer is NULL when its length byte is [`NULL_LENGTH`], a function of the program when it
//! is from [`FUNCTION_LENGTH`] on (the next byte says which), and a buffer otherwise (its
//! pointees are decoded all the same, so the bytes after it keep their meaning).
//! A buffer is a length byte `n` (so at most [`MAX_BUFFER_DATA`] bytes), `n` data bytes, then
//! [`BUFFER_SLACK`] zeros that the decoding adds (strings end, short overreads stay defined),
//! then the buffers its pointer slots point to, as its [`Shape`] says. Shapes are not in the
//! bytes (a random length byte would scatter pointers over string data); they come from the
//! seeds (an APC model knows where a `char **` or a struct's pointer field is read) and are
//! handed to the fuzz driver in a file ([`InputLayout::shape_words`]).
//!
//! [`InputLayout::decode`] is this decoding in Rust; the C driver ([`super::cdriver`]) does the
//! same. The sizes of the nondet calls are only known by running the program when it declares
//! nondet functions of several sizes: then the caller passes the traced sizes.

use crate::ir::{Function, Ty};
use crate::replay::driver::{argc_clamped, argv_strings, DriverSpec};
use crate::symex::nondet_c_type;
use crate::witness::{ParamInput, Pointee, SlotValue, Witness, MAX_POINTEE_DEPTH};

pub use crate::witness::BUFFER_SLACK;

/// Most data bytes of one buffer: its length is one input byte, and the largest lengths mean
/// no buffer (see [`FUNCTION_LENGTH`], [`NULL_LENGTH`]).
pub const MAX_BUFFER_DATA: usize = 247;
/// A pointer's length byte from this one on (below [`NULL_LENGTH`]) makes it a function of the
/// program's table: the next byte picks which (modulo the table's length).
pub const FUNCTION_LENGTH: u8 = 248;
/// A pointer's length byte that makes it NULL.
pub const NULL_LENGTH: u8 = 255;
/// Most bytes a fuzzed buffer holds in front of its address (a header read at `s[-1]`).
pub const MAX_FRONT: u64 = 64;
/// Most pointer slots of one buffer.
pub const MAX_SLOTS: usize = 8;
/// Most buffers one input lays out (parameter buffers and pointees); the driver's arena.
pub const MAX_BUFFERS: usize = 128;
/// Most nondet calls a traced decoding takes (a trace longer than this is cut).
pub const MAX_TRACED_CALLS: usize = 1 << 20;

/// How one parameter of the function under test is read from the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamSlot {
    /// An integer of `width` bits: `⌈width/8⌉` bytes (at most 8), little-endian.
    Int { name: String, width: u32 },
    /// A pointer: a buffer. The address passed is `front` bytes into it (bytes the function
    /// reads in front of the address, see [`crate::ir::Param::front_bytes`], at most
    /// [`MAX_FRONT`]).
    Buffer { name: String, front: u64 },
    /// `argv` of `main(int argc, char **argv)`: a buffer per argument after the program name,
    /// as many as the `argc` before it says.
    Argv { name: String },
    /// No bytes: the value is fixed (zero).
    Fixed { name: String, c_type: String },
}

impl ParamSlot {
    /// Bytes an integer slot takes.
    pub fn int_bytes(width: u32) -> usize {
        (width.div_ceil(8) as usize).clamp(1, 8)
    }
}

/// The pointer slots of a buffer: at each offset, the address of a buffer of its own, with its
/// own slots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub slots: Vec<(u64, Shape)>,
}

impl Shape {
    fn nodes(&self) -> usize {
        1 + self.slots.iter().map(|(_, s)| s.nodes()).sum::<usize>()
    }

    /// Adds the pointee structure of a witness buffer, within the depth, slot and buffer
    /// bounds (`budget`: buffers still free). Slots that can never fit a decoded buffer are left
    /// out.
    fn merge(&mut self, pointees: &[Pointee], depth: usize, budget: &mut usize) {
        if depth >= MAX_POINTEE_DEPTH {
            return;
        }
        for p in pointees {
            if p.offset.saturating_add(8) > (MAX_BUFFER_DATA + BUFFER_SLACK) as u64 {
                continue;
            }
            let k = match self.slots.iter().position(|(o, _)| *o == p.offset) {
                Some(k) => k,
                None if self.slots.len() < MAX_SLOTS && *budget > 0 => {
                    *budget -= 1;
                    self.slots.push((p.offset, Shape::default()));
                    self.slots.len() - 1
                }
                None => continue,
            };
            self.slots[k].1.merge(&p.pointees, depth + 1, budget);
        }
    }

    fn words(&self, depth: usize, out: &mut Vec<u64>) {
        if depth >= MAX_POINTEE_DEPTH {
            return;
        }
        out.push(self.slots.len() as u64);
        for (offset, sub) in &self.slots {
            out.push(*offset);
            sub.words(depth + 1, out);
        }
    }
}

/// The input format of one function: what each parameter takes, the shapes of the buffers,
/// and the sizes of the nondet calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputLayout {
    pub params: Vec<ParamSlot>,
    /// Pointer-slot shape of each parameter (empty for all but buffers with slots).
    pub shapes: Vec<Shape>,
    /// Bytes a nondet call takes when the calls are not traced: the size of the declared nondet
    /// functions if they all agree, else of the first one.
    pub call_size: u8,
    /// Whether every declared nondet function takes `call_size` bytes: then decoding needs no
    /// trace.
    pub uniform_calls: bool,
    /// For each parameter, whether it is a buffer of characters (`char *`, from the debug
    /// information; also when it does not say): what a byte fill fills
    /// ([`InputLayout::byte_fill_seed`]).
    pub char_buffers: Vec<bool>,
    /// The program's function table (see `load::Loaded::function_table`): what a function
    /// pointer's index byte picks from.
    pub functions: Vec<String>,
}

/// Bytes a value of a nondet function's C type takes (as the replay driver defines it).
pub fn nondet_size(function_name: &str) -> Option<u8> {
    let suffix = function_name.strip_prefix("__VERIFIER_nondet_")?;
    Some(c_type_size(nondet_c_type(suffix).unwrap_or("long long")))
}

/// Size in bytes of one of the C types of [`crate::replay::driver::NONDET_TYPES`].
pub fn c_type_size(c_type: &str) -> u8 {
    match c_type {
        "char" | "unsigned char" | "_Bool" => 1,
        "short" | "unsigned short" => 2,
        "int" | "unsigned int" => 4,
        _ => 8,
    }
}

impl InputLayout {
    /// The layout of the function the replay driver calls as `spec.call_name`.
    pub fn new(spec: &DriverSpec) -> InputLayout {
        let f: &Function = spec.function;
        let main_with_args = spec.is_main_with_args();
        let params = f
            .params
            .iter()
            .enumerate()
            .map(|(k, p)| match (&p.ty, main_with_args) {
                (_, true) if k == 1 => ParamSlot::Argv { name: p.name.clone() },
                (Ty::Int(w), _) => ParamSlot::Int { name: p.name.clone(), width: *w },
                (Ty::Ptr, _) => ParamSlot::Buffer { name: p.name.clone(), front: p.front_bytes.min(MAX_FRONT) },
                (other, _) => ParamSlot::Fixed { name: p.name.clone(), c_type: other.to_string() },
            })
            .collect::<Vec<_>>();
        let mut sizes: Vec<u8> = spec.declared.iter().filter_map(|n| nondet_size(n)).collect();
        let call_size = sizes.first().copied().unwrap_or(4);
        sizes.dedup();
        sizes.sort_unstable();
        sizes.dedup();
        let char_buffers = f.params.iter().zip(&params).map(|(p, slot)| matches!(slot, ParamSlot::Buffer { .. }) && p.pointee_bytes.is_none_or(|b| b == 1)).collect();
        InputLayout { shapes: vec![Shape::default(); params.len()], params, call_size, uniform_calls: sizes.len() <= 1, char_buffers, functions: spec.functions.to_vec() }
    }

    /// This layout with buffer shapes covering the pointer slots of `seeds` (bounded).
    pub fn with_shapes_of(&self, seeds: &[Witness]) -> InputLayout {
        let mut out = self.clone();
        let buffers = self.params.iter().filter(|p| matches!(p, ParamSlot::Buffer { .. })).count();
        let mut budget = MAX_BUFFERS.saturating_sub(buffers);
        for w in seeds {
            for (k, slot) in self.params.iter().enumerate() {
                if let (ParamSlot::Buffer { .. }, Some(ParamInput::Buffer { pointees, .. })) = (slot, w.params.get(k)) {
                    out.shapes[k].merge(pointees, 0, &mut budget);
                }
            }
        }
        debug_assert!(out.shapes.iter().map(Shape::nodes).sum::<usize>() <= MAX_BUFFERS + self.params.len());
        out
    }

    /// The shapes as the fuzz driver reads them (`/shape`, little-endian 64-bit words): for each
    /// buffer parameter in order, pre-order `slot count, (offset, sub-shape)*`; nothing for
    /// buffers at the depth bound.
    pub fn shape_words(&self) -> Vec<u64> {
        let mut out = vec![];
        for (slot, shape) in self.params.iter().zip(&self.shapes) {
            if matches!(slot, ParamSlot::Buffer { .. }) {
                shape.words(0, &mut out);
            }
        }
        out
    }

    /// Decodes fuzzer bytes into the witness the fuzz driver ran. `calls`: the byte sizes of the
    /// nondet calls the run made, in order (from a trace); `None` splits the rest of the bytes
    /// into calls of [`InputLayout::call_size`], exact when the calls are uniform.
    pub fn decode(&self, bytes: &[u8], calls: Option<&[u8]>) -> Witness {
        let mut r = Reader { bytes, at: 0, functions: &self.functions };
        let mut argc = 1;
        let params = self
            .params
            .iter()
            .zip(&self.shapes)
            .map(|(slot, shape)| match slot {
                ParamSlot::Int { name, width } => {
                    let v = r.take(ParamSlot::int_bytes(*width));
                    argc = argc_clamped(v);
                    ParamInput::Int { name: name.clone(), width: *width, value: crate::expr::mask((*width).min(64), v) }
                }
                ParamSlot::Argv { name } => {
                    // The strings as pointees of an array of argc + 1 null pointers, as an APC
                    // model gives them (replay passes them, see `replay::driver`).
                    let pointees = (1..argc)
                        .map(|k| Pointee::buffer(8 * k as u64, r.buffer(&Shape::default(), MAX_POINTEE_DEPTH, true).0, vec![]))
                        .collect();
                    ParamInput::Buffer { name: name.clone(), bytes: vec![0; 8 * (argc + 1)], pointees, front: 0 }
                }
                ParamSlot::Buffer { name, front } => {
                    let (mut bytes, pointees, holds) = r.buffer(shape, 0, false);
                    match holds {
                        Some(SlotValue::Null) => return ParamInput::Null { name: name.clone() },
                        Some(SlotValue::Function(function)) => return ParamInput::Function { name: name.clone(), function },
                        None => {}
                    }
                    // The driver's buffers are zeroed beyond their data: the bytes in front
                    // exist even when the data is shorter.
                    if bytes.len() < *front as usize {
                        bytes.resize(*front as usize, 0);
                    }
                    ParamInput::Buffer { name: name.clone(), bytes, pointees, front: *front }
                }
                ParamSlot::Fixed { name, c_type } => ParamInput::Zero { name: name.clone(), c_type: c_type.clone() },
            })
            .collect();
        let nondet = match calls {
            Some(sizes) => sizes.iter().take(MAX_TRACED_CALLS).map(|s| r.take(*s as usize)).collect(),
            None => {
                let mut v = vec![];
                while r.at < bytes.len() {
                    v.push(r.take(self.call_size as usize));
                }
                v
            }
        };
        Witness { params, nondet }
    }

    /// Encodes a witness (an APC model, say) as fuzzer bytes: the inverse of
    /// [`InputLayout::decode`] on witnesses within its bounds. Buffers lose the trailing zeros
    /// the decoding adds back and are cut to [`MAX_BUFFER_DATA`] bytes; pointer slots follow
    /// this layout's shapes (a missing pointee becomes an empty buffer). `calls` as for decode.
    pub fn encode_seed(&self, w: &Witness, calls: Option<&[u8]>) -> Vec<u8> {
        let mut out = vec![];
        for (k, (slot, shape)) in self.params.iter().zip(&self.shapes).enumerate() {
            match (slot, w.params.get(k)) {
                (ParamSlot::Int { width, .. }, input) => {
                    let v = match input {
                        Some(ParamInput::Int { value, .. }) => *value,
                        _ => 0,
                    };
                    out.extend_from_slice(&v.to_le_bytes()[..ParamSlot::int_bytes(*width)]);
                }
                (ParamSlot::Argv { .. }, _) => {
                    // The strings replay passes (argc from the parameter before), each cut at
                    // its NUL: what follows it is never an argument's.
                    for arg in argv_strings(w).iter().skip(1) {
                        let arg = arg.as_deref().unwrap_or(&[]);
                        let end = arg.iter().position(|b| *b == 0).unwrap_or(arg.len());
                        encode_buffer(&arg[..end], &[], &Shape::default(), MAX_POINTEE_DEPTH, &mut out, &self.functions);
                    }
                }
                (ParamSlot::Buffer { front: slot_front, .. }, Some(ParamInput::Buffer { bytes, pointees, front, .. })) if front == slot_front => {
                    encode_buffer(bytes, pointees, shape, 0, &mut out, &self.functions)
                }
                (ParamSlot::Buffer { .. }, Some(ParamInput::Null { .. })) => encode_node(None, Some(&SlotValue::Null), shape, 0, &mut out, &self.functions),
                (ParamSlot::Buffer { .. }, Some(ParamInput::Function { function, .. })) => {
                    encode_node(None, Some(&SlotValue::Function(function.clone())), shape, 0, &mut out, &self.functions)
                }
                (ParamSlot::Buffer { front: slot_front, .. }, Some(ParamInput::Buffer { bytes, pointees, front, .. })) => {
                    // The same address `slot_front` bytes into the fuzzer's buffer: bytes in
                    // front cut or zeros added, pointer slots moved along.
                    let (cut, added) = (front.saturating_sub(*slot_front), slot_front.saturating_sub(*front));
                    let mut data = vec![0u8; added as usize];
                    data.extend(bytes.iter().skip(cut as usize));
                    let moved: Vec<Pointee> =
                        pointees.iter().filter(|p| p.offset >= cut).map(|p| Pointee { offset: p.offset - cut + added, ..p.clone() }).collect();
                    encode_buffer(&data, &moved, shape, 0, &mut out, &self.functions)
                }
                (ParamSlot::Buffer { .. }, _) => encode_buffer(&[], &[], shape, 0, &mut out, &self.functions),
                (ParamSlot::Fixed { .. }, _) => {}
            }
        }
        for (i, v) in w.nondet.iter().enumerate() {
            let size = calls.and_then(|c| c.get(i)).copied().unwrap_or(self.call_size).clamp(1, 8);
            out.extend_from_slice(&v.to_le_bytes()[..size as usize]);
        }
        out
    }
}

impl InputLayout {
    /// A *constant-fill* seed: every integer parameter, every 32-bit word of every buffer and
    /// every one of `calls` nondet results holds `value` (its low bits). Seeded with the
    /// program's comparison constants (and their neighbours), it reaches in one execution what
    /// random bytes almost never do: many inputs inside the same narrow range at once (every
    /// element of a matrix row in `(10, 100)`, every byte of a field equal to a sentinel),
    /// which coverage feedback cannot find one input at a time since no single one of them
    /// adds an edge.
    pub fn fill_seed(&self, value: u64, calls: usize) -> Vec<u8> {
        let words = word_fill(value);
        self.filled(&words, &words, value, calls)
    }

    /// A *byte-fill* seed: every byte of every character buffer is `byte` (other buffers as
    /// in the word fill of `value`), every integer parameter and every one of `calls` nondet
    /// results is `value`. The fill of a character compared with (`s[i] == 'x'`), beside each
    /// comparison constant for the lengths: a word fill puts the character in one byte of
    /// four, and sets a tied length to the character too (120 for `'x'`), where the program
    /// (or `--arg-size`) bounds it by a small constant. Three `x`s in a five-byte buffer with
    /// `len <= 5` took libFuzzer 10-30 s from the word fills.
    pub fn byte_fill_seed(&self, byte: u8, value: u64, calls: usize) -> Vec<u8> {
        self.filled(&[byte; MAX_BUFFER_DATA], &word_fill(value), value, calls)
    }

    /// A *zero-data* seed: every integer parameter and every one of `calls` nondet results is
    /// `value`, every buffer holds zeros at its largest. The fill of a comparison constant
    /// where it bounds loops over data left at its default: `for (i < n) for (j < m) if
    /// (A[i * m + j] == i) cnt++; if (cnt == 5)` counts five zeros in row 0 with `n = m = 5`,
    /// which the word fill (every cell 5) misses, and libFuzzer took 3,481 inputs (2.1 s) to
    /// find.
    pub fn zero_data_seed(&self, value: u64, calls: usize) -> Vec<u8> {
        self.filled(&[0; MAX_BUFFER_DATA], &[0; MAX_BUFFER_DATA], value, calls)
    }

    /// Whether some parameter is a buffer (only then do zero-data seeds differ from the word
    /// fills).
    pub fn has_buffers(&self) -> bool {
        self.params.iter().any(|p| matches!(p, ParamSlot::Buffer { .. }))
    }

    /// Whether some parameter is a character buffer (only they get byte fills; an `int`
    /// array filled byte by byte holds values nobody compares with, and a hundred such seeds
    /// cost the fuzzer the mutations that found eqcnt's witness: 0.5 s became 4.7).
    pub fn has_char_buffers(&self) -> bool {
        self.char_buffers.iter().any(|b| *b)
    }

    /// The seed with every character buffer holding `chars` and every other one `others`,
    /// and `value` in every integer and nondet result.
    fn filled(&self, chars: &[u8], others: &[u8], value: u64, calls: usize) -> Vec<u8> {
        let params = self
            .params
            .iter()
            .enumerate()
            .map(|(k, slot)| match slot {
                ParamSlot::Int { name, width } => ParamInput::Int { name: name.clone(), width: *width, value: crate::expr::mask((*width).min(64), value) },
                ParamSlot::Buffer { name, front } => {
                    let bytes = if self.char_buffers.get(k).copied().unwrap_or(false) { chars.to_vec() } else { others.to_vec() };
                    ParamInput::Buffer { name: name.clone(), bytes, pointees: vec![], front: *front }
                }
                ParamSlot::Fixed { name, c_type } => ParamInput::Zero { name: name.clone(), c_type: c_type.clone() },
                ParamSlot::Argv { name } => ParamInput::Zero { name: name.clone(), c_type: "char **".into() },
            })
            .collect();
        self.encode_seed(&Witness { params, nondet: vec![value; calls] }, None)
    }
}

/// A buffer's data with every 32-bit word `value` (its low bits).
fn word_fill(value: u64) -> Vec<u8> {
    (value as u32).to_le_bytes().iter().copied().cycle().take(MAX_BUFFER_DATA / 4 * 4).collect()
}

/// The data part of a witness buffer: without the slack the decoding adds back (exactly
/// [`BUFFER_SLACK`] trailing zeros when there are that many, else every trailing zero).
fn data_part(bytes: &[u8]) -> &[u8] {
    let data = crate::witness::buffer_data(bytes);
    &data[..data.len().min(MAX_BUFFER_DATA)]
}

fn encode_buffer(bytes: &[u8], pointees: &[Pointee], shape: &Shape, depth: usize, out: &mut Vec<u8>, functions: &[String]) {
    encode_node(Some((bytes, pointees)), None, shape, depth, out, functions)
}

/// One pointer of the input: a buffer (`contents`) or what `holds` says; the pointees of its
/// shape follow either way (empty buffers under a pointer that is no buffer).
fn encode_node(contents: Option<(&[u8], &[Pointee])>, holds: Option<&SlotValue>, shape: &Shape, depth: usize, out: &mut Vec<u8>, functions: &[String]) {
    let (bytes, pointees) = contents.unwrap_or((&[], &[]));
    match holds {
        Some(SlotValue::Null) => out.push(NULL_LENGTH),
        Some(SlotValue::Function(f)) => match functions.iter().position(|g| g == f).filter(|k| *k < 256) {
            Some(k) => out.extend_from_slice(&[FUNCTION_LENGTH, k as u8]),
            None => out.push(NULL_LENGTH),
        },
        None => {
            let data = data_part(bytes);
            out.push(data.len() as u8);
            out.extend_from_slice(data);
        }
    }
    if depth >= MAX_POINTEE_DEPTH {
        return;
    }
    for (offset, sub) in &shape.slots {
        match pointees.iter().find(|p| p.offset == *offset) {
            Some(p) => encode_node(Some((&p.bytes, &p.pointees)), p.holds.as_ref(), sub, depth + 1, out, functions),
            None => encode_node(None, None, sub, depth + 1, out, functions),
        }
    }
}

/// A cursor over the fuzzer's bytes: past the end, every byte is zero.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    functions: &'a [String],
}

impl Reader<'_> {
    /// `n` (≤ 8) bytes, little-endian.
    fn take(&mut self, n: usize) -> u64 {
        let mut v = 0u64;
        for k in 0..n.min(8) {
            let b = self.bytes.get(self.at).copied().unwrap_or(0);
            self.at = self.at.saturating_add(1);
            v |= (b as u64) << (8 * k);
        }
        v
    }

    /// One pointer: a buffer, with its pointees, or (unless `plain`: `argv`'s strings) NULL or
    /// a function as its length byte says, after which its pointees are read all the same.
    fn buffer(&mut self, shape: &Shape, depth: usize, plain: bool) -> (Vec<u8>, Vec<Pointee>, Option<SlotValue>) {
        let mut len = self.take(1) as usize;
        let mut holds = None;
        if len > MAX_BUFFER_DATA {
            if !plain {
                holds = Some(if len == NULL_LENGTH as usize {
                    SlotValue::Null
                } else {
                    let k = self.take(1) as usize;
                    match self.functions.len() {
                        0 => SlotValue::Null,
                        n => SlotValue::Function(self.functions[k % n].clone()),
                    }
                });
            }
            len = if plain { MAX_BUFFER_DATA } else { 0 };
        }
        let mut bytes: Vec<u8> = (0..len).map(|_| self.take(1) as u8).collect();
        bytes.resize(len + BUFFER_SLACK, 0);
        let slots: &[(u64, Shape)] = if depth < MAX_POINTEE_DEPTH { &shape.slots } else { &[] };
        let pointees = slots
            .iter()
            .take(MAX_SLOTS)
            .map(|(offset, sub)| match self.buffer(sub, depth + 1, false) {
                (_, _, Some(v)) => Pointee::holding(*offset, v),
                (bytes, pointees, None) => Pointee::buffer(*offset, bytes, pointees),
            })
            .collect();
        match holds {
            Some(v) => (vec![], vec![], Some(v)),
            None => (bytes, pointees, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Param, ParamExt, ValueId};

    fn function(params: Vec<(&str, Ty)>) -> Function {
        Function {
            name: "f".into(),
            params: params
                .into_iter()
                .enumerate()
                .map(|(k, (n, ty))| Param { value: ValueId(k as u32), name: n.into(), ty, ext: ParamExt::None, c_type: None, pointee_bytes: None, buffer_bytes: None, front_bytes: 0 })
                .collect(),
            ret: Ty::Void,
            blocks: vec![],
            value_types: vec![],
            value_names: vec![],
            in_cycle: vec![],
        }
    }

    fn layout(f: &Function, declared: &[&str]) -> InputLayout {
        let declared: Vec<String> = declared.iter().map(|s| s.to_string()).collect();
        InputLayout::new(&DriverSpec { function: f, call_name: "f", declared: &declared, targets: &[], functions: &[] })
    }

    fn slack(data: &[u8]) -> Vec<u8> {
        let mut v = data.to_vec();
        v.resize(data.len() + BUFFER_SLACK, 0);
        v
    }

    /// Deterministic pseudo-random bytes.
    fn noise(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect()
    }

    /// A buffer with a header in front of its address: a seed with the same front keeps its
    /// bytes; one with a larger front loses the excess, one with none gets zeros in front.
    #[test]
    fn bytes_in_front_of_the_address_survive_a_round_trip() {
        let mut f = function(vec![("s", Ty::Ptr)]);
        f.params[0].front_bytes = 8;
        let l = layout(&f, &[]);
        let buf = |bytes: &[u8], front| Witness { params: vec![ParamInput::Buffer { name: "s".into(), bytes: slack(bytes), pointees: vec![], front }], nondet: vec![] };
        let same = l.decode(&l.encode_seed(&buf(&[0, 0, 0, 0, 0, 42, 0, 1, b'x'], 8), None), None);
        assert_eq!(same.params, buf(&[0, 0, 0, 0, 0, 42, 0, 1, b'x'], 8).params);
        let larger = l.decode(&l.encode_seed(&buf(&[9, 9, 0, 0, 0, 0, 0, 42, 0, 1, b'x'], 10), None), None);
        assert_eq!(larger.params, buf(&[0, 0, 0, 0, 0, 42, 0, 1, b'x'], 8).params);
        let ParamInput::Buffer { bytes, front: 8, .. } = &l.decode(&l.encode_seed(&buf(b"x", 0), None), None).params[0] else { panic!("front kept") };
        assert_eq!(&bytes[..9], &[0, 0, 0, 0, 0, 0, 0, 0, b'x']);
    }

    #[test]
    fn fill_seeds_decode_to_the_value_everywhere() {
        let f = function(vec![("n", Ty::Int(32)), ("a", Ty::Ptr), ("c", Ty::Int(8))]);
        let l = layout(&f, &["__VERIFIER_nondet_int"]);
        let w = l.decode(&l.fill_seed(0x1_0000_0015, 5), None);
        assert_eq!(w.nondet, vec![0x15; 5]);
        match &w.params[..] {
            [ParamInput::Int { value: 0x15, .. }, ParamInput::Buffer { bytes, .. }, ParamInput::Int { value: 0x15, .. }] => {
                assert_eq!(&bytes[..8], &[0x15, 0, 0, 0, 0x15, 0, 0, 0]);
                assert!(bytes.len() >= MAX_BUFFER_DATA / 4 * 4);
            }
            other => panic!("unexpected parameters {other:?}"),
        }
    }

    #[test]
    fn byte_fills_fill_character_buffers_and_leave_int_arrays_word_filled() {
        let mut f = function(vec![("s", Ty::Ptr), ("len", Ty::Int(32)), ("a", Ty::Ptr)]);
        f.params[0].pointee_bytes = Some(1);
        f.params[2].pointee_bytes = Some(4);
        let l = layout(&f, &[]);
        assert_eq!(l.char_buffers, vec![true, false, false]);
        assert!(l.has_char_buffers());
        let w = l.decode(&l.byte_fill_seed(b'x', 5, 0), None);
        match &w.params[..] {
            [ParamInput::Buffer { bytes: s, .. }, ParamInput::Int { value: 5, .. }, ParamInput::Buffer { bytes: a, .. }] => {
                assert_eq!(crate::witness::buffer_data(s), &[b'x'; MAX_BUFFER_DATA][..]);
                assert_eq!(&a[..8], &[5, 0, 0, 0, 5, 0, 0, 0]);
            }
            other => panic!("unexpected parameters {other:?}"),
        }
        // Without a character buffer there is nothing to byte-fill.
        f.params[0].pointee_bytes = Some(8);
        assert!(!layout(&f, &[]).has_char_buffers());
    }

    /// Zero-data seeds: the value in every integer and nondet result, every buffer (character
    /// buffers too) zeros at its largest, not cut to the empty buffer the decoding also reads
    /// as zeros.
    #[test]
    fn zero_data_seeds_keep_the_value_in_the_integers_and_zeros_in_every_buffer() {
        let mut f = function(vec![("a", Ty::Ptr), ("n", Ty::Int(32)), ("s", Ty::Ptr)]);
        f.params[0].pointee_bytes = Some(4);
        f.params[2].pointee_bytes = Some(1);
        let l = layout(&f, &["__VERIFIER_nondet_int"]);
        assert!(l.has_buffers());
        let w = l.decode(&l.zero_data_seed(5, 3), None);
        assert_eq!(w.nondet, vec![5; 3]);
        match &w.params[..] {
            [ParamInput::Buffer { bytes: a, .. }, ParamInput::Int { value: 5, .. }, ParamInput::Buffer { bytes: s, .. }] => {
                for b in [a, s] {
                    assert!(b.len() >= MAX_BUFFER_DATA && b.iter().all(|x| *x == 0), "{b:?}");
                }
            }
            other => panic!("unexpected parameters {other:?}"),
        }
        assert!(!layout(&function(vec![("n", Ty::Int(32))]), &[]).has_buffers());
    }

    #[test]
    fn byte_fill_characters_are_the_one_byte_fill_values() {
        assert_eq!(super::super::byte_fills(&[120, 121, 0x1_0000, 300, 8, 120, 0]), vec![120, 121, 8]);
        assert_eq!(super::super::byte_fills(&(1..100).collect::<Vec<u64>>()).len(), super::super::MAX_BYTE_FILLS);
    }

    #[test]
    fn decoding_is_total_and_reads_zeros_past_the_end() {
        let f = function(vec![("n", Ty::Int(16)), ("s", Ty::Ptr), ("d", Ty::Other("double".into()))]);
        let l = layout(&f, &["__VERIFIER_nondet_int"]);
        let w = l.decode(&[], None);
        assert_eq!(w.params[0], ParamInput::Int { name: "n".into(), width: 16, value: 0 });
        assert_eq!(w.params[1], ParamInput::Buffer { name: "s".into(), bytes: vec![0; BUFFER_SLACK], pointees: vec![], front: 0 });
        assert!(matches!(w.params[2], ParamInput::Zero { .. }));
        assert!(w.nondet.is_empty());
        // n = 0x0201, s = "ab", then two ints, the second cut short.
        let w = l.decode(&[1, 2, 2, b'a', b'b', 7, 0, 0, 0, 9], None);
        assert_eq!(w.params[0], ParamInput::Int { name: "n".into(), width: 16, value: 0x201 });
        assert_eq!(w.params[1], ParamInput::Buffer { name: "s".into(), bytes: slack(b"ab"), pointees: vec![], front: 0 });
        assert_eq!(w.nondet, vec![7, 9]);
    }

    #[test]
    fn narrow_integers_are_masked_and_wide_ones_take_eight_bytes() {
        let f = function(vec![("b", Ty::Int(1)), ("w", Ty::Int(128))]);
        let l = layout(&f, &[]);
        let w = l.decode(&[0xff, 1, 2, 3, 4, 5, 6, 7, 8, 0xaa], None);
        assert_eq!(w.params[0], ParamInput::Int { name: "b".into(), width: 1, value: 1 });
        assert_eq!(w.params[1], ParamInput::Int { name: "w".into(), width: 128, value: 0x0807060504030201 });
        assert_eq!(w.nondet, vec![0xaa], "no nondet function declared: calls of 4 bytes");
    }

    #[test]
    fn seeds_round_trip_through_the_decoding() {
        let f = function(vec![("x", Ty::Int(32)), ("s", Ty::Ptr), ("c", Ty::Int(8))]);
        let l = layout(&f, &["__VERIFIER_nondet_char", "__VERIFIER_nondet_uchar"]);
        assert!(l.uniform_calls && l.call_size == 1);
        let w = Witness {
            params: vec![
                ParamInput::Int { name: "x".into(), width: 32, value: 0xdead_beef },
                ParamInput::Buffer { name: "s".into(), bytes: slack(b"Hello"), pointees: vec![], front: 0 },
                ParamInput::Int { name: "c".into(), width: 8, value: 0xfd },
            ],
            nondet: b"World".iter().map(|b| *b as u64).collect(),
        };
        let bytes = l.encode_seed(&w, None);
        assert_eq!(bytes.len(), 4 + 1 + 5 + 1 + 5);
        assert_eq!(l.decode(&bytes, None), w);
        // And the other way: any bytes decode to a witness whose encoding decodes to it again.
        for seed in 0..200 {
            let b = noise(seed, (seed as usize * 7) % 300);
            let w = l.decode(&b, None);
            assert_eq!(l.decode(&l.encode_seed(&w, None), None), w, "seed {seed}");
        }
    }

    #[test]
    fn pointer_slots_follow_the_shapes_of_the_seeds() {
        let f = function(vec![("argv", Ty::Ptr)]);
        let l = layout(&f, &["__VERIFIER_nondet_int"]);
        let seed = Witness {
            params: vec![ParamInput::Buffer {
                name: "argv".into(),
                bytes: vec![0; 16 + BUFFER_SLACK],
                pointees: vec![
                    Pointee::buffer(8, slack(b"-v"), vec![]),
                    Pointee::buffer(0, slack(b"prog"), vec![Pointee::buffer(0, slack(b"x"), vec![])]),
                ],
                front: 0,
            }],
            nondet: vec![1, 0x8000_0000],
        };
        let l = l.with_shapes_of(std::slice::from_ref(&seed));
        assert_eq!(l.shape_words(), vec![2, 8, 0, 0, 1, 0, 0]);
        let bytes = l.encode_seed(&seed, None);
        let back = l.decode(&bytes, None);
        // Same inputs, pointees in the shape's order.
        let ParamInput::Buffer { pointees, bytes: b, .. } = &back.params[0] else { panic!() };
        assert_eq!(b, &vec![0; 16 + BUFFER_SLACK]);
        assert_eq!(pointees[0].offset, 8);
        assert_eq!(pointees[0].bytes, slack(b"-v"));
        assert_eq!(pointees[1].pointees[0].bytes, slack(b"x"));
        assert_eq!(back.nondet, seed.nondet);
        for seed in 0..100 {
            let b = noise(seed, 400);
            let w = l.decode(&b, None);
            assert_eq!(l.decode(&l.encode_seed(&w, None), None), w, "seed {seed}");
        }
    }

    #[test]
    fn mixed_call_sizes_decode_by_the_trace() {
        let f = function(vec![]);
        let l = layout(&f, &["__VERIFIER_nondet_char", "__VERIFIER_nondet_int", "__VERIFIER_nondet_bool"]);
        assert!(!l.uniform_calls);
        let calls = [1u8, 4, 1, 4];
        let w = Witness { params: vec![], nondet: vec![b'a' as u64, 0x1234_5678, 1, 0xffff_ffff] };
        let bytes = l.encode_seed(&w, Some(&calls));
        assert_eq!(bytes.len(), 10);
        assert_eq!(l.decode(&bytes, Some(&calls)), w);
        // A trace longer than the bytes: the missing values are zero, as in the driver.
        assert_eq!(l.decode(&[5], Some(&[1, 1])).nondet, vec![5, 0]);
    }

    #[test]
    fn main_with_arguments_takes_argc_and_one_string_per_argument() {
        let f = function(vec![("argc", Ty::Int(32)), ("argv", Ty::Ptr)]);
        let l = InputLayout::new(&DriverSpec { function: &f, call_name: crate::load::REPLAY_MAIN, declared: &[], targets: &[], functions: &[] });
        assert!(matches!(l.params[1], ParamSlot::Argv { .. }));
        // argc 3: two strings ("-x", ""), then the nondet stream.
        let bytes = [3, 0, 0, 0, 2, b'-', b'x', 0, 9];
        let w = l.decode(&bytes, None);
        assert_eq!(w.params[0], ParamInput::Int { name: "argc".into(), width: 32, value: 3 });
        let ParamInput::Buffer { bytes: array, pointees, .. } = &w.params[1] else { panic!("{w:?}") };
        assert_eq!(array.len(), 32);
        assert_eq!(pointees.iter().map(|p| p.offset).collect::<Vec<_>>(), vec![8, 16]);
        assert!(pointees[0].bytes.starts_with(b"-x\0") && pointees[1].bytes.iter().all(|b| *b == 0));
        assert_eq!(w.nondet, vec![9]);
        // Encoding gives the bytes back (the nondet value as a whole int); an APC model's
        // string is cut at its NUL.
        let bytes = [&bytes[..], &[0, 0, 0]].concat();
        assert_eq!(l.encode_seed(&w, None), bytes);
        let mut model = w.clone();
        let ParamInput::Buffer { pointees, .. } = &mut model.params[1] else { unreachable!() };
        pointees[0].bytes = b"-x\0junk".to_vec();
        assert_eq!(l.encode_seed(&model, None), bytes);
        // argc 0 or negative counts as 1: no strings.
        assert_eq!(l.decode(&[0xff, 0xff, 0xff, 0xff, 7], None).nondet, vec![7]);
    }
}
