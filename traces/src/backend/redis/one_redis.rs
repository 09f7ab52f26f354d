//! Is this history linearizable as ONE Redis server? The `command` events of a history
//! (every Redis command a client sent, with its call and return times and its reply)
//! held against the Redis node spec, [`RedisSpec`], with the search of [`crate::check::linear`].
//!
//! A lock is only as good as the server it stands on. On a single node the answer is
//! yes. After a failover (master killed, a replica promoted) it is typically no: the
//! promoted replica had not received a write the old master acknowledged, so the
//! commands after the failover are answered as no single server could answer them (a
//! second `SET NX` granted while the first one's lease still ran). That is a finding
//! about the servers, not a property of the lock, so it is reported as a [`Finding`]
//! beside the lock's checks and changes no verdict.
//!
//! Each server (the event's `node`) is one Redis, and the keys of a server are
//! independent objects: a command touches its own keys (the fenced acquire its lock and
//! its counter together), so each server is checked one group of keys at a time. `WAIT`
//! touches no key (it counts replicas, which one server alone does not have) and is left
//! out. Times stay nanoseconds, so that commands a few microseconds apart keep their
//! order; the spec counts the server's whole milliseconds in them. A command took effect
//! somewhere between its call and its return; one without reply at any time after its
//! call, or never.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use locklab_models::redis::spec::{entry_text_with, RedisCommand, RedisReply, RedisSpec};
use locklab_models::spec::Spec;

use crate::backend::CommandEvent;
use crate::format::{History, OpKind};
use crate::ops::Paired;

use crate::check::linear::{decide, Budget, Illegal, LinOp, LinResult};
use crate::check::report::{fmt_time, one_of, Finding, OpRef, Verdict};

/// The name of the finding.
pub const NAME: &str = "one Redis";

/// History time is nanoseconds.
const NS_PER_MS: u64 = 1_000_000;

/// One Redis command as a client saw it.
pub type CommandOp = CommandEvent<RedisSpec>;

impl CommandOp {
    /// The checker's operation, the command moved into it: a long run's commands are
    /// the most of its history, and a copy of them was a third of the finding's memory.
    fn into_lin_op(self, spec: &Arc<RedisSpec>) -> LinOp<RedisSpec> {
        LinOp {
            spec: spec.clone(),
            ret: self.reply.as_ref().map(|_| self.return_ns),
            input: self.command,
            output: self.reply,
            call: self.call_ns,
            client: self.client,
            line: self.line,
        }
    }
}

/// The checker's partitions, built as the commands come, in any order, each kept only
/// as its checker operation: one partition per server and group of keys that commands
/// touch together, each in the order the commands were sent. Commands the spec does not
/// model, and every command of a server one of them may have written (an external
/// client's `HSET`, an unknown script: its effect on any key of the server is unknown),
/// are left out.
pub struct Partitions {
    spec: Arc<RedisSpec>,
    /// Which group each (server, key) is in; a command touching two groups merges them.
    group_of: BTreeMap<(usize, String), usize>,
    /// Each group's parent in the merges (a root is its own); the root holds the ops.
    merged_into: Vec<usize>,
    ops: Vec<Chunks<LinOp<RedisSpec>>>,
    node: Vec<usize>,
    /// Per server, the modelled commands that touch no key (`WAIT`): they count only
    /// on a server that ran a script.
    keyless: BTreeMap<usize, Chunks<LinOp<RedisSpec>>>,
    /// Servers that ran a script, which may touch keys it was not given in KEYS: each is
    /// one group.
    scripted: BTreeSet<usize>,
    /// Servers a command the spec does not model may have written.
    unjudged: BTreeSet<usize>,
    /// Per server, its commands and those the spec does not model.
    counts: BTreeMap<usize, (usize, usize)>,
}

