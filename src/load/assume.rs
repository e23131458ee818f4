//! `--assume EXPR`: conditions on the function's parameters that the user guarantees (`len <= 64`,
//! `n > 0 && n < 1000`, `p != 0`).
//!
//! The condition is compiled into the program itself, as a call to `__VERIFIER_assume` at the
//! start of the function under analysis, before anything else sees the module. So every stage
//! honours it the same way, with no special case anywhere: the APC and the DSE add it to their
//! path conditions (as they do for any `__VERIFIER_assume`), and the native runs of replay and
//! fuzzing stop before the target when an input breaks it. A verdict is then a verdict about the
//! inputs that satisfy the assumptions (the report lists them).
//!
//! The language is C's integer expressions over parameter names and integer literals:
//! `|| && ! == != < <= > >= | ^ & << >> + - * / % ~` and parentheses, with C's precedence and
//! C's conversions, in 64 bits: every operand is widened to 64 bits (signed or unsigned as the
//! parameter's C type says, from the debug information; signed without it), and an operation
//! with an unsigned operand is unsigned (so `len <= 64` compares a `size_t` unsigned, and, as in
//! C, `u > -1` is false for an unsigned `u`). A pointer parameter is its address (compare it
//! with 0).

use crate::error::{Error, Result};
use crate::ir::Ty;
use inkwell::builder::Builder;
use inkwell::context::ContextRef;
use inkwell::module::Module;
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue};
use inkwell::IntPredicate;

/// A parsed assumption.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Param(String),
    /// A literal and whether it is unsigned (a `u` suffix, or too large for `long long`).
    Lit(u64, bool),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitOr,
    BitXor,
    BitAnd,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// Binary operators by precedence level, lowest first (C's table).
const LEVELS: &[&[(&str, BinOp)]] = &[
    &[("||", BinOp::Or)],
    &[("&&", BinOp::And)],
    &[("|", BinOp::BitOr)],
    &[("^", BinOp::BitXor)],
    &[("&", BinOp::BitAnd)],
    &[("==", BinOp::Eq), ("!=", BinOp::Ne)],
    &[("<=", BinOp::Le), (">=", BinOp::Ge), ("<", BinOp::Lt), (">", BinOp::Gt)],
    &[("<<", BinOp::Shl), (">>", BinOp::Shr)],
    &[("+", BinOp::Add), ("-", BinOp::Sub)],
    &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Rem)],
];

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    Lit(u64, bool),
    Op(&'static str),
    Open,
    Close,
}

const OPS: &[&str] = &["||", "&&", "==", "!=", "<=", ">=", "<<", ">>", "|", "^", "&", "<", ">", "+", "-", "*", "/", "%", "!", "~"];

fn tokens(text: &str) -> std::result::Result<Vec<Token>, String> {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == '(' {
            out.push(Token::Open);
            i += 1;
        } else if c == ')' {
            out.push(Token::Close);
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &text[start..i];
            // Of C's suffixes only `u` matters here (every value is 64 bits).
            let digits = word.trim_end_matches(['u', 'U', 'l', 'L']);
            let suffix_unsigned = word[digits.len()..].contains(['u', 'U']);
            let v = if let Some(h) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
                u64::from_str_radix(h, 16)
            } else if digits.len() > 1 && digits.starts_with('0') {
                u64::from_str_radix(&digits[1..], 8)
            } else {
                digits.parse::<u64>()
            };
            match v {
                Ok(v) => out.push(Token::Lit(v, suffix_unsigned || v > i64::MAX as u64)),
                _ => return Err(format!("'{word}' is not an integer literal of at most 64 bits")),
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            out.push(Token::Ident(text[start..i].to_string()));
        } else if let Some(op) = OPS.iter().find(|op| text[i..].starts_with(**op)) {
            out.push(Token::Op(op));
            i += op.len();
        } else {
            return Err(format!("unexpected '{c}'"));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.at)
    }

    fn binary(&mut self, level: usize) -> std::result::Result<Expr, String> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(Token::Op(o)) => LEVELS[level].iter().find(|(s, _)| s == o).map(|(_, op)| *op),
                _ => None,
            };
            let Some(op) = op else { return Ok(lhs) };
            self.at += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn unary(&mut self) -> std::result::Result<Expr, String> {
        let op = match self.peek() {
            Some(Token::Op("-")) => Some(UnOp::Neg),
            Some(Token::Op("!")) => Some(UnOp::Not),
            Some(Token::Op("~")) => Some(UnOp::BitNot),
            Some(Token::Op("+")) => {
                self.at += 1;
                return self.unary();
            }
            _ => None,
        };
        if let Some(op) = op {
            self.at += 1;
            return Ok(Expr::Unary(op, Box::new(self.unary()?)));
        }
        match self.toks.get(self.at).cloned() {
            Some(Token::Lit(v, u)) => {
                self.at += 1;
                Ok(Expr::Lit(v, u))
            }
            Some(Token::Ident(n)) => {
                self.at += 1;
                Ok(Expr::Param(n))
            }
            Some(Token::Open) => {
                self.at += 1;
                let e = self.binary(0)?;
                if self.peek() != Some(&Token::Close) {
                    return Err("missing ')'".into());
                }
                self.at += 1;
                Ok(e)
            }
            Some(Token::Close) => Err("unexpected ')'".into()),
            Some(Token::Op(o)) => Err(format!("unexpected '{o}'")),
            None => Err("the expression ends too early".into()),
        }
    }
}

