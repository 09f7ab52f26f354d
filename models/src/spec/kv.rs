//! A key-value map of strings with get, put and append (the Porcupine kv histories; a
//! lock-protected configuration map).
//!
//! A map is the product of its keys: operations on different keys never interact. So
//! the spec is that of *one* key's value, and a map's history is checked key by key
//! (partitioned on [`KvInput::key`]), which is also what keeps the search fast.

use super::{outcomes, Outcomes, Spec, Window};

/// The spec of one key of a string map. A key never written reads as the empty string,
/// as in Porcupine's kv test. Feed it the operations of a single key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct KvSpec;

/// What a client asks of the map.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvInput {
    /// Read a key.
    Get(String),
    /// Overwrite a key.
    Put(String, String),
    /// Append to a key's value.
    Append(String, String),
}

impl KvInput {
    /// The key the operation touches: operations on different keys are independent.
    pub fn key(&self) -> &str {
        match self {
            KvInput::Get(k) | KvInput::Put(k, _) | KvInput::Append(k, _) => k,
        }
    }
}

/// What the map answers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KvOutput {
    /// The value read.
    Value(String),
    /// The put or append took effect.
    Done,
}

impl Spec for KvSpec {
    type State = String;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self) -> String {
        String::new()
    }

    #[inline]
    fn step(
        &self,
        state: &Self::State,
        input: &KvInput,
        _at: Window,
    ) -> Outcomes<KvOutput, Self::State> {
        outcomes![match input {
            KvInput::Get(_) => (KvOutput::Value(state.clone()), state.clone()),
            KvInput::Put(_, v) => (KvOutput::Done, v.clone()),
            KvInput::Append(_, v) => {
                let mut next = String::with_capacity(state.len() + v.len());
                next.push_str(state);
                next.push_str(v);
                (KvOutput::Done, next)
            }
        }]
    }

    fn read_only(&self, input: &KvInput, _output: &KvOutput) -> bool {
        matches!(input, KvInput::Get(_))
    }

    fn describe(input: &KvInput, output: Option<&KvOutput>) -> String {
        match (input, output) {
            (KvInput::Get(k), Some(KvOutput::Value(v))) => format!("get({k:?}) -> {v:?}"),
            (KvInput::Get(k), _) => format!("get({k:?}) -> ?"),
            (KvInput::Put(k, v), _) => format!("put({k:?}, {v:?})"),
            (KvInput::Append(k, v), _) => format!("append({k:?}, {v:?})"),
        }
    }
}
