#!/usr/bin/python3
"""A deliberately broken ZooKeeper lock behind locklab's external-client protocol
(jepsen-like/CLIENT-PROTOCOL.md), for the proof of a foreign release from the client's
own traffic: kazoo's Lock as examples/kazoo/lock_client.py runs it (a node per
contender under the lock's path, the lowest one holds, the token its czxid), except
the release. That is wrong: it deletes the *lowest* node under the path, whoever made
it. A holder whose session expired while it was stopped (its node gone with it)
deletes the next holder's node.

    /usr/bin/python3 zk_delete_any.py
"""

import sys
import time

from kazoo.exceptions import NoNodeError

from example import lock_client

kazoo_lock = lock_client("kazoo")


def sequence(name):
    return int(name[-10:])


class Client(kazoo_lock.Client):
    def init(self, msg):
        reply = super().init(msg)
        reply["name"] = "kazoo's Lock, released by deleting the lowest node (broken)"
        return reply

    def release(self, msg):
        # The bug: whatever node is lowest goes, ours or not. Tried for a while, as the
        # holder's own release may take it first.
        self.held = None
        path = "/locklab/" + msg["lock"]
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            children = self.zk.retry(self.zk.get_children, path)
            if children:
                node = min(children, key=sequence)
                try:
                    self.zk.retry(self.zk.delete, f"{path}/{node}")
                    print(f"{self.name}: deleted {node}", file=sys.stderr, flush=True)
                    return {"type": "ok"}
                except NoNodeError:
                    pass
            time.sleep(0.02)
        return {"type": "error", "error": "no node to delete"}


if __name__ == "__main__":
    kazoo_lock.serve(Client())
