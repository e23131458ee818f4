//! The analysed function as constrained Horn clauses: one predicate per
//! block over the function's registers, one clause per control-flow edge, and the query "a
//! target block is entered". Z3's Horn engine (Spacer) then either finds an interpretation of
//! the predicates, an inductive invariant per block that excludes every target (the target is
//! unreachable, and the interpretations are the invariants), or finds none.
//!
//! The clauses over-approximate the runs of the compiled program, bit-precisely where they are
//! exact and with an unconstrained value (⋆) everywhere else, so "unreachable" is a proof:
//! - registers are bit-vectors of their width (pointers 64 bits), arithmetic wraps;
//! - memory is not modelled: every load, pointer computation, call result and unknown
//!   instruction gives a fresh value; stores and calls change no register;
//! - shifts by a constant below the width and divisions by a constant that cannot trap are
//!   exact; any other shift or division gives a fresh value (x86-64 masks shift counts, and a
//!   division that traps ends the run, which a fresh value over-approximates);
//! - `__VERIFIER_assume(c)` continues only when `c ≠ 0`; `__VERIFIER_nondet_*` is fresh.
//!
//! Only the blocks' state is encoded, not the path conditions of the APC: this prover is
//! independent of the summaries, a second opinion that needs no loop rule.

use crate::ir::{BinOp, Block, BlockId, CastOp, Callee, Function, InstKind, IntPredicate, Operand, Terminator, Ty, ValueId};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

pub mod kinduction;

/// A Horn problem in SMT-LIB (`(set-logic HORN)` is the solver's): declarations and clauses.
#[derive(Clone, Debug)]
pub struct HornProblem {
    pub smtlib: String,
    /// The predicate of each block, by block index (`None`: not on a path to a target).
    pub predicates: Vec<Option<String>>,
    /// The state registers, in predicate argument order, with their names in the source.
    pub registers: Vec<String>,
}

/// The SMT-LIB sort of a register of type `ty`, if it has one.
fn sort_width(ty: &Ty) -> Option<u32> {
    match ty {
        Ty::Int(w) if *w >= 1 => Some(*w),
        Ty::Ptr => Some(64),
        _ => None,
    }
}

/// How registers are encoded. Both are exact for the operations they encode (everything else
/// is ⋆), so a solution of either is a proof; Spacer finds invariants over integers far more
/// often (linear arithmetic), over bit-vectors for the operations integers leave ⋆.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Theory {
    /// `(_ BitVec w)`, the operations as the machine does them.
    BitVectors,
    /// Integers in `[0, 2^w)` (the unsigned reading of the bits): wrap-around by `ite`s and
    /// `mod`, signed comparisons on the converted value; bitwise operations other than masks
    /// of low bits, products of two registers and signed divisions are ⋆. Widths up to 64.
    Integers,
}

impl Theory {
    fn sort(self, w: u32) -> String {
        match self {
            Theory::BitVectors => format!("(_ BitVec {w})"),
            Theory::Integers => "Int".into(),
        }
    }

    fn lit(self, value: u64, w: u32) -> String {
        match self {
            Theory::BitVectors => bv(value, w),
            Theory::Integers => (if w >= 64 { value } else { value & ((1u64 << w) - 1) }).to_string(),
        }
    }

    /// Whether registers of `w` bits can be encoded.
    fn encodes(self, w: u32) -> bool {
        self == Theory::BitVectors || w <= 64
    }
}

/// 2^w as a decimal literal (w ≤ 64).
fn modulus(w: u32) -> String {
    (1u128 << w).to_string()
}

fn bv(value: u64, width: u32) -> String {
    let v = if width >= 64 { value } else { value & ((1u64 << width) - 1) };
    format!("(_ bv{v} {width})")
}

/// One clause being built: its universally quantified variables and its constraints.
#[derive(Clone)]
pub(crate) struct Clause {
    theory: Theory,
    vars: Vec<(String, u32)>,
    body: Vec<String>,
    fresh: u32,
}

