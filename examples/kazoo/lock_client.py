#!/usr/bin/python3
"""kazoo's Lock (kazoo.recipe.lock.Lock, Debian's python3-kazoo) behind locklab's
external-client protocol (jepsen-like/CLIENT-PROTOCOL.md).

kazoo's Lock is ZooKeeper's ephemeral-sequential recipe: a node per contender under
the lock's path, the lowest one holds. The session timeout is the scenario's lease
(init's lease_ms), so a client stopped longer than that loses its session, and its node
with it. The fencing token is the lock node's czxid, which only grows.

    /usr/bin/python3 lock_client.py
"""

import json
import logging
import sys

import kazoo
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException


def log(*words):
    print(*words, file=sys.stderr, flush=True)


class Client:
    """One simulated client: one ZooKeeper session, at most one held lock."""

    def __init__(self):
        self.zk = None
        self.held = None
        self.name = "?"

    def init(self, msg):
        self.name = msg["client"]
        hosts = ",".join(msg["endpoints"]["zookeeper"])
        self.zk = KazooClient(hosts=hosts, timeout=msg["lease_ms"] / 1000)
        self.zk.start(timeout=15)
        log(f"{self.name}: kazoo {kazoo.version.__version__} on {hosts}")
        return {"type": "ok", "name": f"kazoo {kazoo.version.__version__} Lock"}

    def node_path(self, lock):
        return f"{lock.path}/{lock.node}"

    def acquire(self, msg):
        lock = self.zk.Lock("/locklab/" + msg["lock"], identifier=self.name)
        wait = msg.get("wait_ms", 0)
        if not lock.acquire(blocking=wait > 0, timeout=wait / 1000 if wait else None):
            return {"type": "refused", "reason": "a lower node holds the lock"}
        stat = self.zk.exists(self.node_path(lock))
        if stat is None:
            # Granted, and the node already gone with the session: the grant may have
            # been seen by nobody or by everybody; unknown.
            lock.release()
            return {"type": "error", "error": "the lock node vanished right after the grant"}
        self.held = lock
        return {"type": "ok", "token": stat.czxid}

    def release(self, msg):
        lock, self.held = self.held, None
        if lock is None:
            return {"type": "refused", "reason": "this client holds no lock"}
        # kazoo's release() answers True even when the node was already gone (it
        # swallows NoNodeError), so ask first: a node gone with an expired session
        # means the lock was no longer ours to release.
        gone = self.zk.exists(self.node_path(lock)) is None
        lock.release()
        if gone:
            return {"type": "refused", "reason": "the lock node is gone (the session expired)"}
        return {"type": "ok"}

    def renew(self, msg):
        return {"type": "error", "error": "kazoo's Lock has no lease to renew: its session is kept alive by the client"}

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
        except KazooException as e:
            # A lost connection or an expired session mid-call: the outcome is unknown.
            return {"type": "error", "error": f"{type(e).__name__}: {e}"}


def serve(client):
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        msg = json.loads(line)
        reply = client.handle(msg)
        reply["id"] = msg["id"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    serve(Client())
