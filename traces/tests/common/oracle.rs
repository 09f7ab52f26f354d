//! The brute-force oracle: every order of a small history, tried against the spec.

use std::collections::HashSet;
use std::sync::Arc;

use locklab_models::spec::Spec;
use locklab_traces::check::linear::{successors, LinOp};

use super::Sim;

/// Brute force: is there an order of `ops`, respecting real time, that the spec
/// accepts? An operation of unknown outcome may also never have taken effect.
pub fn oracle<S: Spec>(ops: &[LinOp<S>]) -> bool {
    fn go<S: Spec>(
        ops: &[LinOp<S>],
        left: u64,
        states: Vec<S::State>,
        seen: &mut HashSet<(u64, Vec<S::State>)>,
    ) -> bool {
        if left == 0 {
            return true;
        }
        if !seen.insert((left, states.clone())) {
            return false;
        }
        let horizon = (0..ops.len())
            .filter(|i| left & (1 << i) != 0)
            .map(|i| ops[i].ret.unwrap_or(u64::MAX))
            .min()
            .unwrap_or(u64::MAX);
        (0..ops.len())
            .filter(|i| left & (1 << i) != 0 && ops[*i].call <= horizon)
            .any(|i| {
                let rest = left & !(1 << i);
                let next = successors(&states, &ops[i]);
                (!next.is_empty() && go(ops, rest, next.to_vec(), seen))
                    || (ops[i].output.is_none() && go(ops, rest, states.clone(), seen))
            })
    }
    assert!(ops.len() <= 64, "the oracle is for small histories");
    let all = if ops.len() == 64 {
        u64::MAX
    } else {
        (1u64 << ops.len()) - 1
    };
    go(ops, all, Vec::new(), &mut HashSet::new())
}

/// The operations as the oracle sees them. A refusal the client recorded did not
/// happen and is left out, as Knossos drops a `:fail`.
pub fn lin_ops<S: Spec>(spec: &S, ops: &[Sim<S>]) -> Vec<LinOp<S>> {
    let spec = Arc::new(spec.clone());
    ops.iter()
        .filter(|o| !(o.refused && o.ret.is_some()))
        .map(|o| {
            let known = o.output.is_some() && o.ret.is_some();
            LinOp {
                spec: spec.clone(),
                input: o.input.clone(),
                output: if known { o.output.clone() } else { None },
                call: o.call,
                ret: if known { o.ret } else { None },
                client: o.client,
                line: 0,
            }
        })
        .collect()
}
