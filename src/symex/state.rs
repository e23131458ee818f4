//! The symbolic state θ and the table of inputs and memory objects shared by all paths.

use crate::expr::{BvOp, Expr, ExprId, ExprPool, Sort, SymbolKind};
use crate::ir::IntPredicate;
use crate::ir::{Global, GlobalId, ValueId};
use std::collections::{BTreeSet, HashMap};

/// A memory object (index into [`Inputs::objects`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub u32);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// The buffer a pointer parameter points to; its contents are inputs.
    ParamBuffer { param: String },
    Global(GlobalId),
    /// An `alloca` that mem2reg could not promote (arrays, address-taken locals).
    Stack,
    /// `malloc`/`calloc`: may also be null natively, so comparisons with null stay unknown.
    Heap,
    /// A buffer the input's pointer at byte `offset` of input buffer `parent` points to (a
    /// pointer field of a struct parameter, `*argv`-like arrays): like a parameter's buffer, a
    /// fresh buffer whose bytes are inputs; the witness writes its address into the parent.
    Pointee { parent: ObjectId, offset: u64 },
}

/// Deepest chain of pointees (`**p`) a witness builds: the analysis, the DSE's lazy pointees and
/// the fuzzer's shapes all stop there (they use it as [`crate::witness::MAX_POINTEE_DEPTH`]).
pub const MAX_POINTEE_DEPTH: usize = 3;
/// Largest byte offset of a pointer slot in an input buffer that gets a pointee.
const MAX_POINTEE_SLOT: u64 = 1 << 12;

#[derive(Clone, Debug)]
pub struct ObjectInfo {
    pub id: ObjectId,
    pub name: String,
    pub kind: ObjectKind,
    /// Size in bytes when known.
    pub size: Option<u64>,
    /// The array holding the object's initial contents.
    pub initial: ExprId,
    /// Whether the object can never change (a constant global).
    pub constant: bool,
    /// Whether the object may overlap another one marked so (see [`Global::may_share_address`]).
    pub may_share_address: bool,
}

/// The value of an SSA register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SymVal {
    /// An integer (bit-vector) or `i1` (Boolean) expression.
    Int(ExprId),
    /// A pointer into a known object at a 64-bit byte offset.
    Ptr { obj: ObjectId, offset: ExprId },
    Null,
    /// A pointer whose object is not known, by its 64-bit address (loaded from memory the
    /// analysis cannot tie to an object, converted from an integer, or chosen between objects).
    /// Reads through it are ⋆ and writes through it may change any object; comparisons and
    /// pointer arithmetic stay exact on the address.
    Addr(ExprId),
    /// Anything else: pointers the analysis lost track of, floating point, aggregates.
    Unknown,
}

pub use crate::ir::{ADDRESS_LIMIT, LOWEST_ADDRESS};

/// The inputs of the analysed function and every memory object met, shared by all backbones so
/// that their path conditions speak about the same symbols.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// Integer parameters: (name, symbol, width).
    pub params: Vec<(String, ExprId, u32)>,
    pub objects: Vec<ObjectInfo>,
    /// The nondet input stream: an array from call number (64 bits) to a 64-bit value whose low
    /// bits are the call's result.
    pub nondet_stream: Option<ExprId>,
    escaped: BTreeSet<ObjectId>,
    /// Facts every native run satisfies (ranges of object addresses): conjoined to the APC.
    pub axioms: Vec<ExprId>,
    /// Address symbol `&name` ↦ its object.
    addresses: HashMap<ExprId, ObjectId>,
    /// (input buffer, byte offset) ↦ the buffer the pointer stored there points to.
    pointees: HashMap<(ObjectId, u64), ObjectId>,
    /// Nesting of loop iterations being executed: there, memory symbols stand for contents at a
    /// loop's entry, not for inputs, so a load from them is no input pointer slot.
    pub(crate) iteration_depth: u32,
    param_objects: HashMap<String, ObjectId>,
    global_objects: HashMap<GlobalId, ObjectId>,
    site_objects: HashMap<ValueId, ObjectId>,
    /// Calls of `--pure` functions executed so far, outside loops.
    pub pure_calls: Vec<PureCall>,
    /// Library comparison results given a symbol of their own so far (`cmp#k`).
    pub(crate) comparison_results: u32,
    /// Address symbols of the functions met (`&name()`), in the order met.
    functions: Vec<(ExprId, String)>,
    /// Input buffers whose pointer was compared with a function's address or called: function
    /// pointers, which a witness sets to a function (or NULL), never to a buffer.
    function_pointers: BTreeSet<ObjectId>,
    /// Input buffers whose address a comparison used (`p == NULL`, `p == q`): only for them does
    /// a model's address 0 mean the witness passes NULL (elsewhere 0 is the solver's default
    /// for an address nothing constrains, and the run dereferences the pointer).
    address_compared: BTreeSet<ObjectId>,
}

