#!/usr/bin/python3
"""A deliberately broken Redis lock behind locklab's external-client protocol, for the
gate to catch: SET key token NX PX lease to take it (right), and a plain DEL key to
give it back (wrong: no owner check). A holder whose lease ran out while it was stopped
deletes the next holder's key, and a third client walks in.

    /usr/bin/python3 lock_client.py
"""

import json
import sys
import uuid

import redis
from redis.exceptions import RedisError


def serve():
    conn = None
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        msg = json.loads(line)
        kind = msg["type"]
        try:
            if kind == "init":
                host, port = msg["endpoints"]["redis"][0].rsplit(":", 1)
                # Long enough that a stall of the machine does not turn a reply into
                # an unknown outcome (which would rightly weaken what a history
                # proves), short of locklab's 5 s reply timeout.
                conn = redis.Redis(host=host, port=int(port), socket_timeout=2.0)
                reply = {"type": "ok", "name": "SET NX PX + plain DEL (broken)"}
            elif kind == "acquire":
                token = uuid.uuid4().hex
                got = conn.set(msg["lock"], token, nx=True, px=msg.get("lease_ms"))
                reply = {"type": "ok"} if got else {"type": "refused", "reason": "busy"}
            elif kind == "release":
                # The bug: no check that the key still holds this client's token.
                conn.delete(msg["lock"])
                reply = {"type": "ok"}
            else:
                reply = {"type": "error", "error": f"{kind} is not supported"}
        except RedisError as e:
            reply = {"type": "error", "error": str(e)}
        reply["id"] = msg["id"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
