//! A key-value map of strings with get, put and append (the Porcupine kv histories; a
//! lock-protected configuration map).

use std::collections::BTreeMap;

use super::{Spec, Window};

/// The key-value spec. A missing key reads as the empty string, as in Porcupine's kv test.
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
    type State = BTreeMap<String, String>;
    type Input = KvInput;
    type Output = KvOutput;

    fn init(&self) -> Self::State {
        BTreeMap::new()
    }

    fn step(
        &self,
        state: &Self::State,
        input: &KvInput,
        _at: Window,
    ) -> Vec<(KvOutput, Self::State)> {
        vec![match input {
            KvInput::Get(k) => (
                KvOutput::Value(state.get(k).cloned().unwrap_or_default()),
                state.clone(),
            ),
            KvInput::Put(k, v) => {
                let mut next = state.clone();
                next.insert(k.clone(), v.clone());
                (KvOutput::Done, next)
            }
            KvInput::Append(k, v) => {
                let mut next = state.clone();
                next.entry(k.clone()).or_default().push_str(v);
                (KvOutput::Done, next)
            }
        }]
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
