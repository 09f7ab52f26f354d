//! One answer of a simulated run changed, for the oracle and the checks to disagree on
//! when the pipeline is wrong.

use locklab_models::spec::{LockInput, LockOutput, LockSpec, RegisterOutput, RegisterSpec, Spec};

use super::Sim;

/// The `which`-th operation (cyclically) whose client recorded an answer.
pub fn pick<S: Spec>(ops: &mut [Sim<S>], which: usize) -> Option<&mut Sim<S>> {
    let known: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].answered()).collect();
    let i = *known.get(which % known.len().max(1))?;
    ops.get_mut(i)
}

/// Changes one answer: a read value, a CAS result.
pub fn corrupt_register_answer(output: &mut Option<RegisterOutput>, how: u8) {
    *output = match (&*output, how % 2) {
        (Some(RegisterOutput::Value(v)), 0) => {
            Some(RegisterOutput::Value(Some(v.unwrap_or(0) + 1)))
        }
        (Some(RegisterOutput::Value(_)), _) => Some(RegisterOutput::Value(None)),
        (Some(RegisterOutput::CasOk), _) => Some(RegisterOutput::CasFailed),
        (Some(RegisterOutput::CasFailed), _) => Some(RegisterOutput::CasOk),
        (o, _) => o.clone(),
    };
}

pub fn corrupt_register(ops: &mut [Sim<RegisterSpec>], which: usize, how: u8) {
    if let Some(op) = pick(ops, which) {
        corrupt_register_answer(&mut op.output, how);
    }
}

/// Changes one answer: a grant into a refusal, a token, a refusal into success.
pub fn corrupt_lock_answer(input: &LockInput, output: &mut Option<LockOutput>, how: u8) {
    *output = match (&*output, how % 2) {
        (Some(LockOutput::Granted(_)), 0) => Some(LockOutput::Busy),
        (Some(LockOutput::Granted(Some(t))), _) => {
            Some(LockOutput::Granted(Some(t.saturating_sub(1))))
        }
        (Some(LockOutput::Busy), _) => Some(LockOutput::Granted(None)),
        (Some(LockOutput::NotHeld), _) if matches!(input, LockInput::Renew { .. }) => {
            Some(LockOutput::Renewed)
        }
        (Some(LockOutput::NotHeld), _) => Some(LockOutput::Released),
        (Some(LockOutput::Released | LockOutput::Renewed), _) => Some(LockOutput::NotHeld),
        (o, _) => o.clone(),
    };
}

pub fn corrupt_lock(ops: &mut [Sim<LockSpec>], which: usize, how: u8) {
    if let Some(op) = pick(ops, which) {
        corrupt_lock_answer(&op.input, &mut op.output, how);
    }
}