/// Parses one assumption.
pub fn parse(text: &str) -> std::result::Result<Expr, String> {
    let toks = tokens(text)?;
    if toks.is_empty() {
        return Err("empty expression".into());
    }
    let mut p = Parser { toks, at: 0 };
    let e = p.binary(0)?;
    if p.at < p.toks.len() {
        return Err(format!("unexpected {:?} after a complete expression", p.toks[p.at]));
    }
    Ok(e)
}

impl Expr {
    /// The parameter names the expression mentions.
    pub fn params(&self) -> Vec<&str> {
        match self {
            Expr::Param(n) => vec![n.as_str()],
            Expr::Lit(..) => vec![],
            Expr::Unary(_, e) => e.params(),
            Expr::Binary(_, a, b) => {
                let mut v = a.params();
                v.extend(b.params());
                v
            }
        }
    }

    /// The value (64 bits, and whether it is unsigned), given each parameter's; `None` for a
    /// division by zero. The reference semantics of what [`inject`] compiles (the tests use it).
    pub fn eval(&self, param: &dyn Fn(&str) -> (u64, bool)) -> Option<(u64, bool)> {
        let b = |x: bool| (x as u64, false);
        Some(match self {
            Expr::Param(n) => param(n),
            Expr::Lit(v, u) => (*v, *u),
            Expr::Unary(UnOp::Neg, e) => {
                let (x, u) = e.eval(param)?;
                (x.wrapping_neg(), u)
            }
            Expr::Unary(UnOp::Not, e) => b(e.eval(param)?.0 == 0),
            Expr::Unary(UnOp::BitNot, e) => {
                let (x, u) = e.eval(param)?;
                (!x, u)
            }
            Expr::Binary(op, x, y) => {
                let ((x, ux), (y, uy)) = (x.eval(param)?, y.eval(param)?);
                let u = ux || uy;
                let lt = if u { x < y } else { (x as i64) < (y as i64) };
                match op {
                    BinOp::Or => b(x != 0 || y != 0),
                    BinOp::And => b(x != 0 && y != 0),
                    BinOp::Eq => b(x == y),
                    BinOp::Ne => b(x != y),
                    BinOp::Lt => b(lt),
                    BinOp::Le => b(lt || x == y),
                    BinOp::Gt => b(!lt && x != y),
                    BinOp::Ge => b(!lt),
                    BinOp::BitOr => (x | y, u),
                    BinOp::BitXor => (x ^ y, u),
                    BinOp::BitAnd => (x & y, u),
                    // Shifts take the left operand's type; the count is masked as x86-64 does.
                    BinOp::Shl => (x.wrapping_shl((y & 63) as u32), ux),
                    BinOp::Shr if ux => (x.wrapping_shr((y & 63) as u32), ux),
                    BinOp::Shr => (((x as i64).wrapping_shr((y & 63) as u32)) as u64, ux),
                    BinOp::Add => (x.wrapping_add(y), u),
                    BinOp::Sub => (x.wrapping_sub(y), u),
                    BinOp::Mul => (x.wrapping_mul(y), u),
                    BinOp::Div | BinOp::Rem if y == 0 => return None,
                    BinOp::Div if u => (x / y, u),
                    BinOp::Div => ((x as i64).wrapping_div(y as i64) as u64, u),
                    BinOp::Rem if u => (x % y, u),
                    BinOp::Rem => ((x as i64).wrapping_rem(y as i64) as u64, u),
                }
            }
        })
    }
}

