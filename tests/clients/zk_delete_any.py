#!/usr/bin/python3
"""A deliberately broken ZooKeeper lock behind locklab's external-client protocol
(jepsen-like/CLIENT-PROTOCOL.md), on kazoo (Debian's python3-kazoo), for the proof of a
foreign release from the client's own traffic.

Acquire is the ephemeral-sequential recipe without waiting: a node under the lock's
path, granted when it is the lowest, deleted again when it is not; the token is its
czxid (create2's stat). Release is wrong: it deletes the *lowest* node under the path,
whoever made it. A holder whose session expired while it was stopped (its node gone
with it) deletes the next holder's node.

    /usr/bin/python3 zk_delete_any.py
"""

import json
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

PREFIX = "n-"


def sequence(name):
    return int(name[-10:])


class Client:
    def __init__(self):
        self.zk = None
        self.path = None
        self.name = "?"

    def init(self, msg):
        self.name = msg["client"]
        self.path = "/locklab/" + msg["lock"]
        hosts = ",".join(msg["endpoints"]["zookeeper"])
        self.zk = KazooClient(hosts=hosts, timeout=msg["lease_ms"] / 1000)
        self.zk.start(timeout=15)
        self.zk.ensure_path(self.path)
        return {"type": "ok", "name": "delete the lowest node (broken)"}

    def lowest(self):
        children = self.zk.retry(self.zk.get_children, self.path)
        return min(children, key=sequence) if children else None

    def acquire(self, msg):
        made, stat = self.zk.create(
            f"{self.path}/{PREFIX}",
            self.name.encode(),
            ephemeral=True,
            sequence=True,
            include_data=True,
        )
        if f"{self.path}/{self.lowest()}" == made:
            return {"type": "ok", "token": stat.czxid}
        self.zk.delete(made)
        return {"type": "refused", "reason": "a lower node holds the lock"}

    def release(self, msg):
        # The bug: whatever node is lowest goes, ours or not. Tried for a while, as the
        # holder's own release may take it first.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            node = self.lowest()
            if node is not None:
                try:
                    self.zk.retry(self.zk.delete, f"{self.path}/{node}")
                    print(f"{self.name}: deleted {node}", file=sys.stderr, flush=True)
                    return {"type": "ok"}
                except NoNodeError:
                    pass
            time.sleep(0.02)
        return {"type": "error", "error": "no node to delete"}

    def handle(self, msg):
        handler = {
            "init": self.init,
            "acquire": self.acquire,
            "release": self.release,
        }.get(msg.get("type"))
        if handler is None:
            return {"type": "error", "error": f"{msg.get('type')} is not supported"}
        try:
            return handler(msg)
        except KazooException as e:
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
    serve(Client())