impl Default for Partitions {
    fn default() -> Self {
        Partitions {
            spec: Arc::new(RedisSpec::ticking(NS_PER_MS)),
            group_of: BTreeMap::new(),
            merged_into: Vec::new(),
            ops: Vec::new(),
            node: Vec::new(),
            keyless: BTreeMap::new(),
            scripted: BTreeSet::new(),
            unjudged: BTreeSet::new(),
            counts: BTreeMap::new(),
        }
    }
}

impl Partitions {
    fn root(&self, mut g: usize) -> usize {
        while self.merged_into[g] != g {
            g = self.merged_into[g];
        }
        g
    }

    /// Takes one command.
    pub fn add(&mut self, op: CommandOp) {
        let count = self.counts.entry(op.node).or_default();
        count.0 += 1;
        if !op.command.is_modelled() {
            count.1 += 1;
            if op.command.is_write() {
                self.unjudged.insert(op.node);
            }
            return;
        }
        if matches!(op.command, RedisCommand::Eval { .. }) {
            self.scripted.insert(op.node);
        }
        let keys: Vec<String> = op.command.keys().into_iter().map(str::to_string).collect();
        let node = op.node;
        let lin = op.into_lin_op(&self.spec);
        if keys.is_empty() {
            self.keyless.entry(node).or_default().push(lin);
            return;
        }
        let mut first: Option<usize> = None;
        for key in keys {
            let fresh = self.merged_into.len();
            let g = *self.group_of.entry((node, key)).or_insert(fresh);
            if g == fresh {
                self.merged_into.push(fresh);
                self.ops.push(Chunks::default());
                self.node.push(node);
            }
            let g = self.root(g);
            match first {
                None => first = Some(g),
                Some(f) if f != g => {
                    self.merged_into[g] = f;
                    let moved = std::mem::take(&mut self.ops[g]);
                    self.ops[f].append(moved);
                }
                Some(_) => {}
            }
        }
        if let Some(f) = first {
            self.ops[f].push(lin);
        }
    }

    /// The servers one Redis cannot be held to.
    pub fn unjudged(&self) -> &BTreeSet<usize> {
        &self.unjudged
    }

    /// How many commands it took, on how many servers, and how many it leaves out.
    pub fn counts(&self) -> (usize, usize, usize) {
        let commands = self.counts.values().map(|c| c.0).sum();
        let left_out = self
            .counts
            .iter()
            .map(|(n, c)| if self.unjudged.contains(n) { c.0 } else { c.1 })
            .sum();
        (commands, self.counts.len(), left_out)
    }

    /// The partitions, each in call order, the one holding the earliest call first.
    pub fn finish(mut self) -> Vec<Vec<LinOp<RedisSpec>>> {
        let mut by_server: BTreeMap<usize, Chunks<LinOp<RedisSpec>>> = BTreeMap::new();
        let mut parts = Vec::new();
        for g in 0..self.ops.len() {
            let node = self.node[g];
            if self.merged_into[g] != g || self.unjudged.contains(&node) {
                continue;
            }
            let ops = std::mem::take(&mut self.ops[g]);
            if self.scripted.contains(&node) {
                by_server.entry(node).or_default().append(ops);
            } else {
                parts.push(ops.into_vec());
            }
        }
        for (node, mut ops) in by_server {
            ops.append(self.keyless.remove(&node).unwrap_or_default());
            parts.push(ops.into_vec());
        }
        // The order they were sent in; the file's order between equal calls (a line
        // is one command's: the order is total, and sorting needs no buffer).
        for p in &mut parts {
            p.sort_unstable_by_key(|o| (o.call, o.line));
        }
        parts.sort_by_key(|p| p.first().map(|o| (o.call, o.line)));
        parts
    }
}

/// A list grown in chunks, so that it never moves what it holds: a vector of a million
/// commands doubling its capacity held the old copy beside the new one, a sixth of a
/// long run's check. Joined once at the end into a vector of exactly its length.
struct Chunks<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunks<T> {
    /// The largest chunk: small next to a long run's commands, large enough to be few.
    const MOST: usize = 1 << 16;