/// Compiles the `--assume` conditions and what the `--arg-size` buffer sizes imply (a length
/// tied to a sized buffer fits in it, in elements of its C type) into `function`; returns what
/// the verdict then assumes, for the report.
pub fn compile(module: &Module<'_>, function: &str, texts: &[String], arg_sizes: &[(String, u64)]) -> Result<Vec<String>> {
    if texts.is_empty() && arg_sizes.is_empty() {
        return Ok(vec![]);
    }
    let mut parsed = texts
        .iter()
        .map(|t| parse(t).map(|e| (t.clone(), e)).map_err(|m| Error::bad_input(format!("--assume '{t}': {m}"))))
        .collect::<Result<Vec<_>>>()?;
    let mut shown: Vec<String> = texts.to_vec();
    let f = module.get_function(function).ok_or_else(|| Error::internal(format!("no function '{function}'")))?;
    let types = super::ctypes::param_types(&module.print_to_string().to_string(), function, f.count_params() as usize);
    let unsigned: Vec<bool> = types.iter().map(|(t, _)| t.as_ref().is_some_and(|t| !t.signed)).collect();
    let params: Vec<(String, Ty)> = f
        .get_param_iter()
        .map(|p| (name_of(&p), super::lower::lower_type(super::llvm::type_of(inkwell::values::AsValueRef::as_value_ref(&p)))))
        .collect();
    let ties = crate::ir::length_ties(&params.iter().map(|(n, t)| (n.as_str(), t)).collect::<Vec<_>>());
    for (name, bytes) in arg_sizes {
        let Some(k) = params.iter().position(|(n, _)| n == name) else {
            let known: Vec<&str> = params.iter().filter(|(_, t)| *t == Ty::Ptr).map(|(n, _)| n.as_str()).collect();
            return Err(Error::bad_input(format!(
                "--arg-size {name}={bytes}: '{name}' is not a parameter of '{function}' (pointer parameters: {})",
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            )));
        };
        if params[k].1 != Ty::Ptr {
            return Err(Error::bad_input(format!("--arg-size {name}={bytes}: '{name}' is not a pointer parameter")));
        }
        shown.push(format!("{name} points to {bytes} bytes"));
        for &(_, l) in ties.iter().filter(|(b, _)| *b == k) {
            let elem = types.get(k).and_then(|(_, p)| *p).unwrap_or(1).max(1);
            let text = format!("{} <= {}", params[l].0, bytes / elem);
            let e = Expr::Binary(BinOp::Le, Box::new(Expr::Param(params[l].0.clone())), Box::new(Expr::Lit(bytes / elem, false)));
            shown.push(text.clone());
            parsed.push((text, e));
        }
    }
    if !satisfiable(&parsed, &params, &unsigned) {
        let texts: Vec<&str> = parsed.iter().map(|(t, _)| t.as_str()).collect();
        return Err(Error::bad_input(format!(
            "the assumptions hold for no input of '{function}' ({}): every target would be vacuously unreachable",
            texts.join("; ")
        )));
    }
    inject(module, f, &parsed, &unsigned)?;
    tracing::info!(assumptions = parsed.len(), "assumptions compiled into '{function}'");
    Ok(shown)
}