/// One executed call of a `--pure` function: its result is the unknown `result`, tied to the
/// function's native value on the arguments by mixed concrete-symbolic solving.
#[derive(Clone, Debug)]
pub struct PureCall {
    pub function: String,
    pub args: Vec<ExprId>,
    pub result: ExprId,
}

impl Inputs {
    pub fn object(&self, id: ObjectId) -> &ObjectInfo {
        &self.objects[id.0 as usize]
    }

    /// `name`, made unique among the objects: symbols are named after objects (their contents at
    /// a loop entry, their address), and two objects sharing a symbol would be one to the solver.
    fn unique_name(&self, name: &str) -> String {
        let taken = |n: &str| self.objects.iter().any(|o| o.name == n);
        if !taken(name) {
            return name.to_string();
        }
        (1..).map(|k| format!("{name}#{k}")).find(|n| !taken(n)).expect("some suffix is free")
    }

    fn add_object(&mut self, name: String, kind: ObjectKind, size: Option<u64>, initial: ExprId, constant: bool) -> ObjectId {
        debug_assert!(!self.objects.iter().any(|o| o.name == name), "object names are unique");
        let id = ObjectId(self.objects.len() as u32);
        self.objects.push(ObjectInfo { id, name, kind, size, initial, constant, may_share_address: false });
        id
    }

    /// The symbol of integer parameter `name`, if the analysis met it.
    pub fn param_input(&self, name: &str) -> Option<ExprId> {
        self.params.iter().find(|(n, _, _)| n == name).map(|(_, s, _)| *s)
    }

    /// The buffer behind pointer parameter `name`, if the analysis met it.
    pub fn param_buffer_object(&self, name: &str) -> Option<&ObjectInfo> {
        self.param_objects.get(name).map(|&id| self.object(id))
    }

    pub fn param_symbol(&mut self, pool: &mut ExprPool, name: &str, width: u32) -> ExprId {
        let sort = if width == 1 { Sort::Bool } else { Sort::Bv(width) };
        let s = pool.symbol(name, sort, SymbolKind::Input);
        if !self.params.iter().any(|(n, _, _)| n == name) {
            self.params.push((name.to_string(), s, width));
        }
        s
    }

    pub fn param_buffer(&mut self, pool: &mut ExprPool, name: &str) -> ObjectId {
        if let Some(&id) = self.param_objects.get(name) {
            return id;
        }
        let oname = self.unique_name(name);
        let initial = pool.symbol(&oname, Sort::MEMORY, SymbolKind::Input);
        let id = self.add_object(oname, ObjectKind::ParamBuffer { param: name.to_string() }, None, initial, false);
        self.param_objects.insert(name.to_string(), id);
        id
    }

    /// The object of a global, with its initializer's known bytes over an unconstrained base.
    pub fn global_object(&mut self, pool: &mut ExprPool, g: &Global) -> ObjectId {
        if let Some(&id) = self.global_objects.get(&g.id) {
            return id;
        }
        let name = self.unique_name(&format!("@{}", g.name));
        let initial = match &g.init {
            Some(bytes) if bytes.iter().all(|b| *b == Some(0)) => {
                let zero = pool.bv(8, 0);
                pool.const_array(64, zero)
            }
            Some(bytes) => {
                let all_known = bytes.iter().all(|b| b.is_some());
                let mut mem = if all_known {
                    let zero = pool.bv(8, 0);
                    pool.const_array(64, zero)
                } else {
                    pool.symbol(&name, Sort::MEMORY, SymbolKind::Input)
                };
                for (k, b) in bytes.iter().enumerate() {
                    match b {
                        Some(0) if all_known => {}
                        Some(v) => {
                            let off = pool.bv(64, k as u64);
                            let val = pool.bv(8, *v as u64);
                            mem = pool.store(mem, off, val, 8);
                        }
                        None => {}
                    }
                }
                mem
            }
            None => pool.symbol(&name, Sort::MEMORY, SymbolKind::Input),
        };
        // Function addresses in the initialiser: the functions' own address symbols, so that a
        // pointer loaded from a table compares exactly with them.
        let mut initial = initial;
        if g.init.is_some() {
            for (off, f) in &g.functions {
                let a = self.function_address(pool, f);
                let at = pool.bv(64, *off);
                initial = pool.store(initial, at, a, 64);
            }
        }
        let id = self.add_object(name, ObjectKind::Global(g.id), Some(g.size), initial, g.is_constant);
        self.objects[id.0 as usize].may_share_address = g.may_share_address;
        self.global_objects.insert(g.id, id);
        // Whatever external code runs may read or write a global.
        self.escaped.insert(id);
        id
    }

