//! Jute, ZooKeeper's wire encoding, read from a byte stream that arrives in pieces:
//! frames (a 4-byte big-endian length, then that many bytes) and the records inside
//! them (big-endian integers, a byte for a boolean, buffers and strings as an `i32`
//! length then the bytes, -1 for null, vectors as a count then the items).
//! [`sniff`](super::sniff) reads a client's traffic with it.

/// Why a byte stream is not ZooKeeper's protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

/// Frames longer than this are taken for garbage: ZooKeeper's own limit
/// (`jute.maxbuffer`) is 1 MiB unless configured higher.
pub const MAX_FRAME: usize = 16 << 20;

/// Op codes of the request header (`ZooDefs.OpCode`).
pub mod op {
    /// `create`.
    pub const CREATE: i32 = 1;
    /// `delete`.
    pub const DELETE: i32 = 2;
    /// `exists`.
    pub const EXISTS: i32 = 3;
    /// `getData`.
    pub const GET_DATA: i32 = 4;
    /// `setData`.
    pub const SET_DATA: i32 = 5;
    /// `getACL`.
    pub const GET_ACL: i32 = 6;
    /// `setACL`.
    pub const SET_ACL: i32 = 7;
    /// `getChildren`.
    pub const GET_CHILDREN: i32 = 8;
    /// `sync`.
    pub const SYNC: i32 = 9;
    /// `ping`.
    pub const PING: i32 = 11;
    /// `getChildren2` (children and the parent's stat).
    pub const GET_CHILDREN2: i32 = 12;
    /// `check` (a version check, inside a `multi`).
    pub const CHECK: i32 = 13;
    /// `multi`.
    pub const MULTI: i32 = 14;
    /// `create2` (the path and the new node's stat).
    pub const CREATE2: i32 = 15;
    /// `reconfig`.
    pub const RECONFIG: i32 = 16;
    /// `checkWatches`.
    pub const CHECK_WATCHES: i32 = 17;
    /// `removeWatches`.
    pub const REMOVE_WATCHES: i32 = 18;
    /// `createContainer`.
    pub const CREATE_CONTAINER: i32 = 19;
    /// `deleteContainer`.
    pub const DELETE_CONTAINER: i32 = 20;
    /// `createTTL`.
    pub const CREATE_TTL: i32 = 21;
    /// `multiRead`.
    pub const MULTI_READ: i32 = 22;
    /// `auth`.
    pub const AUTH: i32 = 100;
    /// `setWatches`.
    pub const SET_WATCHES: i32 = 101;
    /// `sasl`.
    pub const SASL: i32 = 102;
    /// `getEphemerals`.
    pub const GET_EPHEMERALS: i32 = 103;
    /// `getAllChildrenNumber`.
    pub const GET_ALL_CHILDREN_NUMBER: i32 = 104;
    /// `setWatches2`.
    pub const SET_WATCHES2: i32 = 105;
    /// `addWatch`.
    pub const ADD_WATCH: i32 = 106;
    /// `whoAmI`.
    pub const WHO_AM_I: i32 = 107;
    /// `closeSession`.
    pub const CLOSE_SESSION: i32 = -11;
    /// A `multi`'s closing header, and an error result inside a `multi`'s reply.
    pub const ERROR: i32 = -1;
}

/// Special xids: what the server sends or answers outside the request/reply pairing.
pub mod xid {
    /// A watch notification from the server.
    pub const NOTIFICATION: i32 = -1;
    /// A ping and its answer.
    pub const PING: i32 = -2;
    /// An `auth` packet and its answer.
    pub const AUTH: i32 = -4;
    /// A `setWatches` packet (sent on reconnect) and its answer.
    pub const SET_WATCHES: i32 = -8;
}

/// Bytes taken and not yet cut into whole frames.
#[derive(Debug, Default)]
pub struct Frames {
    buf: Vec<u8>,
    at: usize,
}

impl Frames {
    /// Takes more bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.at > 0 && self.at == self.buf.len() {
            self.buf.clear();
            self.at = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame (without its length), `None` until its last byte arrived.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, Malformed> {
        let rest = &self.buf[self.at..];
        let Some(head) = rest.get(..4) else {
            return Ok(None);
        };
        let len = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= MAX_FRAME)
            .ok_or_else(|| Malformed(format!("a frame length of {len}")))?;
        let Some(frame) = rest.get(4..4 + len) else {
            return Ok(None);
        };
        let frame = frame.to_vec();
        self.at += 4 + len;
        if self.at > 1 << 16 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        Ok(Some(frame))
    }
}