/// Whether some input satisfies every assumption together, each parameter ranging over what a
/// caller may pass: an integer of its width (extended as its C type says), a pointer NULL or a
/// mapped address. `true` when the solver cannot tell.
fn satisfiable(assumptions: &[(String, Expr)], params: &[(String, Ty)], unsigned: &[bool]) -> bool {
    use z3::ast::{Bool, BV};
    if assumptions.is_empty() {
        return true;
    }
    let solver = z3::Solver::new();
    let mut values = std::collections::HashMap::new();
    for (k, (name, ty)) in params.iter().enumerate() {
        let u = unsigned.get(k).copied().unwrap_or(false);
        let v = match ty {
            Ty::Int(w) if *w >= 1 && *w < 64 => {
                let x = BV::new_const(format!("assume.{name}"), *w);
                if u || *w == 1 { x.zero_ext(64 - w) } else { x.sign_ext(64 - w) }
            }
            Ty::Ptr => {
                let x = BV::new_const(format!("assume.{name}"), 64);
                let null = x.eq(BV::from_u64(0, 64));
                let mapped = Bool::and(&[x.bvuge(BV::from_u64(crate::ir::LOWEST_ADDRESS, 64)), x.bvult(BV::from_u64(crate::ir::ADDRESS_LIMIT, 64))]);
                solver.assert(Bool::or(&[null, mapped]));
                x
            }
            _ => BV::new_const(format!("assume.{name}"), 64),
        };
        values.insert(name.as_str(), (v, u || *ty == Ty::Ptr));
    }
    fn term(e: &Expr, values: &std::collections::HashMap<&str, (BV, bool)>, defined: &mut Vec<Bool>) -> Option<(BV, bool)> {
        let zero = BV::from_u64(0, 64);
        let bit = |b: Bool| (b.ite(&BV::from_u64(1, 64), &BV::from_u64(0, 64)), false);
        Some(match e {
            Expr::Param(n) => values.get(n.as_str())?.clone(),
            Expr::Lit(v, u) => (BV::from_u64(*v, 64), *u),
            Expr::Unary(UnOp::Neg, a) => {
                let (x, u) = term(a, values, defined)?;
                (x.bvneg(), u)
            }
            Expr::Unary(UnOp::Not, a) => bit(term(a, values, defined)?.0.eq(&zero)),
            Expr::Unary(UnOp::BitNot, a) => {
                let (x, u) = term(a, values, defined)?;
                (x.bvnot(), u)
            }
            Expr::Binary(op, a, b) => {
                let ((x, ux), (y, uy)) = (term(a, values, defined)?, term(b, values, defined)?);
                let u = ux || uy;
                let lt = if u { x.bvult(&y) } else { x.bvslt(&y) };
                let count = y.bvand(BV::from_u64(63, 64));
                match op {
                    BinOp::Or => bit(Bool::or(&[x.eq(&zero).not(), y.eq(&zero).not()])),
                    BinOp::And => bit(Bool::and(&[x.eq(&zero).not(), y.eq(&zero).not()])),
                    BinOp::Eq => bit(x.eq(&y)),
                    BinOp::Ne => bit(x.eq(&y).not()),
                    BinOp::Lt => bit(lt),
                    BinOp::Le => bit(Bool::or(&[lt, x.eq(&y)])),
                    BinOp::Gt => bit(Bool::and(&[lt.not(), x.eq(&y).not()])),
                    BinOp::Ge => bit(lt.not()),
                    BinOp::BitOr => (x.bvor(&y), u),
                    BinOp::BitXor => (x.bvxor(&y), u),
                    BinOp::BitAnd => (x.bvand(&y), u),
                    BinOp::Shl => (x.bvshl(&count), ux),
                    BinOp::Shr if ux => (x.bvlshr(&count), ux),
                    BinOp::Shr => (x.bvashr(&count), ux),
                    BinOp::Add => (x.bvadd(&y), u),
                    BinOp::Sub => (x.bvsub(&y), u),
                    BinOp::Mul => (x.bvmul(&y), u),
                    BinOp::Div | BinOp::Rem => {
                        // A division by zero makes the assumption false (see `inject`).
                        defined.push(y.eq(&zero).not());
                        match (op, u) {
                            (BinOp::Div, true) => (x.bvudiv(&y), u),
                            (BinOp::Div, false) => (x.bvsdiv(&y), u),
                            (_, true) => (x.bvurem(&y), u),
                            (_, false) => (x.bvsrem(&y), u),
                        }
                    }
                }
            }
        })
    }
    for (_, e) in assumptions {
        let mut defined = vec![];
        let Some((v, _)) = term(e, &values, &mut defined) else { return true };
        solver.assert(v.eq(BV::from_u64(0, 64)).not());
        for d in defined {
            solver.assert(d);
        }
    }
    solver.check() != z3::SatResult::Unsat
}

