use super::*;

fn read_none(name: &str) -> Result<String, String> {
    Err(format!("cannot read {name}: No such file"))
}

fn error(text: &str) -> ProtocolError {
    parse("p.toml", text, &read_none).expect_err("a bad protocol")
}

const GOOD: &str = r#"family = "redis"

[[acquire]]
send = "SET {key} {token} NX PX {lease_ms}"
granted = "OK"
busy = "nil"

[[release]]
lua = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""
keys = ["{key}"]
args = ["{token}"]
released = "1"
not_held = "0"
"#;

#[test]
fn a_good_file_reads_into_steps() {
    let p = parse("p.toml", GOOD, &read_none).expect("parses");
    assert_eq!(p.name, "p");
    assert_eq!(p.acquire.len(), 1);
    assert_eq!(p.release.len(), 1);
    assert!(p.has_ttl());
    assert_eq!(p.acquire[0].at, "p.toml:3");
    assert_eq!(p.scripts().len(), 1);
}

#[test]
fn every_mistake_names_its_file_line_and_fix() {
    let cases = [
        (
            GOOD.replace("granted = \"OK\"", "granted = \"OK\"\ngrant = \"1\""),
            "p.toml:6",
            "unknown field `grant`",
        ),
        (
            GOOD.replace("send = \"SET", "send = \"SETT"),
            "p.toml:3",
            "no command of the Redis spec",
        ),
        (
            GOOD.replace("redis.call('get'", "redis.call('TIME'"),
            "p.toml:10",
            "clock",
        ),
        (
            GOOD.replace("return 0\n\"\"\"", "return 0 end\n\"\"\""),
            "p.toml:13",
            "syntax",
        ),
        (
            GOOD.replace("redis.call('del'", "redis.call('dell'"),
            "p.toml:11",
            "did you mean `del`",
        ),
        (
            GOOD.replace("family = \"redis\"", "family = \"redis\"\ntoken = \"uuid\""),
            "p.toml:2",
            "unique, timestamp, thread-id or constant",
        ),
        (
            GOOD.replace("busy = \"nil\"", "busy = \"nothing\""),
            "p.toml:3",
            "no reply pattern",
        ),
        (
            GOOD.replace("busy = \"nil\"", "released = \"nil\""),
            "p.toml:3",
            "no outcome of acquire steps",
        ),
        (
            GOOD.replace("{lease_ms}", "{ttl}"),
            "p.toml:3",
            "`{ttl}` is no placeholder",
        ),
        (
            GOOD.replace("lua = \"\"\"", "script = \"unlock.lua\"\nlua2 = \"\"\""),
            "p.toml:",
            "",
        ),
    ];
    for (text, at, what) in &cases {
        let e = error(text);
        assert!(e.at.starts_with(at), "{at}: {e}");
        assert!(e.message.contains(what), "{what}: {e}");
    }
    let missing = GOOD.replace(
        "lua = \"\"\"\nif redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('del', KEYS[1])\nend\nreturn 0\n\"\"\"",
        "script = \"unlock.lua\"",
    );
    let e = error(&missing);
    assert_eq!(e.at, "p.toml:9", "{e}");
    assert!(e.message.contains("cannot read unlock.lua"), "{e}");
}

#[test]
fn a_file_without_steps_is_named() {
    let e = error("family = \"redis\"\n");
    assert_eq!(e.at, "p.toml", "{e}");
    assert!(e.message.contains("at least one acquire"), "{e}");
}
