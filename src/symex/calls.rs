//! Calls: the SV-COMP environment (`__VERIFIER_*`), a few library functions and LLVM intrinsics
//! with exact models, and everything else as an unknown external call (result ⋆, and every
//! object it could reach is forgotten).

use super::{Executor, State, SymVal, Tests};
use crate::expr::{BvOp, ExprId, Sort};
use crate::ir::{Callee, IntPredicate, Ty, ValueId};

/// Longest `memset`/`memcpy` modelled byte by byte; longer or symbolic lengths havoc the target.
const MAX_MEM_INTRINSIC_BYTES: u64 = 4096;

/// The C type of `__VERIFIER_nondet_<suffix>`.
pub fn nondet_c_type(suffix: &str) -> Option<&'static str> {
    Some(match suffix {
        "int" => "int",
        "uint" | "unsigned" | "u32" => "unsigned int",
        "char" => "char",
        "uchar" | "u8" => "unsigned char",
        "short" => "short",
        "ushort" | "u16" => "unsigned short",
        "long" => "long",
        "ulong" => "unsigned long",
        "longlong" => "long long",
        "ulonglong" => "unsigned long long",
        "bool" | "_Bool" => "_Bool",
        "size_t" => "unsigned long",
        "loff_t" => "long",
        "u64" => "unsigned long",
        _ => return None,
    })
}

/// Library functions that write no memory visible to the program, whatever their arguments.
/// (`printf` is not one: `%n` stores through a pointer argument; see [`OUTPUT_ONLY`].)
const PURE_EXTERNALS: &[&str] = &[
    "strlen", "strnlen", "strcmp", "strncmp", "memcmp", "strchr", "strrchr", "strstr", "isalpha", "isdigit",
    "isalnum", "isspace", "isupper", "islower", "isprint", "ispunct", "isxdigit", "toupper", "tolower", "puts",
    "putchar", "rand", "atoi", "atol", "atoll", "abs", "labs", "llabs",
];

/// Output functions that write program memory only through their pointer arguments after the
/// format (`%n`): those objects are forgotten, nothing else is.
const OUTPUT_ONLY: &[(&str, usize)] = &[("printf", 1), ("fprintf", 2), ("dprintf", 2)];

