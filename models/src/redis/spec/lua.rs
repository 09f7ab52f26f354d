//! Scripts as Redis runs them: `EVAL`/`EVALSHA` atomically, in Lua 5.1, against the
//! node's keyspace. The spec does the same in an embedded Lua 5.1 (mlua with vendored
//! sources: the language version Redis embeds), its `redis.call` and `redis.pcall`
//! running the spec's own commands ([`RedisCommand::from_words`] read, `exec.rs` run),
//! so what a script does is what its commands do, written once.
//!
//! A script is known by its SHA1, in one book per process ([`register`]), as `EVALSHA`
//! names it. Each thread keeps one Lua state with every script it ran compiled once: a
//! search runs the same few scripts millions of times. As in Redis, a script may not
//! create or read undeclared globals, and what it wrote before an error stays written.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use mlua::{Function, HookTriggers, Lua, Value as LuaValue, Variadic, VmState};

use super::words::{NONDETERMINISTIC, SPEC_COMMANDS};
use super::*;

/// Instructions a script may run, in thousands, before it is stopped (Redis's
/// `busy-reply-threshold`, counted rather than timed so a search stays deterministic).
const BUDGET_K: u32 = 1000;

fn book() -> &'static RwLock<HashMap<String, Arc<str>>> {
    static BOOK: OnceLock<RwLock<HashMap<String, Arc<str>>>> = OnceLock::new();
    BOOK.get_or_init(Default::default)
}

/// The SHA1 by which Redis names `source` (lowercase hex).
pub fn sha1(source: &str) -> String {
    sha1_smol::Sha1::from(source).digest().to_string()
}

/// Makes `source` known by its SHA1, as `SCRIPT LOAD` does, and returns the SHA1.
pub fn register(source: &str) -> String {
    let sha = sha1(source);
    let mut book = book().write().unwrap_or_else(|p| p.into_inner());
    book.entry(sha.clone()).or_insert_with(|| Arc::from(source));
    sha
}

/// The source of script `sha` (any case), if it was registered.
pub fn source(sha: &str) -> Option<Arc<str>> {
    let book = book().read().unwrap_or_else(|p| p.into_inner());
    book.get(&sha.to_ascii_lowercase()).cloned()
}

/// What is wrong with a script, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    /// The 1-based line of the script.
    pub line: usize,
    /// What is wrong, and what to do about it.
    pub message: String,
}

/// Checks `source` before it runs: it compiles as Lua 5.1, and every command it calls
/// by a literal name (`redis.call('get', …)`) is one the spec runs and is
/// deterministic. A name built at run time is checked when called: the call fails as
/// an unknown command fails in Redis.
pub fn check(source: &str) -> Result<(), ScriptError> {
    let lua = Lua::new();
    if let Err(e) = lua.load(source).set_name("=script").into_function() {
        let text = e.to_string();
        let (line, message) = located(&text).unwrap_or((1, text.clone()));
        return Err(ScriptError {
            line,
            message: format!("Lua syntax error: {message}"),
        });
    }
    for (i, text) in source.lines().enumerate() {
        for name in called_names(text) {
            let lower = name.to_ascii_lowercase();
            let message = if NONDETERMINISTIC.contains(&lower.as_str()) {
                format!(
                    "calls `{name}`, whose answer depends on the server's clock or on chance: a model cannot explore it; pass the value in ARGV instead"
                )
            } else if SPEC_COMMANDS.contains(&lower.as_str()) {
                continue;
            } else {
                let hint = closest(&lower)
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                format!(
                    "calls `{name}`, which is no command of the Redis spec{hint}; it runs: {}",
                    SPEC_COMMANDS.join(", ")
                )
            };
            return Err(ScriptError {
                line: i + 1,
                message,
            });
        }
    }
    Ok(())
}

/// `script:12: message` → `(12, message)`.
fn located(text: &str) -> Option<(usize, String)> {
    let rest = &text[text.find("script:")? + "script:".len()..];
    let (line, message) = rest.split_once(':')?;
    Some((line.trim().parse().ok()?, message.trim().to_string()))
}

/// The literal command names of the `redis.call`/`redis.pcall` calls on one line.
fn called_names(line: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("redis.") {
        rest = &rest[at + "redis.".len()..];
        let Some(args) = rest
            .strip_prefix("call")
            .or_else(|| rest.strip_prefix("pcall"))
            .and_then(|r| r.trim_start().strip_prefix('('))
        else {
            continue;
        };
        let args = args.trim_start();
        let Some(quote) = args.chars().next().filter(|c| *c == '\'' || *c == '"') else {
            continue;
        };
        if let Some(end) = args[1..].find(quote) {
            names.push(&args[1..1 + end]);
        }
    }
    names
}

