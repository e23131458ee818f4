//! The integer operations and comparison predicates shared by the program model ([`crate::ir`])
//! and the expressions ([`crate::expr`]): a leaf, so neither of the two needs the other.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    UDiv,
    SDiv,
    URem,
    SRem,
    Shl,
    LShr,
    AShr,
    And,
    Or,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntPredicate {
    Eq,
    Ne,
    Ugt,
    Uge,
    Ult,
    Ule,
    Sgt,
    Sge,
    Slt,
    Sle,
}

impl IntPredicate {
    pub fn negate(self) -> Self {
        use IntPredicate::*;
        match self {
            Eq => Ne,
            Ne => Eq,
            Ugt => Ule,
            Uge => Ult,
            Ult => Uge,
            Ule => Ugt,
            Sgt => Sle,
            Sge => Slt,
            Slt => Sge,
            Sle => Sgt,
        }
    }

    /// The predicate with its operands exchanged: `a p b` is `b p.swapped() a`.
    pub fn swapped(self) -> Self {
        use IntPredicate::*;
        match self {
            Ugt => Ult,
            Uge => Ule,
            Ult => Ugt,
            Ule => Uge,
            Sgt => Slt,
            Sge => Sle,
            Slt => Sgt,
            Sle => Sge,
            Eq | Ne => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicate_negation_is_an_involution() {
        use IntPredicate::*;
        for p in [Eq, Ne, Ugt, Uge, Ult, Ule, Sgt, Sge, Slt, Sle] {
            assert_eq!(p.negate().negate(), p);
            assert_ne!(p.negate(), p);
        }
    }
}