impl Executor<'_> {
    /// A call of a `--pure` function: a fresh unknown for its result, recorded with its
    /// arguments for mixed concrete-symbolic solving ([`super::PureCall`]). No memory changes.
    /// Inside a loop iteration the same symbol would stand for every iteration's result, so
    /// there the result is ⋆.
    fn pure_call(&mut self, sig: &crate::ir::PureSignature, args: &[SymVal], ty: &Ty) -> SymVal {
        let name = sig.name.clone();
        if self.inputs.iteration_depth > 0 {
            return self.star_because(ty, || format!("the result of pure `{name}` inside a loop (mixed solving covers calls outside loops)"));
        }
        let mut values = vec![];
        for a in args {
            match a {
                SymVal::Int(e) => values.push(*e),
                _ => return self.star_because(ty, || format!("the result of pure `{name}` with an argument the analysis does not know")),
            }
        }
        let Ty::Int(w) = ty else { return self.star_of(ty) };
        let k = self.inputs.pure_calls.len();
        let sort = if *w == 1 { Sort::Bool } else { Sort::Bv(*w) };
        let result = self.pool.symbol(&format!("{name}()#{k}"), sort, crate::expr::SymbolKind::Aux);
        self.inputs.pure_calls.push(super::PureCall { function: name, args: values, result });
        SymVal::Int(result)
    }

    /// `__apc_sign_of(d)`, a library comparison's result (see [`crate::load::comparisons`]):
    /// 0 when `d` is, else a fresh unknown with the sign of `d`. Inside a loop iteration one
    /// symbol would stand for every iteration's result, so there it is ⋆.
    fn sign_of(&mut self, d: Option<&SymVal>, ty: &Ty, tests: &mut Tests) -> SymVal {
        let (Some(SymVal::Int(d)), Ty::Int(w)) = (d, ty) else { return self.star_of(ty) };
        let (d, w) = (*d, *w);
        if self.inputs.iteration_depth > 0 {
            return self.star_because(ty, || "the magnitude of a string or memory comparison's result inside a loop (the C library promises its sign only)".into());
        }
        if self.pool.sort(d) != Sort::Bv(w) {
            return self.star_of(ty);
        }
        self.inputs.comparison_results += 1;
        let s = self.pool.symbol(&format!("cmp#{}", self.inputs.comparison_results), Sort::Bv(w), crate::expr::SymbolKind::Aux);
        let zero = self.pool.bv(w, 0);
        let d_zero = self.pool.cmp(IntPredicate::Eq, d, zero);
        let d_neg = self.pool.cmp(IntPredicate::Slt, d, zero);
        let s_neg = self.pool.cmp(IntPredicate::Slt, s, zero);
        let s_nonzero = self.pool.cmp(IntPredicate::Ne, s, zero);
        let same_sign = self.pool.cmp(IntPredicate::Eq, s_neg, d_neg);
        let sign = self.pool.and([s_nonzero, same_sign]);
        tests.push(self.pool.or([d_zero, sign]));
        SymVal::Int(self.pool.ite(d_zero, zero, s))
    }

    /// Whether every value address `a` may take (through `ite`s) is NULL, a function's
    /// address, or the start of an input buffer (a pointer a caller passed).
    fn caller_pointer_or_function(&self, a: crate::expr::ExprId) -> bool {
        use crate::expr::Expr;
        match self.pool.get(a).clone() {
            Expr::Ite(_, x, y) => self.caller_pointer_or_function(x) && self.caller_pointer_or_function(y),
            _ if self.pool.as_const(a) == Some(0) => true,
            _ if self.inputs.function_at_address(a).is_some() => true,
            _ => self.inputs.object_at_address(a).is_some_and(|o| self.inputs.is_input_buffer(o)),
        }
    }

    /// `__apc_function_pointer(fp, f1, ..., fk)` (see `load::devirt`): a caller's pointer `fp`
    /// is one of the functions when the run goes on past the call through it.
    fn function_pointer_fact(&mut self, args: &[SymVal], tests: &mut Tests) {
        let Some((fp, candidates)) = args.split_first() else { return };
        let address = match fp {
            SymVal::Ptr { obj, offset } if self.inputs.is_input_buffer(*obj) => {
                self.inputs.mark_function_pointer(*obj);
                let base = self.inputs.object_address(self.pool, *obj);
                self.pool.bin(crate::ir::BinOp::Add, base, *offset)
            }
            SymVal::Addr(a) if self.caller_pointer_or_function(*a) => *a,
            SymVal::Null => self.pool.bv(64, 0),
            _ => return,
        };
        let mut one_of = vec![];
        for c in candidates {
            match c {
                SymVal::Addr(f) if self.inputs.function_at_address(*f).is_some() => one_of.push(self.pool.eq(address, *f)),
                _ => return,
            }
        }
        tests.push(self.pool.or(one_of));
    }

    pub(super) fn call(
        &mut self,
        st: &mut State,
        callee: &Callee,
        args: &[SymVal],
        ty: &Ty,
        result: Option<ValueId>,
        tests: &mut Tests,
    ) -> SymVal {
        let name = match callee {
            Callee::Direct(n) => n.as_str(),
            Callee::Unmatched(fp) => {
                // A pointer a caller passed is NULL (the call faults) or one of the program's
                // functions, which the comparisons before this call ruled out.
                match self.operand(st, fp) {
                    SymVal::Ptr { obj, .. } if self.inputs.is_input_buffer(obj) => {
                        self.inputs.mark_function_pointer(obj);
                        tests.push(self.pool.bool(false));
                        return self.star_of(ty);
                    }
                    SymVal::Null => {
                        tests.push(self.pool.bool(false));
                        return self.star_of(ty);
                    }
                    // A choice between such pointers and the program's functions (`h->cb ?
                    // h->cb : default`): every one of them matched a candidate or faults.
                    SymVal::Addr(a) if self.caller_pointer_or_function(a) => {
                        tests.push(self.pool.bool(false));
                        return self.star_of(ty);
                    }
                    _ => {}
                }
                st.havoc_all(self.pool, self.inputs);
                return self.star_because(ty, || "the result of an indirect call".into());
            }
            Callee::Indirect(fp) => {
                if let SymVal::Ptr { obj, .. } = self.operand(st, fp) {
                    self.inputs.mark_function_pointer(obj);
                }
                st.havoc_all(self.pool, self.inputs);
                return self.star_because(ty, || "the result of an indirect call".into());
            }
            Callee::InlineAsm => {
                st.havoc_all(self.pool, self.inputs);
                return self.star_because(ty, || "the result of inline assembly".into());
            }
        };
        if name.starts_with("__VERIFIER_nondet_") {
            return self.nondet(st, ty);
        }
        if name == crate::load::FUNCTION_POINTER_FACT {
            self.function_pointer_fact(args, tests);
            return SymVal::Unknown;
        }
        if let Some(sig) = self.program.pure_functions.iter().find(|s| s.name == name) {
            return self.pure_call(sig, args, ty);
        }
        if name == crate::load::comparisons::SIGN_OF {
            return self.sign_of(args.first(), ty, tests);
        }
        // setjmp returns a second time after a longjmp, with memory as the longjmp left it.
        if matches!(name, "setjmp" | "_setjmp" | "sigsetjmp" | "__sigsetjmp") {
            st.havoc_all(self.pool, self.inputs);
            return self.star_of(ty);
        }
        let int_arg = |k: usize| match args.get(k) {
            Some(SymVal::Int(e)) => Some(*e),
            _ => None,
        };
        match name {
            "__VERIFIER_assume" | "llvm.assume" => {
                if let Some(c) = int_arg(0) {
                    let c = self.truthy(c);
                    tests.push(c);
                }
                return SymVal::Unknown;
            }
            "abs" | "labs" | "llabs" => {
                if let Some(x) = int_arg(0) {
                    return SymVal::Int(self.abs(x));
                }
            }
            // free() writes allocator bookkeeping into the block it frees. realloc() frees the
            // old block (or, when it fails, keeps it: forgotten either way) and gives a block of
            // its own whose bytes are unknown: the old block's first bytes are copied natively,
            // but how many (its size) the analysis does not track, and the bytes past them are
            // indeterminate.
            "free" | "realloc" => {
                match args.first() {
                    Some(SymVal::Ptr { obj, .. }) => st.havoc(self.pool, self.inputs, *obj),
                    Some(SymVal::Null) => {}
                    _ => st.havoc_all(self.pool, self.inputs),
                }
                let (Some(site), "realloc") = (result, name) else { return SymVal::Unknown };
                let obj = self.inputs.heap_object(self.pool, site, "heap", false);
                return SymVal::Ptr { obj, offset: self.pool.bv(64, 0) };
            }
            "malloc" | "calloc" => {
                let Some(site) = result else { return SymVal::Unknown };
                let obj = self.inputs.heap_object(self.pool, site, "heap", name == "calloc");
                return SymVal::Ptr { obj, offset: self.pool.bv(64, 0) };
            }
            "memset" => {
                self.memset(st, args);
                return args.first().cloned().unwrap_or(SymVal::Unknown);
            }
            "memcpy" | "memmove" => {
                self.memcpy(st, args);
                return args.first().cloned().unwrap_or(SymVal::Unknown);
            }
            _ => {}
        }
        if let Some(intrinsic) = name.strip_prefix("llvm.") {
            let base = intrinsic.split('.').next().unwrap_or("");
            let (a, b) = (int_arg(0), int_arg(1));
            let pred = match base {
                "smax" => Some(IntPredicate::Sgt),
                "smin" => Some(IntPredicate::Slt),
                "umax" => Some(IntPredicate::Ugt),
                "umin" => Some(IntPredicate::Ult),
                _ => None,
            };
            match (base, pred, a, b) {
                (_, Some(p), Some(a), Some(b)) => {
                    let c = self.pool.cmp(p, a, b);
                    return SymVal::Int(self.pool.ite(c, a, b));
                }
                ("abs", _, Some(a), _) => return SymVal::Int(self.abs(a)),
                ("expect", _, Some(a), _) => return SymVal::Int(a),
                ("memset", ..) => {
                    self.memset(st, args);
                    return SymVal::Unknown;
                }
                ("memcpy" | "memmove", ..) => {
                    self.memcpy(st, args);
                    return SymVal::Unknown;
                }
                _ => {
                    // Other intrinsics may write through their pointer arguments.
                    for a in args {
                        match a {
                            SymVal::Ptr { obj, .. } => st.havoc(self.pool, self.inputs, *obj),
                            SymVal::Addr(_) => st.havoc_all(self.pool, self.inputs),
                            _ => {}
                        }
                    }
                    return self.star_of(ty);
                }
            }
        }
        if let Some(&(_, first)) = OUTPUT_ONLY.iter().find(|(n, _)| *n == name) {
            for a in args.iter().skip(first) {
                match a {
                    SymVal::Ptr { obj, .. } => st.havoc(self.pool, self.inputs, *obj),
                    SymVal::Unknown | SymVal::Addr(_) => st.havoc_all(self.pool, self.inputs),
                    _ => {}
                }
            }
        } else if !PURE_EXTERNALS.contains(&name) {
            self.unknown_external(st, args);
        }
        self.star_because(ty, || format!("the result of `{name}` (no definition in the bitcode)"))
    }

    /// An external function may write every object reachable to it: its pointer arguments'
    /// objects and everything that escaped before (globals included).
    pub(super) fn unknown_external(&mut self, st: &mut State, args: &[SymVal]) {
        if args.iter().any(|a| matches!(a, SymVal::Unknown | SymVal::Addr(_))) {
            st.havoc_all(self.pool, self.inputs);
            return;
        }
        for a in args {
            if let SymVal::Ptr { obj, .. } = a {
                self.inputs.mark_escaped(*obj);
            }
        }
        let escaped: Vec<_> = self.inputs.escaped().collect();
        for o in escaped {
            st.havoc(self.pool, self.inputs, o);
        }
    }

    /// `c ≠ 0` as a Boolean.
    fn truthy(&mut self, c: ExprId) -> ExprId {
        match self.pool.sort(c) {
            Sort::Bool => c,
            Sort::Bv(w) => {
                let zero = self.pool.bv(w, 0);
                self.pool.cmp(IntPredicate::Ne, c, zero)
            }
            Sort::Array { .. } => self.pool.star(Sort::Bool),
        }
    }

    fn abs(&mut self, x: ExprId) -> ExprId {
        let w = self.pool.width(x);
        let zero = self.pool.bv(w, 0);
        let neg = self.pool.bin(BvOp::Sub, zero, x);
        let is_neg = self.pool.cmp(IntPredicate::Slt, x, zero);
        self.pool.ite(is_neg, neg, x)
    }

    /// The next value of the nondet input stream, truncated to the call's width.
    fn nondet(&mut self, st: &mut State, ty: &Ty) -> SymVal {
        let Ty::Int(w) = ty else {
            // Pointers, floats: unknown, but the call still consumes a stream position.
            let one = self.pool.bv(64, 1);
            st.nondet_index = self.pool.bin(BvOp::Add, st.nondet_index, one);
            return self.star_of(ty);
        };
        let stream = self.inputs.nondet_stream(self.pool);
        let index = st.nondet_index;
        let raw = self.pool.select(stream, index);
        let v = if *w == 1 { self.pool.low_bit(raw) } else { self.pool.trunc(raw, *w) };
        let one = self.pool.bv(64, 1);
        st.nondet_index = self.pool.bin(BvOp::Add, index, one);
        SymVal::Int(v)
    }

    fn const_len(&self, v: Option<&SymVal>) -> Option<u64> {
        match v {
            Some(SymVal::Int(e)) => self.pool.as_const(*e).filter(|&n| n <= MAX_MEM_INTRINSIC_BYTES),
            _ => None,
        }
    }

    fn memset(&mut self, st: &mut State, args: &[SymVal]) {
        let len = self.const_len(args.get(2));
        match (args.first(), args.get(1), len) {
            (Some(SymVal::Ptr { obj, offset }), Some(SymVal::Int(val)), Some(n)) => {
                let byte = self.pool.resize(*val, 8);
                let mut mem = st.memory(self.pool, self.inputs, *obj);
                for k in 0..n {
                    let kk = self.pool.bv(64, k);
                    let off = self.pool.bin(BvOp::Add, *offset, kk);
                    mem = self.pool.store(mem, off, byte, 8);
                }
                st.set_memory(*obj, mem);
            }
            (Some(SymVal::Ptr { obj, .. }), ..) => st.havoc(self.pool, self.inputs, *obj),
            _ => st.havoc_all(self.pool, self.inputs),
        }
    }

    fn memcpy(&mut self, st: &mut State, args: &[SymVal]) {
        let len = self.const_len(args.get(2));
        match (args.first(), args.get(1), len) {
            (Some(SymVal::Ptr { obj: d, offset: doff }), Some(SymVal::Ptr { obj: s, offset: soff }), Some(n)) => {
                let src = st.memory(self.pool, self.inputs, *s);
                let bytes: Vec<ExprId> = (0..n)
                    .map(|k| {
                        let kk = self.pool.bv(64, k);
                        let off = self.pool.bin(BvOp::Add, *soff, kk);
                        self.pool.load(src, off, 8)
                    })
                    .collect();
                let mut mem = st.memory(self.pool, self.inputs, *d);
                for (k, b) in bytes.into_iter().enumerate() {
                    let kk = self.pool.bv(64, k as u64);
                    let off = self.pool.bin(BvOp::Add, *doff, kk);
                    mem = self.pool.store(mem, off, b, 8);
                }
                st.set_memory(*d, mem);
            }
            (Some(SymVal::Ptr { obj, .. }), ..) => st.havoc(self.pool, self.inputs, *obj),
            _ => st.havoc_all(self.pool, self.inputs),
        }
    }
}