/// The spec command nearest to `name`, if one is a typo away.
fn closest(name: &str) -> Option<&'static str> {
    SPEC_COMMANDS
        .iter()
        .map(|c| (distance(name, c), *c))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, c)| c)
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (diag + usize::from(ca != *cb)).min(up + 1).min(row[j] + 1);
            diag = up;
        }
    }
    row[b.len()]
}

thread_local! {
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
    /// The keyspace and clock of the script running on this thread.
    static RUNNING: RefCell<Option<(RedisState, Clock)>> = const { RefCell::new(None) };
    /// Thousands of instructions left to the running script.
    static LEFT: Cell<u32> = const { Cell::new(0) };
}

/// Runs script `sha` with `keys` and `args` against `s` at `clock`: the reply Redis
/// would send.
pub(super) fn eval(
    s: &mut RedisState,
    sha: &str,
    keys: &[String],
    args: &[String],
    clock: Clock,
) -> RedisReply {
    let Some(src) = source(sha) else {
        return RedisReply::Error("NOSCRIPT No matching script. Please use EVAL.".into());
    };
    RUNNING.set(Some((std::mem::take(s), clock)));
    LEFT.set(BUDGET_K);
    let reply = ENGINE.with_borrow_mut(|engine| {
        if engine.is_none() {
            *engine = Some(Engine::new()?);
        }
        match engine {
            Some(e) => e.run(sha, &src, keys, args),
            None => Ok(RedisReply::Nil),
        }
    });
    if let Some((state, _)) = RUNNING.take() {
        *s = state;
    }
    reply.unwrap_or_else(|e| script_error(&lua_message(&e)))
}

/// The reply of a script that raised `message`: an error reply raised by `redis.call`
/// keeps its code (`WRONGTYPE …`), as Redis 7 answers; anything else is an `ERR`.
fn script_error(message: &str) -> RedisReply {
    let code = message.split(' ').next().unwrap_or("");
    let coded = code.len() > 1 && code.chars().all(|c| c.is_ascii_uppercase());
    if coded {
        RedisReply::Error(message.to_string())
    } else {
        RedisReply::Error(format!("ERR {message}"))
    }
}

/// One thread's Lua state and the scripts it compiled.
struct Engine {
    lua: Lua,
    compiled: HashMap<String, Function>,
}

impl Engine {
    fn new() -> mlua::Result<Engine> {
        let lua = Lua::new();
        let redis = lua.create_table()?;
        redis.set(
            "call",
            lua.create_function(|lua, a: Variadic<LuaValue>| call(lua, a, true))?,
        )?;
        redis.set(
            "pcall",
            lua.create_function(|lua, a: Variadic<LuaValue>| call(lua, a, false))?,
        )?;
        redis.set(
            "error_reply",
            lua.create_function(|lua, msg: String| reply_table(lua, "err", &msg))?,
        )?;
        redis.set(
            "status_reply",
            lua.create_function(|lua, msg: String| reply_table(lua, "ok", &msg))?,
        )?;
        redis.set(
            "sha1hex",
            lua.create_function(|_, text: String| Ok(sha1(&text)))?,
        )?;
        redis.set(
            "log",
            lua.create_function(|_, _: Variadic<LuaValue>| Ok(()))?,
        )?;
        for (i, level) in ["LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"]
            .iter()
            .enumerate()
        {
            redis.set(*level, i)?;
        }
        let globals = lua.globals();
        globals.set("redis", redis)?;
        // Redis's script sandbox: no new globals, no reads of undefined ones.
        let guard = lua.create_table()?;
        guard.set(
            "__newindex",
            lua.create_function(|_, (_, name): (LuaValue, String)| -> mlua::Result<()> {
                Err(mlua::Error::RuntimeError(format!(
                    "Script attempted to create global variable '{name}'"
                )))
            })?,
        )?;
        guard.set(
            "__index",
            lua.create_function(|_, (_, name): (LuaValue, String)| -> mlua::Result<()> {
                Err(mlua::Error::RuntimeError(format!(
                    "Script attempted to access nonexistent global variable '{name}'"
                )))
            })?,
        )?;
        globals.set_metatable(Some(guard))?;
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(1000),
            |_, _| match LEFT.get() {
                0 => Err(mlua::Error::RuntimeError(
                    "the script ran past its instruction budget (an endless loop?)".into(),
                )),
                n => {
                    LEFT.set(n - 1);
                    Ok(VmState::Continue)
                }
            },
        )?;
        Ok(Engine {
            lua,
            compiled: HashMap::new(),
        })
    }

    fn run(
        &mut self,
        sha: &str,
        src: &str,
        keys: &[String],
        args: &[String],
    ) -> mlua::Result<RedisReply> {
        let f = match self.compiled.get(sha) {
            Some(f) => f.clone(),
            None => {
                let f = self
                    .lua
                    .load(src)
                    .set_name("=user_script")
                    .into_function()?;
                self.compiled.insert(sha.to_string(), f.clone());
                f
            }
        };
        let globals = self.lua.globals();
        let strs = |v: &[String]| self.lua.create_sequence_from(v.iter().map(String::as_str));
        globals.raw_set("KEYS", strs(keys)?)?;
        globals.raw_set("ARGV", strs(args)?)?;
        to_reply(f.call::<LuaValue>(())?)
    }
}