    fn push(&mut self, item: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < last.capacity() => last.push(item),
            last => {
                let capacity = last.map_or(16, |l| (2 * l.capacity()).min(Self::MOST));
                let mut chunk = Vec::with_capacity(capacity);
                chunk.push(item);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    fn append(&mut self, mut other: Chunks<T>) {
        self.chunks.append(&mut other.chunks);
        self.len += other.len;
    }

    /// Everything in one vector, each chunk freed as soon as it is moved.
    fn into_vec(self) -> Vec<T> {
        let mut all = Vec::with_capacity(self.len);
        for chunk in self.chunks {
            all.extend(chunk);
        }
        all
    }
}

/// The checker's partitions of `ops` ([`Partitions`]).
pub fn partitions(ops: Vec<CommandOp>) -> Vec<Vec<LinOp<RedisSpec>>> {
    let mut parts = Partitions::default();
    for op in ops {
        parts.add(op);
    }
    parts.finish()
}

/// Whether `ops` are linearizable as one Redis per server, within `budget`.
pub fn linearize(ops: Vec<CommandOp>, budget: &Budget) -> LinResult<RedisSpec> {
    decide(&partitions(ops), budget)
}

/// Why an illegal partition is not one Redis: a one-sentence summary and the
/// explanation, line by line.
pub fn explain(ill: &Illegal<RedisSpec>) -> (String, Vec<String>) {
    let Some(stuck) = ill.stuck.first().map(|&i| &ill.ops[i]) else {
        return (
            "no order of the commands is a behaviour of one Redis".to_string(),
            Vec::new(),
        );
    };
    if !ill.order_known {
        let summary = format!(
            "not linearizable as one Redis: {} contradicts every state one server could be in",
            stuck.describe()
        );
        return (
            summary,
            vec![
                format!(
                    "checked as a stream, no state the {} commands allow before it meets its reply; the search for their longest order ran out of budget",
                    ill.ops.len()
                ),
                format!(
                    "then {} [{} – {}] cannot happen",
                    stuck.describe(),
                    fmt_time(stuck.call),
                    stuck.ret.map_or("never returned".to_string(), fmt_time)
                ),
            ],
        );
    }
    let mut lines = vec![format!(
        "the longest order of these commands one Redis accepts has {} of {}:",
        ill.longest.len(),
        ill.ops.len()
    )];
    let shown = ill.longest.len().saturating_sub(6);
    if shown > 0 {
        lines.push(format!("  … {shown} earlier commands"));
    }
    for &i in &ill.longest[shown..] {
        lines.push(format!("  {}", ill.ops[i].describe()));
    }
    let key = stuck.input.key().unwrap_or_default();
    let now = stuck.call;
    let at = fmt_time(now);
    let mut held: Vec<String> = ill
        .states_after
        .iter()
        .map(|s| entry_text_with(s, key, now, fmt_time))
        .collect();
    held.dedup();
    let held = one_of(&held);
    lines.push(format!("after them `{key}` is {held} at {at}"));
    let last_write =
        ill.longest.iter().rev().map(|&i| &ill.ops[i]).find(|op| {
            op.input.is_write() && op.output.is_some() && op.input.keys().contains(&key)
        });
    if let Some(w) = last_write {
        lines.push(format!("  (last written by {})", w.describe()));
    }
    let summary = format!(
        "not linearizable as one Redis: {} contradicts every state one server could be in \
         ({key} = {})",
        stuck.describe(),
        held
    );
    lines.push(format!(
        "next, {} cannot follow: one Redis would not answer {}",
        stuck.describe(),
        stuck
            .output
            .as_ref()
            .map_or_else(|| "?".to_string(), RedisReply::to_string)
    ));
    lines.push(
        "a server that forgot an acknowledged write answers so: a replica promoted before \
         the write reached it, or a restart without the data"
            .to_string(),
    );
    (summary, lines)
}

/// The finding for a Redis history's commands, or `None` when it has none. The
/// commands are taken one at a time and kept only as the checker's operations.
pub fn check(history: &History, paired: &Paired, budget: &Budget) -> Option<Finding> {
    if !paired.points.iter().any(|(_, e)| e.op == OpKind::Command) {
        return None;
    }
    let mut parts = Partitions::default();
    if let Err(why) = crate::backend::each_command_event::<RedisSpec>(paired, |op| parts.add(op)) {
        return Some(Finding::new(
            NAME,
            Verdict::Unknown,
            format!("{}: {why}", history.source),
        ));
    }
    let (commands, servers, left_out) = parts.counts();
    let counted = |f: Finding| {
        f.stat("commands", commands)
            .stat("servers", servers)
            .stat("left_out", left_out)
    };
    let judged = commands - left_out;
    Some(counted(match decide(&parts.finish(), budget) {
        LinResult::Ok if judged == 0 => Finding::new(
            NAME,
            Verdict::Unknown,
            format!(
                "none of the {} Redis commands could be judged: commands the spec does not model may have written every server",
                commands
            ),
        ),
        LinResult::Ok => Finding::new(
            NAME,
            Verdict::Ok,
            if left_out == 0 {
                format!(
                    "the {} Redis commands are linearizable as one Redis per server ({servers})",
                    commands
                )
            } else {
                format!(
                    "the {judged} Redis commands judged are linearizable as one Redis per server; {left_out} left out (commands the spec does not model, and the servers they may have written)"
                )
            },
        ),
        LinResult::Unknown(why) => Finding::new(
            NAME,
            Verdict::Unknown,
            LinResult::<RedisSpec>::why_unknown(why),
        ),
        LinResult::Illegal(ill) => {
            let (summary, explanation) = explain(&ill);
            let mut f = Finding::new(NAME, Verdict::Violation, summary);
            f.explanation = explanation;
            f.ops = ill
                .stuck
                .iter()
                .map(|&i| &ill.ops[i])
                .map(|op| OpRef {
                    line: op.line,
                    process: format!("c{}", op.client),
                    description: RedisSpec::describe(&op.input, op.output.as_ref()),
                })
                .collect();
            f
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(client: u32, words: &[&str], reply: RedisReply, at: u64) -> CommandOp {
        let args: Vec<String> = words[1..].iter().map(|w| w.to_string()).collect();
        CommandOp {
            client,
            node: 0,
            command: RedisCommand::from_words(words[0], &args).expect("a Redis command"),
            reply: Some(reply),
            call_ns: at,
            return_ns: at + 1,
            line: at as usize,
        }
    }

    /// A write acknowledged, then read back missing: proven illegal as a stream even
    /// when the search for the longest order has no budget, and then told without one.
    #[test]
    fn a_lost_write_without_its_longest_order_names_the_reply_no_server_gives() {
        // Long enough for the search to look at its budget (every 1024 steps).
        let mut ops: Vec<CommandOp> = (0..1000u64)
            .flat_map(|i| {
                let v = format!("c{i}");
                [
                    sent(0, &["SET", "lock", &v], RedisReply::Ok, 20 * i),
                    sent(
                        1,
                        &["GET", "lock"],
                        RedisReply::Bulk(v.clone()),
                        20 * i + 10,
                    ),
                ]
            })
            .collect();
        ops.push(sent(1, &["GET", "lock"], RedisReply::Nil, 20_000));
        let starved = Budget {
            deadline: None,
            max_bytes: 0,
        };
        let LinResult::Illegal(ill) = linearize(ops, &starved) else {
            panic!("a lost write is not one Redis");
        };
        assert!(!ill.order_known);
        let (summary, lines) = explain(&ill);
        assert!(summary.contains("GET lock"), "{summary}");
        assert!(
            lines[0].contains("ran out of budget") && lines[1].contains("cannot happen"),
            "{lines:?}"
        );
        assert!(!lines.iter().any(|l| l.contains("longest order of these")));
    }
}
