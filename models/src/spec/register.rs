//! A read/write register with compare-and-set: the etcd key of Jepsen's etcd test, the
//! protected value of a critical section.

use super::{outcomes, Outcomes, Spec, Window};

/// The register spec. A register starts at `initial`; by default empty (`None`), so a
/// read before any write sees nil. Knossos's `(cas-register 0)` is `initial: Some(0)`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RegisterSpec {
    /// The value before any write.
    pub initial: Option<i64>,
}

/// What a client asks of a register.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterInput {
    /// Read the value.
    Read,
    /// Overwrite the value.
    Write(i64),
    /// Set `to` only if the value is `from`.
    Cas {
        /// The value expected.
        from: i64,
        /// The value written when it matched.
        to: i64,
    },
}

/// What a register answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RegisterOutput {
    /// The value read (`None`: never written).
    Value(Option<i64>),
    /// The write took effect.
    Written,
    /// The compare-and-set matched and wrote.
    CasOk,
    /// The compare-and-set did not match; nothing changed.
    CasFailed,
}

impl Spec for RegisterSpec {
    type State = Option<i64>;
    type Input = RegisterInput;
    type Output = RegisterOutput;

    fn init(&self) -> Option<i64> {
        self.initial
    }

    #[inline]
    fn step(
        &self,
        state: &Option<i64>,
        input: &RegisterInput,
        _at: Window,
    ) -> Outcomes<RegisterOutput, Option<i64>> {
        outcomes![match input {
            RegisterInput::Read => (RegisterOutput::Value(*state), *state),
            RegisterInput::Write(v) => (RegisterOutput::Written, Some(*v)),
            RegisterInput::Cas { from, to } if *state == Some(*from) => {
                (RegisterOutput::CasOk, Some(*to))
            }
            RegisterInput::Cas { .. } => (RegisterOutput::CasFailed, *state),
        }]
    }

    fn read_only(&self, input: &RegisterInput, output: &RegisterOutput) -> bool {
        matches!(input, RegisterInput::Read) || *output == RegisterOutput::CasFailed
    }

    fn describe_state(state: &Option<i64>) -> String {
        state.map_or("empty".to_string(), |v| v.to_string())
    }

    fn describe(input: &RegisterInput, output: Option<&RegisterOutput>) -> String {
        let call = match input {
            RegisterInput::Read => "read()".to_string(),
            RegisterInput::Write(v) => format!("write({v})"),
            RegisterInput::Cas { from, to } => format!("cas({from}, {to})"),
        };
        let ret = match output {
            None => "?".to_string(),
            Some(RegisterOutput::Value(Some(v))) => v.to_string(),
            Some(RegisterOutput::Value(None)) => "nil".to_string(),
            Some(RegisterOutput::Written) => "ok".to_string(),
            Some(RegisterOutput::CasOk) => "ok".to_string(),
            Some(RegisterOutput::CasFailed) => "fail".to_string(),
        };
        format!("{call} -> {ret}")
    }
}