/// The text of a Lua error, without mlua's traceback.
fn lua_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => lua_message(cause),
        mlua::Error::RuntimeError(m) => m.clone(),
        other => other.to_string().lines().next().unwrap_or("").to_string(),
    }
}

fn reply_table(lua: &Lua, field: &str, text: &str) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    t.raw_set(field, text)?;
    Ok(t)
}

/// `redis.call` (`raise`: an error reply raises) and `redis.pcall` (it is returned).
fn call(lua: &Lua, args: Variadic<LuaValue>, raise: bool) -> mlua::Result<LuaValue> {
    let mut words = Vec::with_capacity(args.len());
    for a in args.iter() {
        words.push(match a {
            LuaValue::String(s) => s.to_string_lossy(),
            LuaValue::Integer(i) => i.to_string(),
            LuaValue::Number(n) => number_text(*n),
            _ => {
                return Err(mlua::Error::RuntimeError(
                    "Lua redis lib command arguments must be strings or integers".into(),
                ))
            }
        });
    }
    let reply = match words.split_first() {
        None => RedisReply::Error(
            "ERR Please specify at least one argument for this redis lib call".into(),
        ),
        Some((name, rest)) => command_reply(name, rest),
    };
    match reply {
        RedisReply::Error(e) if raise => Err(mlua::Error::RuntimeError(e)),
        other => to_lua(lua, &other),
    }
}

/// What the spec answers to one command called from the running script.
fn command_reply(name: &str, args: &[String]) -> RedisReply {
    let lower = name.to_ascii_lowercase();
    if NONDETERMINISTIC.contains(&lower.as_str()) {
        return RedisReply::Error(format!(
            "ERR {name}: nondeterministic, not run by the spec (pass the value in ARGV)"
        ));
    }
    match RedisCommand::from_words(name, args) {
        Some(cmd) => RUNNING.with_borrow_mut(|running| match running {
            Some((state, clock)) => exec(state, &cmd, *clock),
            None => RedisReply::Error("ERR no script is running".into()),
        }),
        None if SPEC_COMMANDS.contains(&lower.as_str()) => {
            RedisReply::Error(format!("ERR syntax error or wrong number of arguments for '{lower}'"))
        }
        None => RedisReply::Error(format!(
            "ERR Unknown Redis command called from script: '{name}' (or one the spec does not model)"
        )),
    }
}

/// A Lua number as Redis passes it on: integral ones without a fraction.
fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e17 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// A reply as a script sees it (Redis's RESP-to-Lua conversion).
fn to_lua(lua: &Lua, reply: &RedisReply) -> mlua::Result<LuaValue> {
    Ok(match reply {
        RedisReply::Ok => LuaValue::Table(reply_table(lua, "ok", "OK")?),
        RedisReply::Nil => LuaValue::Boolean(false),
        RedisReply::Integer(n) => LuaValue::Integer(*n),
        RedisReply::Bulk(s) => LuaValue::String(lua.create_string(s)?),
        RedisReply::Error(e) => LuaValue::Table(reply_table(lua, "err", e)?),
        RedisReply::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            LuaValue::Table(t)
        }
    })
}

/// What a script returns as the reply Redis sends (Redis's Lua-to-RESP conversion:
/// numbers truncate to integers, `false` is nil, `true` is 1, an array stops at its
/// first nil).
fn to_reply(v: LuaValue) -> mlua::Result<RedisReply> {
    Ok(match v {
        LuaValue::Nil | LuaValue::Boolean(false) => RedisReply::Nil,
        LuaValue::Boolean(true) => RedisReply::Integer(1),
        LuaValue::Integer(n) => RedisReply::Integer(n),
        LuaValue::Number(n) => RedisReply::Integer(n as i64),
        LuaValue::String(s) => RedisReply::Bulk(s.to_string_lossy()),
        LuaValue::Table(t) => {
            if let LuaValue::String(e) = t.raw_get::<LuaValue>("err")? {
                return Ok(RedisReply::Error(e.to_string_lossy()));
            }
            if let LuaValue::String(s) = t.raw_get::<LuaValue>("ok")? {
                let s = s.to_string_lossy();
                return Ok(if s == "OK" {
                    RedisReply::Ok
                } else {
                    RedisReply::Bulk(s)
                });
            }
            let mut items = Vec::new();
            for i in 1..=t.raw_len() {
                match t.raw_get::<LuaValue>(i)? {
                    LuaValue::Nil => break,
                    item => items.push(to_reply(item)?),
                }
            }
            RedisReply::Array(items)
        }
        _ => RedisReply::Nil,
    })
}

#[cfg(test)]
mod tests;
