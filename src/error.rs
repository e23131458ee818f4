//! Error types. Bad input (exit status 2) is kept apart from internal failures (exit status 1)
//! so that the command line can honour the contract of DESIGN.md section 1.

/// An apc-llvm failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user's input is wrong: missing file, not bitcode, unknown function/label/line/callee.
    /// The message is one line and names the problem.
    #[error("{0}")]
    BadInput(String),
    /// Something failed inside apc-llvm or a tool it runs.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn bad_input(msg: impl Into<String>) -> Self {
        Error::BadInput(msg.into())
    }
    pub fn internal(msg: impl Into<String>) -> Self {
        Error::Internal(msg.into())
    }
    /// The process exit status for this error.
    pub fn exit_status(&self) -> i32 {
        match self {
            Error::BadInput(_) => 2,
            Error::Internal(_) => 1,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Lists names for an error message, shortened when there are many.
pub fn list_names<S: AsRef<str>>(names: &[S]) -> String {
    const MAX: usize = 20;
    let mut out: Vec<&str> = names.iter().map(|s| s.as_ref()).take(MAX).collect();
    let extra = names.len().saturating_sub(MAX);
    let more = format!("... ({extra} more)");
    if extra > 0 {
        out.push(&more);
    }
    if out.is_empty() {
        "(none)".to_string()
    } else {
        out.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn exit_statuses_follow_the_cli_contract() {
        assert_eq!(Error::bad_input("x").exit_status(), 2);
        assert_eq!(Error::internal("x").exit_status(), 1);
    }
    #[test]
    fn long_name_lists_are_shortened() {
        let names: Vec<String> = (0..25).map(|i| format!("b{i}")).collect();
        let s = list_names(&names);
        assert!(s.ends_with("... (5 more)"), "{s}");
        assert_eq!(list_names::<&str>(&[]), "(none)");
    }
}
