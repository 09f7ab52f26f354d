//! A protocol's steps: what a client sends (words or a script, with placeholders), and
//! what each reply means.

use crate::redis::spec::{lua, RedisCommand, RedisReply};

pub use crate::protocol::outcome::{OnBusy, Outcome};

/// What a placeholder stands for when a step is sent.
#[derive(Clone, Copy, Debug)]
pub struct Fill<'a> {
    /// `{key}`: the lock's name.
    pub key: &'a str,
    /// `{token}`: the client's identity (see [`TokenKind`]).
    pub token: &'a str,
    /// `{lease_ms}`: the lease (in a model, ticks).
    pub lease_ms: u64,
    /// `{now_ms}`: the client's clock.
    pub now_ms: u64,
    /// `{reply}`: the reply of the last step that went on (`next`) since the client's
    /// current acquire attempt began — an acquire step's, then a release step's; a
    /// renewal reads the acquire's — as [`reply_text`] writes it (empty where none).
    pub reply: &'a str,
}

/// The placeholders a template may use.
pub const PLACEHOLDERS: &[&str] = &["{key}", "{token}", "{lease_ms}", "{now_ms}", "{reply}"];

/// A reply as a later step's `{reply}` reads it: an integer in decimal, a string as
/// it is, `OK` for a status, empty for nil, the message for an error (an array, which
/// no lock step's reply is carried on as, is empty).
pub fn reply_text(reply: &RedisReply) -> String {
    match reply {
        RedisReply::Integer(n) => n.to_string(),
        RedisReply::Bulk(s) => s.clone(),
        RedisReply::Ok => "OK".into(),
        RedisReply::Error(e) => e.clone(),
        _ => String::new(),
    }
}

/// One word or argument with placeholders (`{key}`, `{token}`, `{lease_ms}`,
/// `{now_ms}`, `{reply}`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Template(pub String);

impl Template {
    /// The text with every placeholder filled.
    pub fn fill(&self, f: &Fill<'_>) -> String {
        if !self.0.contains('{') {
            return self.0.clone();
        }
        self.0
            .replace("{key}", f.key)
            .replace("{token}", f.token)
            .replace("{lease_ms}", &f.lease_ms.to_string())
            .replace("{now_ms}", &f.now_ms.to_string())
            .replace("{reply}", f.reply)
    }

    /// The first `{…}` that is no placeholder, if any.
    pub fn unknown_placeholder(&self) -> Option<String> {
        let mut rest = self.0.as_str();
        while let Some(open) = rest.find('{') {
            let close = rest[open..].find('}').map(|c| open + c + 1)?;
            let p = &rest[open..close];
            if !PLACEHOLDERS.contains(&p) {
                return Some(p.to_string());
            }
            rest = &rest[close..];
        }
        None
    }

    /// Whether the text uses `placeholder`.
    pub fn uses(&self, placeholder: &str) -> bool {
        self.0.contains(placeholder)
    }
}

/// What a client writes as its identity (`{token}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TokenKind {
    /// A per-client random value (`c0`, `c1`, … in a model).
    #[default]
    Unique,
    /// The millisecond the client started acquiring: two clients starting in the same
    /// millisecond share it.
    Timestamp,
    /// A thread id without a per-process part: every client writes `t1`.
    ThreadId,
}

/// What a step sends.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Send {
    /// A command as words: `SET {key} {token} NX PX {lease_ms}`.
    Words(Vec<Template>),
    /// A script, by its SHA1 (its source registered with the spec), with `KEYS` and
    /// `ARGV`.
    Script {
        /// The script's SHA1.
        sha: String,
        /// `KEYS`.
        keys: Vec<Template>,
        /// `ARGV`.
        args: Vec<Template>,
    },
}

impl Send {
    /// The spec's command for this step, placeholders filled (`None`: the words are no
    /// command of the spec; a loaded protocol was checked for that).
    pub fn command(&self, f: &Fill<'_>) -> Option<RedisCommand> {
        match self {
            Send::Words(words) => {
                let words: Vec<String> = words.iter().map(|w| w.fill(f)).collect();
                let (name, args) = words.split_first()?;
                RedisCommand::from_words(name, args)
            }
            Send::Script { sha, keys, args } => Some(RedisCommand::Eval {
                sha: sha.clone(),
                keys: keys.iter().map(|k| k.fill(f)).collect(),
                args: args.iter().map(|a| a.fill(f)).collect(),
            }),
        }
    }

    /// The script's source, if this step runs one.
    pub fn script(&self) -> Option<std::sync::Arc<str>> {
        match self {
            Send::Script { sha, .. } => lua::source(sha),
            Send::Words(_) => None,
        }
    }

