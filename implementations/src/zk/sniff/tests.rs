//! The sniffer fed hand-built frames byte by byte: every split point of the stream
//! must read the same. One file over 500 lines: the jute frame builders every case
//! shares are most of it.

use super::*;
use crate::recorder::Exchange;
use crate::zk::jute::op;
use crate::zk::ZkWire;
use decode::NO_NODE;
use locklab_models::zk::spec::Znode;

const SESSION: i64 = 0x0100_0000_0000_0007;
const SID: SessionId = SESSION as SessionId;

/// Jute records, written as a client or server would.
#[derive(Default)]
struct W(Vec<u8>);

impl W {
    fn int(mut self, v: i32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn long(mut self, v: i64) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn boolean(mut self, v: bool) -> Self {
        self.0.push(u8::from(v));
        self
    }
    fn buffer(self, b: &[u8]) -> Self {
        let mut w = self.int(i32::try_from(b.len()).unwrap_or(0));
        w.0.extend_from_slice(b);
        w
    }
    fn string(self, s: &str) -> Self {
        self.buffer(s.as_bytes())
    }
    fn stat(self, czxid: i64, version: i32, owner: i64) -> Self {
        self.long(czxid)
            .long(czxid + 1)
            .long(1000)
            .long(2000)
            .int(version)
            .int(0)
            .int(0)
            .long(owner)
            .int(0)
            .int(0)
            .long(czxid)
    }
    /// The open ACL (`world:anyone`, all permissions).
    fn acl(self) -> Self {
        self.int(1).int(31).string("world").string("anyone")
    }
    fn create_body(self, path: &str, data: &str, flags: i32) -> Self {
        self.string(path).string(data).acl().int(flags)
    }
    fn multi_header(self, kind: i32, done: bool) -> Self {
        self.int(kind).boolean(done).int(-1)
    }
    fn frame(self) -> Vec<u8> {
        let mut f = i32::try_from(self.0.len())
            .unwrap_or(0)
            .to_be_bytes()
            .to_vec();
        f.extend_from_slice(&self.0);
        f
    }
}

fn request(xid: i32, kind: i32, body: W) -> (bool, Vec<u8>) {
    let mut w = W::default().int(xid).int(kind);
    w.0.extend_from_slice(&body.0);
    (true, w.frame())
}

fn reply(xid: i32, zxid: i64, err: i32, body: W) -> (bool, Vec<u8>) {
    let mut w = W::default().int(xid).long(zxid).int(err);
    w.0.extend_from_slice(&body.0);
    (false, w.frame())
}

/// The handshake of a new session asking for 2 s (with the readOnly flag clients
/// send and the one servers answer).
fn connect() -> Vec<(bool, Vec<u8>)> {
    vec![
        (
            true,
            W::default()
                .int(0)
                .long(0)
                .int(2000)
                .long(0)
                .buffer(&[0; 16])
                .boolean(false)
                .frame(),
        ),
        (
            false,
            W::default()
                .int(0)
                .int(4000)
                .long(SESSION)
                .buffer(&[7; 16])
                .boolean(false)
                .frame(),
        ),
    ]
}

fn sniff(talk: &[(bool, Vec<u8>)]) -> Vec<Exchange<ZkWire>> {
    let recorder = RequestLog::new();
    {
        let mut s = Sniffer::new(recorder.clone(), 2);
        for (from_client, bytes) in talk {
            // Byte by byte: any split of the stream reads the same.
            for b in bytes {
                if *from_client {
                    s.sent(std::slice::from_ref(b));
                } else {
                    s.received(std::slice::from_ref(b));
                }
            }
        }
    }
    recorder.exchanges()
}

fn talk(parts: Vec<Vec<(bool, Vec<u8>)>>) -> Vec<(bool, Vec<u8>)> {
    parts.into_iter().flatten().collect()
}

fn pairs(ex: &[Exchange<ZkWire>]) -> Vec<(ZkCommand, Option<ZkReply>)> {
    ex.iter()
        .map(|e| (e.command.clone(), e.reply.clone()))
        .collect()
}

fn node(czxid: u64, version: u32, data: &str, owner: Option<SessionId>) -> ZkReply {
    ZkReply::Stat(Some(Znode {
        data: data.into(),
        czxid,
        mzxid: czxid + 1,
        version,
        ephemeral_owner: owner,
    }))
}

#[test]
fn a_lock_recipes_requests_come_out_in_the_specs_words() {
    let czxid: i64 = 0x1_0000_0005;
    let ex = sniff(&talk(vec![
        connect(),
        vec![
            request(xid::PING, op::PING, W::default()),
            reply(xid::PING, 3, 0, W::default()),
            request(
                1,
                op::CREATE,
                W::default().create_body("/lock/c0-n-", "c0", 3),
            ),
            reply(1, czxid, 0, W::default().string("/lock/c0-n-0000000003")),
            request(
                2,
                op::GET_CHILDREN,
                W::default().string("/lock").boolean(false),
            ),
            reply(
                2,
                czxid,
                0,
                W::default()
                    .int(2)
                    .string("c0-n-0000000003")
                    .string("c1-n-0000000002"),
            ),
            request(
                3,
                op::EXISTS,
                W::default().string("/lock/c1-n-0000000002").boolean(true),
            ),
            reply(3, czxid, 0, W::default().stat(czxid - 1, 0, SESSION + 1)),
            // The predecessor goes: a notification, not recorded.
            reply(
                xid::NOTIFICATION,
                -1,
                0,
                W::default().int(2).int(3).string("/lock/c1-n-0000000002"),
            ),
            request(
                4,
                op::EXISTS,
                W::default().string("/lock/c1-n-0000000002").boolean(true),
            ),
            reply(4, czxid + 1, NO_NODE, W::default()),
            request(5, op::CREATE2, W::default().create_body("/lock", "", 0)),
            reply(5, czxid + 1, -110, W::default()),
            request(
                6,
                op::DELETE,
                W::default().string("/lock/c0-n-0000000003").int(-1),
            ),
            reply(6, czxid + 2, 0, W::default()),
            request(
                7,
                op::CREATE2,
                W::default().create_body("/lock/c0-n-", "", 3),
            ),
            reply(
                7,
                czxid + 3,
                0,
                W::default()
                    .string("/lock/c0-n-0000000005")
                    .stat(czxid + 3, 0, SESSION),
            ),
            request(
                8,
                op::DELETE,
                W::default().string("/lock/c0-n-0000000005").int(0),
            ),
        ],
    ]));
    let create = |path: &str, data: &str, ephemeral: bool, sequential: bool| ZkCommand::Create {
        session: SID,
        path: path.into(),
        data: data.into(),
        ephemeral,
        sequential,
    };
    let exists = || ZkCommand::Exists {
        session: SID,
        path: "/lock/c1-n-0000000002".into(),
        watch: true,
    };
    let czxid = czxid as u64;
    assert_eq!(
        pairs(&ex),
        vec![
            (
                ZkCommand::Connect { timeout: 4000 },
                Some(ZkReply::Connected { session: SID })
            ),
            (
                create("/lock/c0-n-", "c0", true, true),
                Some(ZkReply::Created {
                    path: "/lock/c0-n-0000000003".into(),
                    czxid,
                })
            ),
            (
                ZkCommand::GetChildren {
                    session: SID,
                    path: "/lock".into(),
                    watch: false
                },
                Some(ZkReply::Children(vec![
                    "c0-n-0000000003".into(),
                    "c1-n-0000000002".into()
                ]))
            ),
            (exists(), Some(node(czxid - 1, 0, "", Some(SID + 1)))),
            (exists(), Some(ZkReply::Stat(None))),
            (
                create("/lock", "", false, false),
                Some(ZkReply::Error(ZkError::NodeExists))
            ),
            (
                ZkCommand::Delete {
                    session: SID,
                    path: "/lock/c0-n-0000000003".into(),
                    version: None
                },
                Some(ZkReply::Ok)
            ),
            (
                create("/lock/c0-n-", "", true, true),
                Some(ZkReply::Created {
                    path: "/lock/c0-n-0000000005".into(),
                    czxid: czxid + 3,
                })
            ),
            // Never answered: the connection ended.
            (
                ZkCommand::Delete {
                    session: SID,
                    path: "/lock/c0-n-0000000005".into(),
                    version: Some(0)
                },
                None
            ),
        ],
        "{ex:#?}"
    );
    assert!(ex.iter().all(|e| e.node == 2 && e.session == Some(SID)));
    assert!(ex.windows(2).all(|w| w[0].seq < w[1].seq));
}

#[test]
fn replies_pair_by_xid_and_requests_before_the_session_get_it() {
    let ex = sniff(&talk(vec![
        vec![connect()[0].clone()],
        // Sent before the connect response (as the Java client primes it).
        vec![
            request(1, op::GET_DATA, W::default().string("/a").boolean(false)),
            request(
                2,
                op::SET_DATA,
                W::default().string("/b").string("v2").int(3),
            ),
        ],
        vec![connect()[1].clone()],
        vec![
            reply(2, 9, 0, W::default().stat(5, 4, 0)),
            reply(1, 9, 0, W::default().string("x").stat(6, 0, 0)),
        ],
    ]));
    assert_eq!(
        pairs(&ex),
        vec![
            (
                ZkCommand::Connect { timeout: 4000 },
                Some(ZkReply::Connected { session: SID })
            ),
            (
                ZkCommand::GetData {
                    session: SID,
                    path: "/a".into()
                },
                Some(node(6, 0, "x", None))
            ),
            (
                ZkCommand::SetData {
                    session: SID,
                    path: "/b".into(),
                    data: "v2".into(),
                    version: Some(3)
                },
                Some(node(5, 4, "v2", None))
            ),
        ],
        "{ex:#?}"
    );
    // The answer to the second request came first.
    assert!(ex[2].done_ns <= ex[1].done_ns);
}

#[test]
fn a_multi_of_check_and_set_data_and_a_failed_one() {
    let check_and_set = |xid: i32| {
        request(
            xid,
            op::MULTI,
            W::default()
                .multi_header(op::CHECK, false)
                .string("/lock/c0-n-0000000003")
                .int(0)
                .multi_header(op::SET_DATA, false)
                .string("/counter")
                .string("8")
                .int(-1)
                .multi_header(op::ERROR, true),
        )
    };
    let ex = sniff(&talk(vec![
        connect(),
        vec![
            check_and_set(1),
            reply(
                1,
                40,
                0,
                W::default()
                    .multi_header(op::CHECK, false)
                    .multi_header(op::SET_DATA, false)
                    .stat(10, 8, 0)
                    .multi_header(op::ERROR, true),
            ),
            check_and_set(2),
            reply(
                2,
                41,
                0,
                W::default()
                    .multi_header(op::ERROR, false)
                    .int(NO_NODE)
                    .multi_header(op::ERROR, false)
                    .int(-2)
                    .multi_header(op::ERROR, true),
            ),
            // A create inside a multi answers its path; its czxid is the multi's.
            request(
                3,
                op::MULTI,
                W::default()
                    .multi_header(op::CREATE, false)
                    .create_body("/x", "", 1)
                    .multi_header(op::DELETE, false)
                    .string("/y")
                    .int(-1)
                    .multi_header(op::ERROR, true),
            ),
            reply(
                3,
                42,
                0,
                W::default()
                    .multi_header(op::CREATE, false)
                    .string("/x")
                    .multi_header(op::DELETE, false)
                    .multi_header(op::ERROR, true),
            ),
        ],
    ]));
    let ops = vec![
        ZkCommand::Check {
            path: "/lock/c0-n-0000000003".into(),
            version: Some(0),
        },
        ZkCommand::SetData {
            session: SID,
            path: "/counter".into(),
            data: "8".into(),
            version: None,
        },
    ];
    let multi = ZkCommand::Multi { session: SID, ops };
    assert_eq!(
        pairs(&ex[1..]),
        vec![
            (
                multi.clone(),
                Some(ZkReply::Multi(vec![ZkReply::Ok, node(10, 8, "8", None)]))
            ),
            (
                multi,
                Some(ZkReply::MultiFailed {
                    index: 0,
                    error: ZkError::NoNode
                })
            ),
            (
                ZkCommand::Multi {
                    session: SID,
                    ops: vec![
                        ZkCommand::Create {
                            session: SID,
                            path: "/x".into(),
                            data: String::new(),
                            ephemeral: true,
                            sequential: false
                        },
                        ZkCommand::Delete {
                            session: SID,
                            path: "/y".into(),
                            version: None
                        }
                    ]
                },
                Some(ZkReply::Multi(vec![
                    ZkReply::Created {
                        path: "/x".into(),
                        czxid: 42
                    },
                    ZkReply::Ok
                ]))
            ),
        ],
        "{ex:#?}"
    );
}

#[test]
fn errors_say_what_happened_only_when_the_server_knows() {
    let del = |xid: i32| {
        request(
            xid,
            op::DELETE,
            W::default().string("/lock/n-0000000001").int(2),
        )
    };
    let ex = sniff(&talk(vec![
        connect(),
        vec![
            del(1),
            reply(1, 5, -103, W::default()),
            del(2),
            reply(2, 5, -112, W::default()),
            // NOTEMPTY: refused.
            del(3),
            reply(3, 5, -111, W::default()),
            // OPERATIONTIMEOUT: it may or may not have happened.
            del(4),
            reply(4, 5, -7, W::default()),
        ],
    ]));
    let replies: Vec<Option<ZkReply>> = ex[1..].iter().map(|e| e.reply.clone()).collect();
    assert_eq!(
        replies,
        vec![
            Some(ZkReply::Error(ZkError::BadVersion)),
            Some(ZkReply::Error(ZkError::SessionExpired)),
            Some(ZkReply::Error(ZkError::Invalid)),
            None,
        ]
    );
}

#[test]
fn requests_the_spec_has_no_word_for_are_other() {
    let ex = sniff(&talk(vec![
        connect(),
        vec![
            request(1, op::SYNC, W::default().string("/lock")),
            reply(1, 5, 0, W::default().string("/lock")),
            request(2, op::SET_ACL, W::default().string("/lock").acl().int(-1)),
            reply(2, 6, 0, W::default().stat(1, 0, 0)),
            request(
                3,
                op::CREATE_CONTAINER,
                W::default().create_body("/c", "", 4),
            ),
            reply(3, 7, 0, W::default().string("/c").stat(7, 0, 0)),
            request(4, op::WHO_AM_I, W::default()),
            reply(4, 7, 0, W::default().int(0)),
            request(5, op::CLOSE_SESSION, W::default()),
            reply(5, 8, 0, W::default()),
        ],
    ]));
    let other = |name: &str, path: Option<&str>, write: bool| ZkCommand::Other {
        name: name.into(),
        path: path.map(String::from),
        write,
    };
    assert_eq!(
        pairs(&ex[1..]),
        vec![
            (other("sync", Some("/lock"), false), Some(ZkReply::Ok)),
            (other("setACL", Some("/lock"), true), Some(ZkReply::Ok)),
            (
                other("createContainer", Some("/c"), true),
                Some(ZkReply::Created {
                    path: "/c".into(),
                    czxid: 7
                })
            ),
            (other("closeSession", None, true), Some(ZkReply::Ok)),
        ],
        "{ex:#?}"
    );
}

#[test]
fn a_resumed_session_opens_none() {
    let ex = sniff(&[
        (
            true,
            W::default()
                .int(0)
                .long(77)
                .int(2000)
                .long(SESSION)
                .buffer(&[7; 16])
                .frame(),
        ),
        (
            false,
            W::default()
                .int(0)
                .int(2000)
                .long(SESSION)
                .buffer(&[7; 16])
                .frame(),
        ),
        request(
            1,
            op::GET_CHILDREN2,
            W::default().string("/lock").boolean(true),
        ),
        reply(
            1,
            9,
            0,
            W::default().int(1).string("n-0000000001").stat(3, 0, 0),
        ),
    ]);
    assert_eq!(
        pairs(&ex),
        vec![(
            ZkCommand::GetChildren {
                session: SID,
                path: "/lock".into(),
                watch: true
            },
            Some(ZkReply::Children(vec!["n-0000000001".into()]))
        )]
    );
}

#[test]
fn a_connection_that_cannot_be_followed_leaves_one_unknown_write() {
    let unfollowed = |e: &Exchange<ZkWire>| {
        matches!(
            &e.command,
            ZkCommand::Other {
                write: true,
                path: None,
                ..
            }
        ) && e.reply.is_none()
    };
    // A reply to no request: what was waiting is recorded unanswered.
    let ex = sniff(&talk(vec![
        connect(),
        vec![
            request(1, op::GET_DATA, W::default().string("/a").boolean(false)),
            request(2, op::DELETE, W::default().string("/a").int(-1)),
            reply(1, 9, 0, W::default().string("x").stat(6, 0, 0)),
            reply(9, 9, 0, W::default()),
            // Not read any more.
            request(3, op::DELETE, W::default().string("/b").int(-1)),
            reply(3, 9, 0, W::default()),
        ],
    ]));
    assert_eq!(ex.len(), 4, "{ex:#?}");
    assert_eq!(ex[1].reply, Some(node(6, 0, "x", None)));
    assert!(matches!(ex[2].command, ZkCommand::Delete { .. }) && ex[2].reply.is_none());
    assert!(unfollowed(&ex[3]), "{ex:#?}");
    // Bytes that are no frame (an HTTP request's "GET " reads as a 1 GiB length).
    let garbage = sniff(&[(true, b"GET / HTTP/1.1\r\n\r\n".to_vec())]);
    assert_eq!(garbage.len(), 1, "{garbage:#?}");
    assert!(unfollowed(&garbage[0]));
    // A frame that ends inside its request.
    let short = sniff(&talk(vec![
        connect(),
        vec![(true, W::default().int(1).int(op::CREATE).int(50).frame())],
    ]));
    assert!(unfollowed(&short[1]), "{short:#?}");
    // A connect that never got its response.
    let hung = sniff(&connect()[..1]);
    assert_eq!(
        pairs(&hung),
        vec![(ZkCommand::Connect { timeout: 2000 }, None)]
    );
}