    /// The object of an allocation site (`alloca` or `malloc` result `site`).
    pub fn alloca_object(&mut self, pool: &mut ExprPool, site: ValueId, name: &str, size: Option<u64>) -> ObjectId {
        if let Some(&id) = self.site_objects.get(&site) {
            return id;
        }
        // Uninitialised stack memory: an unconstrained symbol.
        let name = self.unique_name(name);
        let initial = pool.symbol(&format!("{name}.uninit"), Sort::MEMORY, SymbolKind::Input);
        let id = self.add_object(name, ObjectKind::Stack, size, initial, false);
        self.site_objects.insert(site, id);
        id
    }

    pub fn heap_object(&mut self, pool: &mut ExprPool, site: ValueId, name: &str, zeroed: bool) -> ObjectId {
        if let Some(&id) = self.site_objects.get(&site) {
            return id;
        }
        let name = &self.unique_name(&format!("{name}{}", self.objects.len()));
        let initial = if zeroed {
            let zero = pool.bv(8, 0);
            pool.const_array(64, zero)
        } else {
            pool.symbol(&format!("{name}.uninit"), Sort::MEMORY, SymbolKind::Input)
        };
        let id = self.add_object(name.to_string(), ObjectKind::Heap, None, initial, false);
        self.site_objects.insert(site, id);
        id
    }

    pub fn nondet_stream(&mut self, pool: &mut ExprPool) -> ExprId {
        *self
            .nondet_stream
            .get_or_insert_with(|| pool.symbol("nondet", Sort::Array { index: 64, elem: 64 }, SymbolKind::Input))
    }

    /// The (unknown) address of an object, as a 64-bit symbol `&name`. The first use records
    /// what every run satisfies: objects other than heap blocks (which may be null) lie in
    /// [4096, 2^47) with room for their size.
    pub fn object_address(&mut self, pool: &mut ExprPool, obj: ObjectId) -> ExprId {
        let name = format!("&{}", self.object(obj).name);
        let a = pool.symbol(&name, Sort::Bv(64), SymbolKind::Input);
        if self.addresses.insert(a, obj).is_none() {
            let info = self.object(obj);
            let end = info.size.unwrap_or(1).min(ADDRESS_LIMIT);
            let limit = pool.bv(64, ADDRESS_LIMIT - end);
            let mut facts = vec![pool.cmp(IntPredicate::Ule, a, limit)];
            let low = pool.bv(64, LOWEST_ADDRESS);
            let mapped = pool.cmp(IntPredicate::Uge, a, low);
            if self.is_input_buffer(obj) {
                // A caller may pass NULL for any pointer, and a pointer field may hold NULL.
                let zero = pool.bv(64, 0);
                let null = pool.eq(a, zero);
                facts.push(pool.or([null, mapped]));
            } else if info.kind != ObjectKind::Heap {
                facts.push(mapped);
            }
            self.axioms.extend(facts);
        }
        a
    }

    /// The address of function `name`, a 64-bit symbol `&name()`: mapped, and distinct from
    /// every other function's (the linker folds no two functions of a program here).
    pub fn function_address(&mut self, pool: &mut ExprPool, name: &str) -> ExprId {
        if let Some((a, _)) = self.functions.iter().find(|(_, n)| n == name) {
            return *a;
        }
        let a = pool.symbol(&format!("&{name}()"), Sort::Bv(64), SymbolKind::Input);
        let (low, limit) = (pool.bv(64, LOWEST_ADDRESS), pool.bv(64, ADDRESS_LIMIT - 1));
        let facts = [pool.cmp(IntPredicate::Uge, a, low), pool.cmp(IntPredicate::Ule, a, limit)];
        self.axioms.extend(facts);
        for (b, _) in self.functions.clone() {
            let same = pool.eq(a, b);
            let differ = pool.not(same);
            self.axioms.push(differ);
        }
        self.functions.push((a, name.to_string()));
        a
    }

