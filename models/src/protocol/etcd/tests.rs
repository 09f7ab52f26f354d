//! Reading etcd protocol files: what is accepted and every error with its line.

use super::file::parse;
use super::*;

const GUARDED: &str = r#"family = "etcd"
name = "guarded"
lease = true

[[acquire]]
granted = "succeeded"
busy = "failed"
[acquire.send.txn]
compare = [{ create-revision = { key = "{key}", rev = 0 } }]
success = [{ put = { key = "{key}", value = "{token}", lease = "{lease}" } }]

[[release]]
released = "succeeded"
not_held = "failed"
[release.send.txn]
compare = [{ create-revision = { key = "{key}", rev = "{rev}" } }]
success = [{ delete = { key = "{key}" } }]
"#;

fn err(text: &str) -> ProtocolError {
    match parse("p.toml", text) {
        Ok(p) => panic!("accepted: {p:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_txn_lock_reads_and_fills_its_placeholders() {
    let p = parse("p.toml", GUARDED).unwrap_or_else(|e| panic!("{e}"));
    assert!(p.lease);
    let f = EtcdFill {
        key: "lock",
        token: "c1",
        lease: 7,
        rev: 12,
    };
    let release = p.release_request(0, &f).expect("a request");
    assert_eq!(
        release,
        crate::etcd::spec::guarded_by("lock", 12, EtcdCommand::Delete { key: "lock".into() })
    );
    let acquire = p.acquire_request(0, &f).expect("a request");
    assert!(matches!(&acquire, EtcdCommand::Txn { success, failure, .. }
        if failure.is_empty() && success == &vec![EtcdCommand::Put { key: "lock".into(), value: "c1".into(), lease: Some(7) }]));
}

#[test]
fn bad_files_say_where_and_what() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "family = \"etcd\"\n[[acquire]]\nsend = { get = { key = \"{key}\" } }\ngranted = \"found\"\nwhen = 1\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:5",
            "unknown field `when`",
        ),
        (
            "family = \"etcd\"\n[[acquire]]\nsend = { set = { key = \"{key}\" } }\ngranted = \"ok\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:2",
            "not an etcd request",
        ),
        (
            "family = \"etcd\"\n[[acquire]]\nsend = { put = { key = \"{key}\", value = \"{me}\" } }\ngranted = \"ok\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:2",
            "`{me}` is no placeholder",
        ),
        (
            "family = \"etcd\"\n[[acquire]]\nsend = { put = { key = \"{key}\", value = \"x\", lease = \"{lease}\" } }\ngranted = \"ok\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:2",
            "lease = true",
        ),
        (
            "family = \"etcd\"\n[[acquire]]\nsend = { put = { key = \"{key}\", value = \"x\" } }\ngranted = \"succeeded\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:2",
            "`succeeded` never answers a put request",
        ),
        (
            "family = \"etcd\"\nlease = true\n[[acquire]]\nsend = { grant = { ttl = 5 } }\ngranted = \"any\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:3",
            "the session takes and keeps the lease",
        ),
        (
            "family = \"etcd\"\n[[acquire]]\nsend = { txn = { success = [{ revoke = { lease = 1 } }] } }\ngranted = \"succeeded\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:2",
            "not `revoke`",
        ),
        (
            "family = \"etcd\"\n[[acquire]]\nsend = { put = { key = \"{key}\", value = \"x\" } }\ngranted = \"ok\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n[[renew]]\nsend = { get = { key = \"{key}\" } }\n",
            "p.toml:7",
            "keep-alives",
        ),
        (
            "family = \"etcd\"\n[[acquire]]\ngranted = \"ok\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:2",
            "a step needs `send`",
        ),
        (
            "family = \"etcd\"\nfencing = true\n[[acquire]]\nsend = { get = { key = \"{key}\" } }\ngranted = \"empty\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:3",
            "no acquire step puts",
        ),
        (
            "family = \"etcd\"\n[[acquire]]\nsend = { get = { key = \"{key}\" } }\ngranted = \"gone\"\n[[release]]\nsend = { delete = { key = \"{key}\" } }\n",
            "p.toml:2",
            "no etcd reply pattern",
        ),
    ];
    for (text, at, what) in cases {
        let e = err(text);
        assert_eq!(e.at, *at, "{text}\n{e}");
        assert!(e.message.contains(what), "{text}\nwanted `{what}` in: {e}");
    }
}

#[test]
fn the_builder_is_the_files_reader() {
    let built = EtcdProtocol::builder("guarded")
        .lease(true)
        .acquire(
            EtcdStepBuilder::send(
                r#"txn = { compare = [{ create-revision = { key = "{key}", rev = 0 } }], success = [{ put = { key = "{key}", value = "{token}", lease = "{lease}" } }] }"#,
            )
            .granted("succeeded")
            .busy("failed"),
        )
        .release(
            EtcdStepBuilder::send(
                r#"txn = { compare = [{ create-revision = { key = "{key}", rev = "{rev}" } }], success = [{ delete = { key = "{key}" } }] }"#,
            )
            .released("succeeded")
            .not_held("failed"),
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let read = parse("p.toml", GUARDED).unwrap_or_else(|e| panic!("{e}"));
    let f = EtcdFill::PROBE;
    assert_eq!(built.acquire_request(0, &f), read.acquire_request(0, &f));
    assert_eq!(built.release_request(0, &f), read.release_request(0, &f));
}