    fn templates(&self) -> Box<dyn Iterator<Item = &Template> + '_> {
        match self {
            Send::Words(w) => Box::new(w.iter()),
            Send::Script { keys, args, .. } => Box::new(keys.iter().chain(args)),
        }
    }

    /// Whether a placeholder is used.
    pub fn uses(&self, placeholder: &str) -> bool {
        self.templates().any(|t| t.uses(placeholder))
    }
}

/// A pattern a reply may match.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// `any`: every reply.
    Any,
    /// `OK`.
    Ok,
    /// `nil`.
    Nil,
    /// `error`: any error reply.
    Error,
    /// An integer compared: `1`, `>0`, `>=0`, `<0`, `!=0`.
    Int(Cmp, i64),
    /// A bulk string equal to the text, placeholders filled (`{token}`).
    Bulk(Template),
}

/// How an integer reply is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `=`.
    Eq,
    /// `!=`.
    Ne,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
}

impl Pattern {
    /// Reads a pattern: `any`, `OK`, `nil`, `error`, an integer with an optional
    /// comparison (`1`, `>0`, `<=-1`), or a bulk string in quotes (`"{token}"`).
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let t = text.trim();
        let cmp = [
            (">=", Cmp::Ge),
            ("<=", Cmp::Le),
            ("!=", Cmp::Ne),
            (">", Cmp::Gt),
            ("<", Cmp::Lt),
            ("=", Cmp::Eq),
        ];
        Ok(match t {
            "any" => Pattern::Any,
            "OK" | "ok" => Pattern::Ok,
            "nil" => Pattern::Nil,
            "error" => Pattern::Error,
            _ if t.len() >= 2 && t.starts_with('"') && t.ends_with('"') => {
                Pattern::Bulk(Template(t[1..t.len() - 1].to_string()))
            }
            _ => {
                let (op, rest) = cmp
                    .iter()
                    .find_map(|(p, c)| t.strip_prefix(p).map(|r| (*c, r)))
                    .unwrap_or((Cmp::Eq, t));
                let n = rest.trim().parse::<i64>().map_err(|_| {
                    format!(
                        "`{text}` is no reply pattern: write any, OK, nil, error, an integer (1, >0, <0, !=0) or a quoted string (\"{{token}}\")"
                    )
                })?;
                Pattern::Int(op, n)
            }
        })
    }

    /// Whether `reply` matches, placeholders filled from `f`.
    pub fn matches(&self, reply: &RedisReply, f: &Fill<'_>) -> bool {
        match (self, reply) {
            (Pattern::Any, _)
            | (Pattern::Ok, RedisReply::Ok)
            | (Pattern::Nil, RedisReply::Nil)
            | (Pattern::Error, RedisReply::Error(_)) => true,
            (Pattern::Int(op, want), RedisReply::Integer(n)) => match op {
                Cmp::Eq => n == want,
                Cmp::Ne => n != want,
                Cmp::Gt => n > want,
                Cmp::Ge => n >= want,
                Cmp::Lt => n < want,
                Cmp::Le => n <= want,
            },
            (Pattern::Bulk(t), RedisReply::Bulk(s)) => *s == t.fill(f),
            _ => false,
        }
    }
}

/// One step of an operation: what is sent, and what its replies mean (tried in order;
/// a reply none matches means the operation's default, see [`Step::outcome`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// What is sent.
    pub send: Send,
    /// The outcomes by pattern, in the order they are tried.
    pub outcomes: Vec<(Pattern, Outcome)>,
    /// Where the step was written, for messages (`lock.toml:12`).
    pub at: String,
    /// Its granted reply (an integer) is the client's fencing token, which the
    /// protected resource checks.
    pub token: bool,
}

impl Step {
    /// The outcome of `reply`, or `default` when no pattern matches it.
    pub fn outcome(&self, reply: &RedisReply, f: &Fill<'_>, default: Outcome) -> Outcome {
        // `any` is tried last wherever it was written: it is the "otherwise".
        let specific = self
            .outcomes
            .iter()
            .filter(|(p, _)| *p != Pattern::Any)
            .chain(self.outcomes.iter().filter(|(p, _)| *p == Pattern::Any));
        specific
            .into_iter()
            .find(|(p, _)| p.matches(reply, f))
            .map_or(default, |(_, o)| *o)
    }

    /// Whether it sends or compares `{reply}`.
    pub fn uses_reply(&self) -> bool {
        let r = "{reply}";
        self.send.uses(r)
            || self
                .outcomes
                .iter()
                .any(|(p, _)| matches!(p, Pattern::Bulk(t) if t.uses(r)))
    }

    /// Whether some pattern leads to `o`.
    pub fn can(&self, o: Outcome) -> bool {
        self.outcomes.iter().any(|(_, x)| *x == o)
    }
}