/// A node's stat, as the server sends it (68 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// The zxid of the create.
    pub czxid: i64,
    /// The zxid of the last data change.
    pub mzxid: i64,
    /// When it was created (ms).
    pub ctime: i64,
    /// When its data last changed (ms).
    pub mtime: i64,
    /// The data version.
    pub version: i32,
    /// The children's version.
    pub cversion: i32,
    /// The ACL's version.
    pub aversion: i32,
    /// The owning session of an ephemeral node; 0 for a persistent one.
    pub ephemeral_owner: i64,
    /// The data's length.
    pub data_length: i32,
    /// How many children.
    pub num_children: i32,
    /// The zxid of the last change of the children.
    pub pzxid: i64,
}

/// Reads the records of one frame in order.
#[derive(Debug)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// A reader at the start of `frame`.
    pub fn new(frame: &'a [u8]) -> Self {
        Cursor { buf: frame, at: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.at
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Malformed> {
        let bytes = self
            .buf
            .get(self.at..self.at.saturating_add(n))
            .ok_or_else(|| Malformed(format!("the frame ends inside {what}")))?;
        self.at += n;
        Ok(bytes)
    }

    /// An `int`.
    pub fn int(&mut self) -> Result<i32, Malformed> {
        let b = self.take(4, "an int")?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `long`.
    pub fn long(&mut self) -> Result<i64, Malformed> {
        let b = self.take(8, "a long")?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// A `boolean` (Java's `readBoolean`: any byte but 0 is true).
    pub fn boolean(&mut self) -> Result<bool, Malformed> {
        Ok(self.take(1, "a boolean")?[0] != 0)
    }

    /// A `buffer`; `None` for null.
    pub fn buffer(&mut self) -> Result<Option<&'a [u8]>, Malformed> {
        let len = self.int()?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| Malformed(format!("a length of {len}")))?;
        self.take(len, "a buffer").map(Some)
    }

    /// A `ustring` (UTF-8, lossily); `None` for null.
    pub fn string(&mut self) -> Result<Option<String>, Malformed> {
        Ok(self
            .buffer()?
            .map(|b| String::from_utf8_lossy(b).into_owned()))
    }

    /// A string that must be there (a path): null reads as empty.
    pub fn path(&mut self) -> Result<String, Malformed> {
        Ok(self.string()?.unwrap_or_default())
    }

    /// A vector's count (null reads as empty), checked against the bytes left so that
    /// garbage cannot ask for a huge allocation: each item takes at least `min` bytes.
    fn count(&mut self, min: usize) -> Result<usize, Malformed> {
        let n = self.int()?;
        if n == -1 {
            return Ok(0);
        }
        let n = usize::try_from(n).map_err(|_| Malformed(format!("a vector of {n} items")))?;
        if n.saturating_mul(min) > self.remaining() {
            return Err(Malformed(format!(
                "a vector of {n} items in {} bytes",
                self.remaining()
            )));
        }
        Ok(n)
    }

    /// A `vector<ustring>`.
    pub fn strings(&mut self) -> Result<Vec<String>, Malformed> {
        let n = self.count(4)?;
        (0..n).map(|_| self.path()).collect()
    }

    /// A `vector<ACL>` (`perms`, then the id's `scheme` and `id`), skipped: the spec
    /// keeps no ACLs.
    pub fn skip_acls(&mut self) -> Result<(), Malformed> {
        let n = self.count(12)?;
        for _ in 0..n {
            self.int()?;
            self.string()?;
            self.string()?;
        }
        Ok(())
    }

    /// A [`Stat`].
    pub fn stat(&mut self) -> Result<Stat, Malformed> {
        Ok(Stat {
            czxid: self.long()?,
            mzxid: self.long()?,
            ctime: self.long()?,
            mtime: self.long()?,
            version: self.int()?,
            cversion: self.int()?,
            aversion: self.int()?,
            ephemeral_owner: self.long()?,
            data_length: self.int()?,
            num_children: self.int()?,
            pzxid: self.long()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_out_whole_whatever_the_chunks() {
        let mut stream = Vec::new();
        for body in [&b"abc"[..], b"", b"0123456789"] {
            stream.extend_from_slice(&i32::try_from(body.len()).unwrap_or(0).to_be_bytes());
            stream.extend_from_slice(body);
        }
        let mut frames = Frames::default();
        let mut got = Vec::new();
        for b in &stream {
            frames.push(std::slice::from_ref(b));
            while let Ok(Some(f)) = frames.next_frame() {
                got.push(f);
            }
        }
        assert_eq!(got, [b"abc".to_vec(), Vec::new(), b"0123456789".to_vec()]);
    }

    #[test]
    fn a_length_out_of_bounds_is_garbage_not_an_allocation() {
        for len in [-1i32, i32::MAX] {
            let mut frames = Frames::default();
            frames.push(&len.to_be_bytes());
            assert!(frames.next_frame().is_err(), "{len}");
        }
        let mut huge = Cursor::new(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1]);
        assert!(huge.strings().is_err());
        let mut short = Cursor::new(&[0, 0, 0, 9, b'a']);
        assert!(short.string().is_err());
        let mut null = Cursor::new(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(null.string(), Ok(None));
    }
}