/// Compiles `assumptions` (already parsed, with their text for messages) into a call to
/// `__VERIFIER_assume` at the start of `function`. `unsigned[k]`: whether parameter `k` is
/// unsigned in C. A division or remainder by zero anywhere in an assumption makes it false
/// (also on the side of a `||` that C would not evaluate).
pub fn inject(module: &Module<'_>, function: FunctionValue<'_>, assumptions: &[(String, Expr)], unsigned: &[bool]) -> Result<()> {
    if assumptions.is_empty() {
        return Ok(());
    }
    let ctx = module.get_context();
    let names: Vec<String> = function.get_param_iter().map(|p| name_of(&p)).collect();
    for (text, e) in assumptions {
        for p in e.params() {
            if !names.iter().any(|n| n == p) {
                let known = names.iter().filter(|n| !n.is_empty()).cloned().collect::<Vec<_>>();
                return Err(Error::bad_input(format!(
                    "--assume '{text}': '{p}' is not a parameter of '{}' (parameters: {})",
                    function.get_name().to_string_lossy(),
                    if known.is_empty() { "none with a name; compile with -fno-discard-value-names".to_string() } else { known.join(", ") }
                )));
            }
        }
    }
    let entry = function.get_first_basic_block().ok_or_else(|| Error::internal("the function has no entry block"))?;
    let builder = ctx.create_builder();
    match entry.get_first_instruction() {
        Some(i) => builder.position_before(&i),
        None => builder.position_at_end(entry),
    }
    let i32t = ctx.i32_type();
    let assume = module.get_function("__VERIFIER_assume").unwrap_or_else(|| module.add_function("__VERIFIER_assume", ctx.void_type().fn_type(&[i32t.into()], false), None));
    let mut g = Gen { ctx, builder: &builder, function, names: &names, unsigned, assume };
    for (text, e) in assumptions {
        let (v, _) = g.value(e).map_err(|m| Error::bad_input(format!("--assume '{text}': {m}")))?;
        let cond = g.truthy(v)?;
        let arg = builder.build_int_z_extend(cond, i32t, "apc.assume").map_err(llvm_err)?;
        builder.build_call(assume, &[arg.into()], "").map_err(llvm_err)?;
    }
    Ok(())
}

fn llvm_err(e: inkwell::builder::BuilderError) -> Error {
    Error::internal(format!("building an assumption: {e}"))
}

fn name_of(v: &BasicValueEnum<'_>) -> String {
    match v {
        BasicValueEnum::IntValue(x) => x.get_name().to_string_lossy().into_owned(),
        BasicValueEnum::PointerValue(x) => x.get_name().to_string_lossy().into_owned(),
        BasicValueEnum::FloatValue(x) => x.get_name().to_string_lossy().into_owned(),
        BasicValueEnum::StructValue(x) => x.get_name().to_string_lossy().into_owned(),
        BasicValueEnum::ArrayValue(x) => x.get_name().to_string_lossy().into_owned(),
        BasicValueEnum::VectorValue(x) => x.get_name().to_string_lossy().into_owned(),
        _ => String::new(),
    }
}

struct Gen<'a, 'ctx> {
    ctx: ContextRef<'ctx>,
    builder: &'a Builder<'ctx>,
    function: FunctionValue<'ctx>,
    names: &'a [String],
    unsigned: &'a [bool],
    assume: FunctionValue<'ctx>,
}