impl Clause {
    fn new(theory: Theory) -> Clause {
        Clause { theory, vars: vec![], body: vec![], fresh: 0 }
    }

    /// A variable of `width` bits (over the integers: with its range).
    fn var(&mut self, name: String, width: u32) -> String {
        self.vars.push((name.clone(), width));
        if self.theory == Theory::Integers {
            self.body.push(format!("(<= 0 {name})"));
            self.body.push(format!("(< {name} {})", modulus(width)));
        }
        name
    }

    /// An unconstrained value of `width` bits (⋆).
    fn star(&mut self, width: u32) -> String {
        self.fresh += 1;
        self.var(format!("f{}", self.fresh), width)
    }

    fn render(&self, head: &str) -> String {
        let body = match self.body.len() {
            0 => "true".to_string(),
            1 => self.body[0].clone(),
            _ => format!("(and {})", self.body.join(" ")),
        };
        let implication = format!("(=> {body} {head})");
        if self.vars.is_empty() {
            format!("(assert {implication})\n")
        } else {
            let vars: Vec<String> = self.vars.iter().map(|(n, w)| format!("({n} {})", self.theory.sort(*w))).collect();
            format!("(assert (forall ({}) {implication}))\n", vars.join(" "))
        }
    }
}

struct Encoder<'f> {
    f: &'f Function,
    theory: Theory,
    /// The state registers and their widths.
    state: Vec<(ValueId, u32)>,
    in_state: HashMap<ValueId, usize>,
}