    /// The function whose address symbol is `a`.
    pub fn function_at_address(&self, a: ExprId) -> Option<&str> {
        self.functions.iter().find(|(s, _)| *s == a).map(|(_, n)| n.as_str())
    }

    /// The address symbols of the functions met, with their names.
    pub fn function_addresses(&self) -> &[(ExprId, String)] {
        &self.functions
    }

    /// Records that input buffer `obj`'s pointer is used as a function pointer.
    pub fn mark_function_pointer(&mut self, obj: ObjectId) {
        if self.is_input_buffer(obj) {
            self.function_pointers.insert(obj);
        }
    }

    /// Records that a comparison used input buffer `obj`'s address.
    pub fn mark_address_compared(&mut self, obj: ObjectId) {
        if self.is_input_buffer(obj) {
            self.address_compared.insert(obj);
        }
    }

    pub fn is_address_compared(&self, obj: ObjectId) -> bool {
        self.address_compared.contains(&obj)
    }

    pub fn is_function_pointer(&self, obj: ObjectId) -> bool {
        self.function_pointers.contains(&obj)
    }

    /// The address symbol of `obj`, when something took its address.
    pub fn address_symbol(&self, obj: ObjectId) -> Option<ExprId> {
        self.addresses.iter().find(|(_, o)| **o == obj).map(|(a, _)| *a)
    }

    /// The object whose address symbol is `a`.
    pub fn object_at_address(&self, a: ExprId) -> Option<ObjectId> {
        self.addresses.get(&a).copied()
    }

    /// The address of a pointer value, when it has one: `&obj + offset`, 0 for null, the
    /// address of an [`SymVal::Addr`]. Taking an object's address lets it escape: the number
    /// may reach code the analysis does not follow.
    pub fn address_of(&mut self, pool: &mut ExprPool, v: &SymVal) -> Option<ExprId> {
        match v {
            SymVal::Ptr { obj, offset } => {
                let base = self.object_address(pool, *obj);
                Some(pool.bin(BvOp::Add, base, *offset))
            }
            SymVal::Null => Some(pool.bv(64, 0)),
            SymVal::Addr(a) => Some(*a),
            SymVal::Int(e) if matches!(pool.sort(*e), Sort::Bv(64)) => Some(*e),
            _ => None,
        }
    }

    /// The input buffers pointed to from `parent`'s pointer slots, by slot offset.
    pub fn pointees_of(&self, parent: ObjectId) -> Vec<(u64, ObjectId)> {
        let mut v: Vec<(u64, ObjectId)> = self.pointees.iter().filter(|((p, _), _)| *p == parent).map(|((_, o), c)| (*o, *c)).collect();
        v.sort();
        v
    }

    pub fn is_input_buffer(&self, obj: ObjectId) -> bool {
        matches!(self.object(obj).kind, ObjectKind::ParamBuffer { .. } | ObjectKind::Pointee { .. })
    }

    fn pointee_depth(&self, mut obj: ObjectId) -> usize {
        let mut d = 0;
        while let ObjectKind::Pointee { parent, .. } = self.object(obj).kind {
            obj = parent;
            d += 1;
        }
        d
    }