impl<'ctx> Gen<'_, 'ctx> {
    fn wide(&self) -> inkwell::types::IntType<'ctx> {
        self.ctx.i64_type()
    }

    fn truthy(&self, v: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        self.builder.build_int_compare(IntPredicate::NE, v, self.wide().const_zero(), "apc.assume").map_err(llvm_err)
    }

    /// A C truth value (`int` 0 or 1, signed).
    fn bool_value(&self, b: IntValue<'ctx>) -> std::result::Result<(IntValue<'ctx>, bool), String> {
        Ok((self.builder.build_int_z_extend(b, self.wide(), "apc.assume").map_err(|e| e.to_string())?, false))
    }

    /// The expression's value in 64 bits, and whether it is unsigned (see [`Expr::eval`]).
    fn value(&mut self, e: &Expr) -> std::result::Result<(IntValue<'ctx>, bool), String> {
        let b = self.builder;
        let w = self.wide();
        let err = |e: inkwell::builder::BuilderError| e.to_string();
        Ok(match e {
            Expr::Lit(v, u) => (w.const_int(*v, false), *u),
            Expr::Param(n) => {
                let k = self.names.iter().position(|x| x == n).ok_or("unknown parameter")?;
                let p = self.function.get_nth_param(k as u32).ok_or("no such parameter")?;
                let unsigned = self.unsigned.get(k).copied().unwrap_or(false);
                match p {
                    BasicValueEnum::IntValue(x) if x.get_type().get_bit_width() > 64 => {
                        return Err(format!("parameter '{n}' is wider than 64 bits"));
                    }
                    BasicValueEnum::IntValue(x) if x.get_type().get_bit_width() == 64 => (x, unsigned),
                    BasicValueEnum::IntValue(x) if unsigned || x.get_type().get_bit_width() == 1 => {
                        (b.build_int_z_extend(x, w, "apc.assume").map_err(err)?, unsigned)
                    }
                    BasicValueEnum::IntValue(x) => (b.build_int_s_extend(x, w, "apc.assume").map_err(err)?, false),
                    BasicValueEnum::PointerValue(x) => (b.build_ptr_to_int(x, w, "apc.assume").map_err(err)?, true),
                    _ => return Err(format!("parameter '{n}' is neither an integer nor a pointer")),
                }
            }
            Expr::Unary(op, x) => {
                let (x, u) = self.value(x)?;
                match op {
                    UnOp::Neg => (b.build_int_neg(x, "apc.assume").map_err(err)?, u),
                    UnOp::BitNot => (b.build_not(x, "apc.assume").map_err(err)?, u),
                    UnOp::Not => {
                        let z = b.build_int_compare(IntPredicate::EQ, x, w.const_zero(), "apc.assume").map_err(err)?;
                        self.bool_value(z)?
                    }
                }
            }
            Expr::Binary(op, x, y) => {
                let ((x, ux), (y, uy)) = (self.value(x)?, self.value(y)?);
                let u = ux || uy;
                let pred = |signed: IntPredicate, unsigned: IntPredicate| if u { unsigned } else { signed };
                let cmp = |s: &mut Self, p: IntPredicate| -> std::result::Result<(IntValue<'ctx>, bool), String> {
                    let c = b.build_int_compare(p, x, y, "apc.assume").map_err(err)?;
                    s.bool_value(c)
                };
                match op {
                    BinOp::Or | BinOp::And => {
                        let (tx, ty) = (self.truthy(x).map_err(|e| e.to_string())?, self.truthy(y).map_err(|e| e.to_string())?);
                        let c = if *op == BinOp::Or { b.build_or(tx, ty, "apc.assume") } else { b.build_and(tx, ty, "apc.assume") }.map_err(err)?;
                        self.bool_value(c)?
                    }
                    BinOp::Eq => cmp(self, IntPredicate::EQ)?,
                    BinOp::Ne => cmp(self, IntPredicate::NE)?,
                    BinOp::Lt => cmp(self, pred(IntPredicate::SLT, IntPredicate::ULT))?,
                    BinOp::Le => cmp(self, pred(IntPredicate::SLE, IntPredicate::ULE))?,
                    BinOp::Gt => cmp(self, pred(IntPredicate::SGT, IntPredicate::UGT))?,
                    BinOp::Ge => cmp(self, pred(IntPredicate::SGE, IntPredicate::UGE))?,
                    BinOp::BitOr => (b.build_or(x, y, "apc.assume").map_err(err)?, u),
                    BinOp::BitXor => (b.build_xor(x, y, "apc.assume").map_err(err)?, u),
                    BinOp::BitAnd => (b.build_and(x, y, "apc.assume").map_err(err)?, u),
                    BinOp::Shl | BinOp::Shr => {
                        let amount = b.build_and(y, w.const_int(63, false), "apc.assume").map_err(err)?;
                        let v = if *op == BinOp::Shl { b.build_left_shift(x, amount, "apc.assume") } else { b.build_right_shift(x, amount, !ux, "apc.assume") }.map_err(err)?;
                        (v, ux)
                    }
                    BinOp::Add => (b.build_int_add(x, y, "apc.assume").map_err(err)?, u),
                    BinOp::Sub => (b.build_int_sub(x, y, "apc.assume").map_err(err)?, u),
                    BinOp::Mul => (b.build_int_mul(x, y, "apc.assume").map_err(err)?, u),
                    BinOp::Div | BinOp::Rem => {
                        // x / 0 is no value: the assumption fails. The division itself gets a
                        // divisor that is never 0 (and, signed, never the -1 of an overflow).
                        let zero = b.build_int_compare(IntPredicate::EQ, y, w.const_zero(), "apc.assume").map_err(err)?;
                        let minus_one = b.build_int_compare(IntPredicate::EQ, y, w.const_all_ones(), "apc.assume").map_err(err)?;
                        let bad = if u { zero } else { b.build_or(zero, minus_one, "apc.assume").map_err(err)? };
                        let safe = b.build_select(bad, w.const_int(1, false), y, "apc.assume").map_err(err)?.into_int_value();
                        let q = match (op, u) {
                            (BinOp::Div, true) => b.build_int_unsigned_div(x, safe, "apc.assume"),
                            (BinOp::Div, false) => b.build_int_signed_div(x, safe, "apc.assume"),
                            (_, true) => b.build_int_unsigned_rem(x, safe, "apc.assume"),
                            (_, false) => b.build_int_signed_rem(x, safe, "apc.assume"),
                        }
                        .map_err(err)?;
                        // Dividing by -1 is negating (x % -1 is 0), with wrap-around.
                        let q = if u {
                            q
                        } else {
                            let by_minus_one = if *op == BinOp::Div { b.build_int_neg(x, "apc.assume").map_err(err)? } else { w.const_zero() };
                            b.build_select(minus_one, by_minus_one, q, "apc.assume").map_err(err)?.into_int_value()
                        };
                        self.pending_false(zero)?;
                        (q, u)
                    }
                }
            }
        })
    }

    /// Records that the assumption is false when `c` holds (a division by zero): emitted as an
    /// assumption of its own, `!c`.
    fn pending_false(&mut self, c: IntValue<'ctx>) -> std::result::Result<(), String> {
        let b = self.builder;
        let not = b.build_not(c, "apc.assume").map_err(|e| e.to_string())?;
        let i32t = self.ctx.i32_type();
        let arg = b.build_int_z_extend(not, i32t, "apc.assume").map_err(|e| e.to_string())?;
        b.build_call(self.assume, &[arg.into()], "").map_err(|e| e.to_string())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value as a signed number (parameters given as (value, unsigned)).
    fn value(text: &str, params: &[(&str, i64, bool)]) -> Option<i64> {
        let e = parse(text).unwrap_or_else(|m| panic!("{text}: {m}"));
        e.eval(&|n| params.iter().find(|(p, _, _)| *p == n).map(|(_, v, u)| (*v as u64, *u)).expect("a parameter")).map(|(v, _)| v as i64)
    }

    #[test]
    fn c_precedence_operators_and_conversions() {
        assert_eq!(value("1 + 2 * 3", &[]), Some(7));
        assert_eq!(value("(1 + 2) * 3", &[]), Some(9));
        assert_eq!(value("len <= 64 && len > 0", &[("len", 64, true)]), Some(1));
        assert_eq!(value("len <= 64 && len > 0", &[("len", 65, true)]), Some(0));
        assert_eq!(value("a == 1 || b == 2 && c == 3", &[("a", 1, false), ("b", 0, false), ("c", 0, false)]), Some(1));
        assert_eq!(value("1 << 4 | 1", &[]), Some(17));
        assert_eq!(value("x & 0xff == 0x7f", &[("x", 0x17f, false)]), Some(0), "== binds tighter than &");
        assert_eq!(value("-x % 7", &[("x", 9, false)]), Some(-2));
        assert_eq!(value("!(n < 0) && ~n != 0", &[("n", 5, false)]), Some(1));
        assert_eq!(value("10 / n", &[("n", 0, false)]), None);
        assert_eq!(value("0x10 + 010 + 5u + 7UL", &[]), Some(16 + 8 + 5 + 7));
        // C's conversions: a negative signed value is below 64, a huge size_t is not.
        assert_eq!(value("n <= 64", &[("n", -5, false)]), Some(1));
        assert_eq!(value("len <= 64", &[("len", -5, true)]), Some(0));
        assert_eq!(value("u > -1", &[("u", 3, true)]), Some(0), "as in C");
        assert_eq!(value("x >> 1", &[("x", -4, false)]), Some(-2));
        assert_eq!(value("x >> 1", &[("x", -4, true)]), Some(((-4i64 as u64) >> 1) as i64));
        assert_eq!(value("18446744073709551615 == -1", &[]), Some(1));
    }

    #[test]
    fn bad_expressions_are_named() {
        assert!(parse("").is_err());
        assert!(parse("len <=").unwrap_err().contains("ends too early"));
        assert!(parse("(len < 3").unwrap_err().contains("missing ')'"));
        assert!(parse("len < 3)").is_err());
        assert!(parse("len = 3").is_err());
        assert!(parse("x < 1.5").is_err());
        assert!(parse("x < 99999999999999999999999").unwrap_err().contains("64 bits"));
    }
}
