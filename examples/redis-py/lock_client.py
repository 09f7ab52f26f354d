#!/usr/bin/python3
"""redis-py's Lock (redis.lock.Lock, Debian's python3-redis) behind locklab's
external-client protocol (jepsen-like/CLIENT-PROTOCOL.md).

locklab starts this program once per simulated client and talks JSON Lines over its
stdin and stdout; everything on stderr goes to the client's log. Nothing here is
locklab's lock: acquire, release and renew are redis-py's own calls, so the gate
judges redis-py.

    /usr/bin/python3 lock_client.py [--wait-replicas N] [--lease-ms MS] [--unsaid]

--wait-replicas N  after a grant, WAIT for N replicas (100 ms) before answering ok,
                   and give the lock back if fewer acknowledged (the catalog's
                   redis-failover-wait: the application confirms the write).
--lease-ms MS      take this lease whatever locklab asks for, as an application
                   configured with its own lease does, and say so in the ok
                   (protocol version 2's lease_ms), so the checks hold each grant
                   to the lease it really has.
--unsaid           with --lease-ms, do not say so (a version-1 client): the checks
                   then hold each grant to the lease locklab asked for.
"""

import argparse
import json
import sys

import redis
from redis.exceptions import LockError, LockNotOwnedError, RedisError
from redis.lock import Lock
from redis.sentinel import Sentinel

# Every call to a server gives up after this long (seconds): a killed master must make
# the call fail, not hang past locklab's reply timeout.
SOCKET_TIMEOUT = 0.5


def log(*words):
    print(*words, file=sys.stderr, flush=True)


class Client:
    """One simulated client: one connection, at most one held lock."""

    def __init__(self, args):
        self.args = args
        self.redis = None
        self.held = None

    def init(self, msg):
        endpoints = msg["endpoints"]
        if endpoints.get("sentinels"):
            # Sentinel-aware, as an application behind Sentinel is: it asks the
            # Sentinels for the master and follows their failover by itself.
            hosts = [tuple_of(a) for a in endpoints["sentinels"]]
            sentinel = Sentinel(hosts, socket_timeout=SOCKET_TIMEOUT)
            self.redis = sentinel.master_for(
                endpoints["sentinel_master"],
                socket_timeout=SOCKET_TIMEOUT,
                socket_connect_timeout=SOCKET_TIMEOUT,
            )
        else:
            host, port = tuple_of(endpoints["redis"][0])
            self.redis = redis.Redis(
                host=host,
                port=port,
                socket_timeout=SOCKET_TIMEOUT,
                socket_connect_timeout=SOCKET_TIMEOUT,
            )
        log(f"{msg['client']}: redis-py {redis.__version__} on {endpoints}")
        return {"type": "ok", "name": f"redis-py {redis.__version__} Lock"}

    def acquire(self, msg):
        lease = msg.get("lease_ms")
        if self.args.lease_ms:
            lease = self.args.lease_ms
        wait = msg.get("wait_ms", 0)
        lock = Lock(
            self.redis,
            msg["lock"],
            timeout=None if lease is None else lease / 1000,
            sleep=0.01,
            thread_local=False,
        )
        got = lock.acquire(blocking=wait > 0, blocking_timeout=wait / 1000)
        if not got:
            return {"type": "refused", "reason": "busy"}
        if self.args.wait_replicas:
            acked = self.redis.wait(self.args.wait_replicas, 100)
            if acked < self.args.wait_replicas:
                # Granted, but not confirmed: give it back. Whether the grant was seen
                # by anyone is unknown, so the answer is "error", never "refused".
                try:
                    lock.release()
                except (LockError, RedisError):
                    pass
                return {"type": "error", "error": f"WAIT: {acked} of {self.args.wait_replicas} replicas acknowledged"}
        self.held = lock
        if self.args.lease_ms and not self.args.unsaid:
            return {"type": "ok", "lease_ms": self.args.lease_ms}
        return {"type": "ok"}

    def release(self, msg):
        lock, self.held = self.held, None
        if lock is None:
            return {"type": "refused", "reason": "this client holds no lock"}
        try:
            lock.release()
        except LockNotOwnedError:
            return {"type": "refused", "reason": "the lock is no longer ours"}
        return {"type": "ok"}

    def renew(self, msg):
        if self.held is None:
            return {"type": "refused", "reason": "this client holds no lock"}
        try:
            self.held.extend(msg["lease_ms"] / 1000, replace_ttl=True)
        except LockNotOwnedError:
            return {"type": "refused", "reason": "the lock is no longer ours"}
        return {"type": "ok"}

    def handle(self, msg):
        handler = {
            "init": self.init,
            "acquire": self.acquire,
            "release": self.release,
            "renew": self.renew,
        }.get(msg.get("type"))
        if handler is None:
            return {"type": "error", "error": f"unknown request type {msg.get('type')!r}"}
        try:
            return handler(msg)
        except (RedisError, LockError, OSError) as e:
            # The outcome is unknown: the command may have run before the error.
            return {"type": "error", "error": f"{type(e).__name__}: {e}"}


def tuple_of(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--wait-replicas", type=int, default=0)
    p.add_argument("--lease-ms", type=int, default=0)
    p.add_argument("--unsaid", action="store_true")
    return p.parse_args(argv)


def serve(client, stdin=sys.stdin, stdout=sys.stdout):
    """Answers every request line until stdin closes."""
    while True:
        line = stdin.readline()
        if not line:
            return
        msg = json.loads(line)
        reply = client.handle(msg)
        reply["id"] = msg["id"]
        stdout.write(json.dumps(reply) + "\n")
        stdout.flush()


if __name__ == "__main__":
    serve(Client(parse_args(sys.argv[1:])))