    /// A pointer read from an input buffer's initial contents at a constant offset: the input
    /// is built with a fresh buffer there (as a pointer parameter gets one), so the 8 bytes are
    /// that buffer's address, an axiom of every run the witness can drive.
    fn input_pointer_slot(&mut self, pool: &mut ExprPool, a: ExprId) -> Option<SymVal> {
        if self.iteration_depth > 0 {
            return None;
        }
        let Expr::Load { array, offset, width: 64 } = pool.get(a).clone() else { return None };
        let slot = pool.as_const(offset).filter(|&o| o <= MAX_POINTEE_SLOT)?;
        let parent = self.objects.iter().find(|o| o.initial == array && self.is_input_buffer(o.id))?.id;
        if self.pointee_depth(parent) >= MAX_POINTEE_DEPTH {
            return None;
        }
        let child = match self.pointees.get(&(parent, slot)) {
            Some(&c) => c,
            None => {
                let name = self.unique_name(&format!("{}@{slot}", self.object(parent).name));
                let initial = pool.symbol(&name, Sort::MEMORY, SymbolKind::Input);
                let c = self.add_object(name, ObjectKind::Pointee { parent, offset: slot }, None, initial, false);
                self.pointees.insert((parent, slot), c);
                if self.escaped.contains(&parent) {
                    self.escaped.insert(c);
                }
                let addr = self.object_address(pool, c);
                let fact = pool.eq(a, addr);
                self.axioms.push(fact);
                c
            }
        };
        Some(SymVal::Ptr { obj: child, offset: pool.bv(64, 0) })
    }

    /// The pointer at 64-bit address `a`: `&obj + o` is a pointer into `obj` at offset o,
    /// 0 is null, ⋆ is unknown, a pointer slot of an input buffer points to its pointee,
    /// anything else is an [`SymVal::Addr`].
    pub fn pointer_at(&mut self, pool: &mut ExprPool, a: ExprId) -> SymVal {
        if pool.is_star(a) {
            return SymVal::Unknown;
        }
        if let Some(p) = self.input_pointer_slot(pool, a) {
            return p;
        }
        if pool.as_const(a) == Some(0) {
            return SymVal::Null;
        }
        // Flatten the sum and look for exactly one object address among its terms.
        let mut terms = vec![];
        let mut stack = vec![a];
        while let Some(e) = stack.pop() {
            match pool.get(e) {
                Expr::Bin(BvOp::Add, x, y) => {
                    stack.push(*y);
                    stack.push(*x);
                }
                _ => terms.push(e),
            }
        }
        let bases: Vec<usize> = (0..terms.len()).filter(|&k| self.addresses.contains_key(&terms[k])).collect();
        if let [k] = bases.as_slice() {
            let obj = self.addresses[&terms[*k]];
            let zero = pool.bv(64, 0);
            let offset = terms.iter().enumerate().filter(|(j, _)| j != k).fold(zero, |acc, (_, &t)| pool.bin(BvOp::Add, acc, t));
            return SymVal::Ptr { obj, offset };
        }
        SymVal::Addr(a)
    }

    /// Lets `obj` escape, and with it the pointee buffers its pointer slots point to (code that
    /// can read the slots can write through them).
    pub fn mark_escaped(&mut self, obj: ObjectId) {
        let mut todo = vec![obj];
        while let Some(o) = todo.pop() {
            if self.escaped.insert(o) {
                todo.extend(self.pointees_of(o).into_iter().map(|(_, c)| c));
            }
        }
    }

    pub fn escaped(&self) -> impl Iterator<Item = ObjectId> + '_ {
        self.escaped.iter().copied()
    }
}

/// The symbolic state θ along one path.
#[derive(Clone, Debug, Default)]
pub struct State {
    pub values: HashMap<ValueId, SymVal>,
    /// Current contents of objects written on this path; others hold their initial contents.
    pub mem: HashMap<ObjectId, ExprId>,
    /// Number of nondet calls made so far (64-bit expression).
    pub nondet_index: ExprId,
}

impl State {
    pub fn memory(&self, _pool: &mut ExprPool, inputs: &Inputs, obj: ObjectId) -> ExprId {
        self.mem.get(&obj).copied().unwrap_or_else(|| inputs.object(obj).initial)
    }

    pub fn set_memory(&mut self, obj: ObjectId, contents: ExprId) {
        self.mem.insert(obj, contents);
    }

    /// Forgets the contents of `obj` (unless it is constant).
    pub fn havoc(&mut self, pool: &mut ExprPool, inputs: &Inputs, obj: ObjectId) {
        if !inputs.object(obj).constant {
            let star = pool.star(Sort::MEMORY);
            self.mem.insert(obj, star);
        }
    }

    /// Forgets the contents of every non-constant object: after a write through a lost pointer.
    pub fn havoc_all(&mut self, pool: &mut ExprPool, inputs: &Inputs) {
        for o in 0..inputs.objects.len() {
            self.havoc(pool, inputs, ObjectId(o as u32));
        }
    }
}