impl Encoder<'_> {
    fn width_of(&self, o: &Operand) -> Option<u32> {
        let w = match o {
            Operand::Value(v) => sort_width(self.f.value_type(*v)),
            Operand::Int { width, .. } => Some(*width),
            Operand::Global { .. } | Operand::Function(_) | Operand::Null => Some(64),
            Operand::Undef(t) | Operand::Unknown(t) => sort_width(t),
        }?;
        self.theory.encodes(w).then_some(w)
    }

    /// The width of a register of type `ty`, when this theory encodes it.
    fn width_of_type(&self, ty: &Ty) -> Option<u32> {
        sort_width(ty).filter(|w| self.theory.encodes(*w))
    }

    /// The term of operand `o` inside the clause of a block whose registers so far are
    /// `locals` (values defined in the block), the state otherwise.
    fn operand(&self, o: &Operand, locals: &HashMap<ValueId, String>, c: &mut Clause) -> Option<String> {
        let w = self.width_of(o)?;
        Some(match o {
            Operand::Value(v) => match (locals.get(v), self.in_state.get(v)) {
                (Some(l), _) => l.clone(),
                (None, Some(k)) => format!("s{k}"),
                // Defined on no path into this block (or of no sort): any value.
                (None, None) => c.star(w),
            },
            Operand::Int { width, value } => self.theory.lit(*value, *width),
            Operand::Null => self.theory.lit(0, 64),
            Operand::Global { .. } | Operand::Function(_) | Operand::Undef(_) | Operand::Unknown(_) => c.star(w),
        })
    }

    /// The value of instruction `kind` with result width `w`, or `None` when it is ⋆.
    fn value(&self, kind: &InstKind, w: u32, locals: &HashMap<ValueId, String>, c: &mut Clause) -> Option<String> {
        let (one, zero) = (self.theory.lit(1, 1), self.theory.lit(0, 1));
        match kind {
            InstKind::ICmp { pred, lhs, rhs } => {
                let ow = self.width_of(lhs)?;
                if self.width_of(rhs) != Some(ow) {
                    return None;
                }
                let (a, b) = (self.operand(lhs, locals, c)?, self.operand(rhs, locals, c)?);
                return Some(format!("(ite {} {one} {zero})", self.comparison(*pred, &a, &b, ow)));
            }
            InstKind::Select { cond, then_val, else_val } => {
                if self.width_of(then_val) != Some(w) || self.width_of(else_val) != Some(w) || self.width_of(cond) != Some(1) {
                    return None;
                }
                let (k, t, e) = (self.operand(cond, locals, c)?, self.operand(then_val, locals, c)?, self.operand(else_val, locals, c)?);
                return Some(format!("(ite (= {k} {one}) {t} {e})"));
            }
            _ => {}
        }
        if self.theory == Theory::Integers {
            return self.int_value(kind, w, locals, c);
        }
        let const_of = |o: &Operand| match o {
            Operand::Int { value, .. } => Some(*value),
            _ => None,
        };
        match kind {
            InstKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.operand(lhs, locals, c)?, self.operand(rhs, locals, c)?);
                let all_ones = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
                let name = match op {
                    BinOp::Add => "bvadd",
                    BinOp::Sub => "bvsub",
                    BinOp::Mul => "bvmul",
                    BinOp::And => "bvand",
                    BinOp::Or => "bvor",
                    BinOp::Xor => "bvxor",
                    BinOp::Shl | BinOp::LShr | BinOp::AShr => {
                        // Exact only for a constant count below the width.
                        const_of(rhs).filter(|&k| k < w as u64)?;
                        match op {
                            BinOp::Shl => "bvshl",
                            BinOp::LShr => "bvlshr",
                            _ => "bvashr",
                        }
                    }
                    BinOp::UDiv | BinOp::URem => {
                        const_of(rhs).filter(|&k| k != 0)?;
                        if *op == BinOp::UDiv { "bvudiv" } else { "bvurem" }
                    }
                    BinOp::SDiv | BinOp::SRem => {
                        const_of(rhs).filter(|&k| k != 0 && k != all_ones)?;
                        if *op == BinOp::SDiv { "bvsdiv" } else { "bvsrem" }
                    }
                };
                Some(format!("({name} {a} {b})"))
            }
            InstKind::Cast { op, val } => {
                let from = self.width_of(val)?;
                let x = self.operand(val, locals, c)?;
                match op {
                    CastOp::ZExt if w > from => Some(format!("((_ zero_extend {}) {x})", w - from)),
                    CastOp::SExt if w > from => Some(format!("((_ sign_extend {}) {x})", w - from)),
                    CastOp::Trunc if w < from => Some(format!("((_ extract {} 0) {x})", w - 1)),
                    // Integer/pointer conversions: LLVM zero-extends or truncates.
                    CastOp::PtrToInt | CastOp::IntToPtr if w > from => Some(format!("((_ zero_extend {}) {x})", w - from)),
                    CastOp::PtrToInt | CastOp::IntToPtr if w < from => Some(format!("((_ extract {} 0) {x})", w - 1)),
                    _ if w == from => Some(x),
                    _ => None,
                }
            }
            // Memory, addresses, calls and what the IR cannot represent: ⋆.
            _ => None,
        }
    }

    /// The test `a pred b` of two `w`-bit registers.
    fn comparison(&self, pred: IntPredicate, a: &str, b: &str, w: u32) -> String {
        use IntPredicate::*;
        if let (Eq | Ne, _) | (_, Theory::BitVectors) = (pred, self.theory) {
            let op = crate::solve::cmp_symbol(pred);
            return format!("({op} {a} {b})");
        }
        // Over the integers: the unsigned reading is the value; the signed one is converted.
        let signed = |t: &str| format!("(ite (< {t} {}) {t} (- {t} {}))", modulus(w - 1), modulus(w));
        let (a, b) = match pred {
            Sgt | Sge | Slt | Sle => (signed(a), signed(b)),
            _ => (a.to_string(), b.to_string()),
        };
        let op = match pred {
            Ugt | Sgt => ">",
            Uge | Sge => ">=",
            Ult | Slt => "<",
            _ => "<=",
        };
        format!("({op} {a} {b})")
    }

    /// [`Encoder::value`] over the integers `[0, 2^w)`.
    fn int_value(&self, kind: &InstKind, w: u32, locals: &HashMap<ValueId, String>, c: &mut Clause) -> Option<String> {
        let const_of = |o: &Operand| match o {
            Operand::Int { value, width } => Some(if *width >= 64 { *value } else { value & ((1u64 << width) - 1) }),
            _ => None,
        };
        let m = modulus(w);
        match kind {
            InstKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.operand(lhs, locals, c)?, self.operand(rhs, locals, c)?);
                match op {
                    BinOp::Add => Some(format!("(ite (< (+ {a} {b}) {m}) (+ {a} {b}) (- (+ {a} {b}) {m}))")),
                    BinOp::Sub => Some(format!("(ite (>= (- {a} {b}) 0) (- {a} {b}) (+ (- {a} {b}) {m}))")),
                    BinOp::Mul => match (const_of(lhs), const_of(rhs)) {
                        (Some(k), _) => Some(format!("(mod (* {k} {b}) {m})")),
                        (_, Some(k)) => Some(format!("(mod (* {a} {k}) {m})")),
                        _ => None,
                    },
                    // A mask of low bits is a remainder.
                    BinOp::And => match (const_of(lhs), const_of(rhs)) {
                        (_, Some(k)) if (k as u128 + 1).is_power_of_two() => Some(format!("(mod {a} {})", k as u128 + 1)),
                        (Some(k), _) if (k as u128 + 1).is_power_of_two() => Some(format!("(mod {b} {})", k as u128 + 1)),
                        _ => None,
                    },
                    BinOp::Shl => const_of(rhs).filter(|&k| k < w as u64).map(|k| format!("(mod (* {a} {}) {m})", 1u128 << k)),
                    BinOp::LShr => const_of(rhs).filter(|&k| k < w as u64).map(|k| format!("(div {a} {})", 1u128 << k)),
                    BinOp::UDiv => const_of(rhs).filter(|&k| k != 0).map(|k| format!("(div {a} {k})")),
                    BinOp::URem => const_of(rhs).filter(|&k| k != 0).map(|k| format!("(mod {a} {k})")),
                    BinOp::Or | BinOp::Xor | BinOp::AShr | BinOp::SDiv | BinOp::SRem => None,
                }
            }
            InstKind::Cast { op, val } => {
                let from = self.width_of(val)?;
                let x = self.operand(val, locals, c)?;
                match op {
                    CastOp::ZExt | CastOp::PtrToInt | CastOp::IntToPtr if w >= from => Some(x),
                    CastOp::SExt if w > from => Some(format!("(ite (< {x} {}) {x} (+ {x} {}))", modulus(from - 1), (1u128 << w) - (1u128 << from))),
                    CastOp::Trunc | CastOp::PtrToInt | CastOp::IntToPtr if w < from => Some(format!("(mod {x} {m})")),
                    _ if w == from => Some(x),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The clause of the edge `b` → `succ` taken under `guard` (terms over the block's
    /// registers), or the query when `succ` is `None`.
    /// The clause of the edge from `b` to `succ` (`None`: `b` is a target, the query), with
    /// the names of the state after it (`n0`, `n1`, ...; `s0`, ... before it).
    fn edge(&self, b: &Block, preds: &[Option<String>], succ: Option<BlockId>, guard: &dyn Fn(&HashMap<ValueId, String>, &mut Clause) -> Option<String>) -> Option<Edge> {
        let mut c = Clause::new(self.theory);
        let pre: Vec<String> = self.state.iter().enumerate().map(|(k, (_, w))| c.var(format!("s{k}"), *w)).collect();
        let me = preds[b.id.0 as usize].as_ref()?;
        let pre = if pre.is_empty() { me.clone() } else { format!("({me} {})", pre.join(" ")) };
        let mut locals: HashMap<ValueId, String> = HashMap::new();
        let mut nondet = vec![];
        for inst in &b.insts {
            if let InstKind::Phi { .. } = inst.kind {
                continue;
            }
            if let (InstKind::Call { callee: Callee::Direct(name), .. }, Some(r), Some(w)) = (&inst.kind, inst.result, self.width_of_type(&inst.ty)) {
                if name.starts_with("__VERIFIER_nondet_") {
                    nondet.push((format!("l{}", r.0), w));
                }
            }
            if let InstKind::Call { callee: Callee::Direct(name), args } = &inst.kind {
                if name == "__VERIFIER_assume" {
                    if let Some(a) = args.first() {
                        let w = self.width_of(a);
                        if let (Some(w), Some(t)) = (w, self.operand(a, &locals, &mut c)) {
                            c.body.push(format!("(distinct {t} {})", self.theory.lit(0, w)));
                        }
                    }
                }
            }
            let (Some(r), Some(w)) = (inst.result, self.width_of_type(&inst.ty)) else { continue };
            let local = c.var(format!("l{}", r.0), w);
            if let Some(v) = self.value(&inst.kind, w, &locals, &mut c) {
                c.body.push(format!("(= {local} {v})"));
            }
            locals.insert(r, local);
        }
        if let Some(g) = guard(&locals, &mut c) {
            c.body.push(g);
        }
        let Some(succ) = succ else { return Some(Edge { from: b.id, to: None, pre, clause: c, post: vec![], nondet }) };
        preds[succ.0 as usize].as_ref()?;
        // The state in `succ`: its phis take their value from this edge, the registers this
        // block defined their new value, the rest stay.
        let succ_block = self.f.block(succ);
        let mut post = vec![];
        for (k, (v, w)) in self.state.iter().enumerate() {
            let incoming = succ_block.insts.iter().find_map(|i| match &i.kind {
                InstKind::Phi { incoming } if i.result == Some(*v) => Some(incoming.iter().find(|(from, _)| *from == b.id).map(|(_, o)| o.clone())),
                _ => None,
            });
            let term = match incoming {
                Some(Some(o)) if self.width_of(&o) == Some(*w) => self.operand(&o, &locals, &mut c),
                Some(_) => None,
                None => Some(locals.get(v).cloned().unwrap_or_else(|| format!("s{k}"))),
            };
            let n = c.var(format!("n{k}"), *w);
            if let Some(t) = term {
                c.body.push(format!("(= {n} {t})"));
            }
            post.push(n);
        }
        Some(Edge { from: b.id, to: Some(succ), pre, clause: c, post, nondet })
    }
}

/// One clause of the encoding: the step from block `from` into `to` (`None`: `from` is a
/// target, and the clause is the query). Its variables: the state before (`s0`, `s1`, ...),
/// after (`post`: `n0`, `n1`, ...), the block's registers (`l…`) and unknowns (`f…`).
pub(crate) struct Edge {
    pub(crate) from: BlockId,
    pub(crate) to: Option<BlockId>,
    /// The predicate of `from` over the state before: the clause's premise besides `clause`.
    pub(crate) pre: String,
    pub(crate) clause: Clause,
    pub(crate) post: Vec<String>,
    /// The locals holding the results of `from`'s `__VERIFIER_nondet_*` calls, in call order,
    /// with their widths (a path's values of them are its nondet stream).
    pub(crate) nondet: Vec<(String, u32)>,
}

/// The function's steps, as [`encode`] renders them and [`kinduction`] unrolls them.
pub struct Transitions {
    pub(crate) theory: Theory,
    /// The predicate of each block, by block index (`None`: not on a path to a target).
    pub(crate) predicates: Vec<Option<String>>,
    /// The state registers and their widths, in predicate argument order.
    pub(crate) state: Vec<(ValueId, u32)>,
    pub(crate) entry: BlockId,
    pub(crate) edges: Vec<Edge>,
}

/// Most (blocks on the way to a target) × (state registers) an encoding may have.
const MAX_STATE_CELLS: usize = 2_000_000;

/// Encodes `f` in `theory`; `None` when no block is a target, or when the function is too
/// large to encode (`MAX_STATE_CELLS`).
pub fn encode(f: &Function, theory: Theory, stop: &dyn Fn() -> bool) -> Option<HornProblem> {
    let t = transitions(f, theory, stop)?;
    let sorts: Vec<String> = t.state.iter().map(|(_, w)| theory.sort(*w)).collect();
    let mut out = String::new();
    for p in t.predicates.iter().flatten() {
        let _ = writeln!(out, "(declare-fun {p} ({}) Bool)", sorts.join(" "));
    }
    // Entry: any parameters, any other registers.
    {
        let mut c = Clause::new(theory);
        let args: Vec<String> = t.state.iter().enumerate().map(|(k, (_, w))| c.var(format!("s{k}"), *w)).collect();
        let p = t.predicates[t.entry.0 as usize].as_ref().expect("the entry leads to a target");
        out.push_str(&c.render(&if args.is_empty() { p.clone() } else { format!("({p} {})", args.join(" ")) }));
    }
    for (k, e) in t.edges.iter().enumerate() {
        if k % 256 == 0 && stop() {
            return None;
        }
        let head = match e.to {
            None => "false".to_string(),
            Some(to) => {
                let p = t.predicates[to.0 as usize].as_ref().expect("edges lead to blocks with predicates");
                if e.post.is_empty() { p.clone() } else { format!("({p} {})", e.post.join(" ")) }
            }
        };
        let mut c = e.clause.clone();
        c.body.insert(0, e.pre.clone());
        out.push_str(&c.render(&head));
    }
    let registers = t.state.iter().map(|(v, _)| f.value_name(*v).to_string()).collect();
    Some(HornProblem { smtlib: out, predicates: t.predicates, registers })
}

/// The steps of `f` in `theory` (see [`encode`]).
pub fn transitions(f: &Function, theory: Theory, stop: &dyn Fn() -> bool) -> Option<Transitions> {
    let targets: Vec<BlockId> = f.target_blocks();
    if targets.is_empty() {
        return None;
    }
    // Blocks from which a target can be reached (the others need no predicate).
    let mut preds_of: HashMap<BlockId, Vec<BlockId>> = HashMap::new();
    for b in &f.blocks {
        for s in b.term.successors() {
            preds_of.entry(s).or_default().push(b.id);
        }
    }
    let mut useful: BTreeSet<BlockId> = targets.iter().copied().collect();
    let mut stack = targets.clone();
    while let Some(b) = stack.pop() {
        for &p in preds_of.get(&b).into_iter().flatten() {
            if useful.insert(p) {
                stack.push(p);
            }
        }
    }
    if !useful.contains(&f.entry()) {
        return None;
    }
    // The state: parameters, phis, and registers used outside their block.
    let mut def_block: HashMap<ValueId, BlockId> = HashMap::new();
    for b in &f.blocks {
        for i in &b.insts {
            if let Some(r) = i.result {
                def_block.insert(r, b.id);
            }
        }
    }
    let mut chosen: BTreeSet<ValueId> = f.params.iter().map(|p| p.value).collect();
    for b in &f.blocks {
        for i in &b.insts {
            if let (InstKind::Phi { .. }, Some(r)) = (&i.kind, i.result) {
                chosen.insert(r);
            }
            match &i.kind {
                // A phi's incoming value travels on its edge: it is a register of the state only
                // when it was defined in another block than the incoming one.
                InstKind::Phi { incoming } => {
                    for (from, o) in incoming {
                        if let Operand::Value(v) = o {
                            if def_block.get(v).is_some_and(|d| d != from) {
                                chosen.insert(*v);
                            }
                        }
                    }
                }
                kind => {
                    for o in kind.operands() {
                        if let Operand::Value(v) = o {
                            if def_block.get(v).is_some_and(|d| *d != b.id) {
                                chosen.insert(*v);
                            }
                        }
                    }
                }
            }
        }
        for o in b.term.operands() {
            if let Operand::Value(v) = o {
                if def_block.get(v).is_some_and(|d| *d != b.id) {
                    chosen.insert(*v);
                }
            }
        }
    }
    let state: Vec<(ValueId, u32)> =
        chosen.into_iter().filter_map(|v| sort_width(f.value_type(v)).filter(|w| theory.encodes(*w)).map(|w| (v, w))).collect();
    // Every clause names the whole state twice: a function with many blocks and registers
    // would give gigabytes of text (and Spacer no answer). Such functions are not encoded.
    if useful.len().saturating_mul(state.len()) > MAX_STATE_CELLS {
        return None;
    }
    let in_state = state.iter().enumerate().map(|(k, (v, _))| (*v, k)).collect();
    let enc = Encoder { f, theory, state, in_state };
    let e = &enc;
    let predicates: Vec<Option<String>> = f.blocks.iter().map(|b| useful.contains(&b.id).then(|| format!("P{}", b.id.0))).collect();
    let mut edges: Vec<Edge> = vec![];
    for b in &f.blocks {
        if predicates[b.id.0 as usize].is_none() {
            continue;
        }
        // Each edge names the whole state: a large function takes seconds to encode.
        if stop() {
            return None;
        }
        if b.target.is_some() {
            // Entering a target is reaching it: the query.
            edges.extend(enc.edge(b, &predicates, None, &|_, _| None));
            continue;
        }
        match &b.term {
            Terminator::Branch { cond, then_bb, else_bb } => {
                for (succ, bit) in [(*then_bb, theory.lit(1, 1)), (*else_bb, theory.lit(0, 1))] {
                    let cond = cond.clone();
                    let guard = move |l: &HashMap<ValueId, String>, c: &mut Clause| {
                        (e.width_of(&cond) == Some(1)).then(|| e.operand(&cond, l, c).map(|t| format!("(= {t} {bit})"))).flatten()
                    };
                    edges.extend(enc.edge(b, &predicates, Some(succ), &guard));
                }
            }
            Terminator::Switch { value, default, cases } => {
                let w = enc.width_of(value);
                for (k, succ) in cases.iter().map(|(k, s)| (Some(*k), *s)).chain(std::iter::once((None, *default))) {
                    let value = value.clone();
                    let keys: Vec<u64> = cases.iter().map(|(k, _)| *k).collect();
                    let guard = move |l: &HashMap<ValueId, String>, c: &mut Clause| {
                        let w = w?;
                        let t = e.operand(&value, l, c)?;
                        Some(match k {
                            Some(k) => format!("(= {t} {})", theory.lit(k, w)),
                            None if keys.is_empty() => "true".to_string(),
                            None => format!("(and {})", keys.iter().map(|k| format!("(distinct {t} {})", theory.lit(*k, w))).collect::<Vec<_>>().join(" ")),
                        })
                    };
                    edges.extend(enc.edge(b, &predicates, Some(succ), &guard));
                }
            }
            other => {
                for succ in other.successors() {
                    edges.extend(enc.edge(b, &predicates, Some(succ), &|_, _| None));
                }
            }
        }
    }
    Some(Transitions { theory, predicates, state: enc.state, entry: f.entry(), edges })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Inst, Param, ParamExt};

    /// `f(x)`: entry: c = x <s 10; br c, then (target), else (return).
    fn small() -> Function {
        let x = ValueId(0);
        let c = ValueId(1);
        let inst = |result, ty, kind| Inst { result, ty, kind, line: None };
        let block = |id: u32, label: &str, insts, term, target| Block { id: BlockId(id), label: label.into(), insts, term, target };
        Function {
            name: "f".into(),
            params: vec![Param { value: x, name: "x".into(), ty: Ty::Int(32), ext: ParamExt::None, c_type: None, pointee_bytes: None, buffer_bytes: None, front_bytes: 0 }],
            ret: Ty::Void,
            blocks: vec![
                block(
                    0,
                    "entry",
                    vec![inst(Some(c), Ty::Int(1), InstKind::ICmp { pred: IntPredicate::Slt, lhs: Operand::Value(x), rhs: Operand::Int { width: 32, value: 10 } })],
                    Terminator::Branch { cond: Operand::Value(c), then_bb: BlockId(1), else_bb: BlockId(2) },
                    None,
                ),
                block(1, "if.then", vec![], Terminator::Return(None), Some(0)),
                block(2, "if.end", vec![], Terminator::Return(None), None),
            ],
            value_types: vec![Ty::Int(32), Ty::Int(1)],
            value_names: vec!["x".into(), "cmp".into()],
            in_cycle: vec![false; 3],
        }
    }

    #[test]
    fn k_induction_finds_the_short_path_and_proves_a_dead_branch() {
        use super::kinduction::{search, KInductionAnswer, Unrolling};
        let t = transitions(&small(), Theory::BitVectors, &|| false).expect("a target");
        // The path: the entry, then the target; its input `x` below 10, as the branch wants.
        match search(&Unrolling::new(&t).expect("small"), &|| false) {
            KInductionAnswer::BaseFails { steps: 1, inputs } => {
                assert_eq!(inputs.registers.len(), 1);
                assert!((inputs.registers[0].1 as u32 as i32) < 10, "{inputs:?}");
            }
            other => panic!("{other:?}"),
        }
        // `10 < 5` instead of `x < 10`: no step enters the target, from the entry or anywhere.
        let mut f = small();
        f.blocks[0].insts[0].kind = InstKind::ICmp { pred: IntPredicate::Slt, lhs: Operand::Int { width: 32, value: 10 }, rhs: Operand::Int { width: 32, value: 5 } };
        let t = transitions(&f, Theory::BitVectors, &|| false).expect("a target");
        assert_eq!(search(&Unrolling::new(&t).expect("small"), &|| false), KInductionAnswer::Proved { k: 1 });
        // A stop asked for ends the search.
        assert!(matches!(search(&Unrolling::new(&t).expect("small"), &|| true), KInductionAnswer::Unknown(_)));
    }

    #[test]
    fn blocks_off_the_way_to_a_target_get_no_predicate_and_the_target_is_the_query() {
        for theory in [Theory::BitVectors, Theory::Integers] {
            let p = encode(&small(), theory, &|| false).expect("a target");
            assert_eq!(p.predicates, vec![Some("P0".to_string()), Some("P1".to_string()), None], "{theory:?}");
            assert_eq!(p.registers, vec!["x".to_string()]);
            assert!(p.smtlib.lines().any(|l| l.contains("(P1 s0)") && l.contains(" false)")), "{}", p.smtlib);
            // The branch to the target asks for the comparison's bit.
            let signed = if theory == Theory::BitVectors { "(bvslt s0 (_ bv10 32))" } else { "(ite (< s0 2147483648) s0 (- s0 4294967296))" };
            assert!(p.smtlib.contains(signed), "{theory:?}: {}", p.smtlib);
        }
    }

    #[test]
    fn unencoded_operations_are_unconstrained_not_guessed() {
        let mut f = small();
        // c = x >> y with a variable count: no equality may constrain it.
        f.blocks[0].insts[0].kind = InstKind::Binary { op: BinOp::Shl, lhs: Operand::Value(ValueId(0)), rhs: Operand::Value(ValueId(0)) };
        f.blocks[0].insts[0].ty = Ty::Int(32);
        f.value_types[1] = Ty::Int(32);
        let p = encode(&f, Theory::BitVectors, &|| false).expect("a target");
        assert!(!p.smtlib.contains("bvshl"), "{}", p.smtlib);
        assert!(!p.smtlib.contains("(= l1 "), "{}", p.smtlib);
    }

    #[test]
    fn literals_are_masked_to_their_width() {
        assert_eq!(bv(0x1ff, 8), "(_ bv255 8)");
        assert_eq!(Theory::Integers.lit(u64::MAX, 64), u64::MAX.to_string());
        assert_eq!(modulus(64), "18446744073709551616");
    }
}
