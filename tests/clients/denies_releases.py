#!/usr/bin/python3
"""redis-py's Lock, except that it answers every release "refused" after it released:
the lock itself keeps clients apart, but what the client says of its releases is no
behaviour of a lock (the next grant comes while, by its word, it still held). Lock
linearizability, which no model property of redis-lua is compared with, finds it; the
run must say so beside its agreement."""

import json
import sys

import redis
from redis.lock import Lock

conn = None
held = None
for line in sys.stdin:
    msg = json.loads(line)
    kind = msg.get("type")
    try:
        if kind == "init":
            host, port = msg["endpoints"]["redis"][0].rsplit(":", 1)
            conn = redis.Redis(host=host, port=int(port), socket_timeout=0.5)
            reply = {"type": "ok", "name": "denies its releases"}
        elif kind == "acquire":
            lock = Lock(conn, msg["lock"], timeout=msg["lease_ms"] / 1000, thread_local=False)
            if lock.acquire(blocking=False):
                held = lock
                reply = {"type": "ok"}
            else:
                reply = {"type": "refused", "reason": "busy"}
        elif kind == "release":
            if held is not None:
                held.release()
                held = None
            reply = {"type": "refused", "reason": "says it did not hold the lock (it did)"}
        else:
            reply = {"type": "error", "error": "no renewal"}
    except Exception as e:  # the outcome is unknown
        reply = {"type": "error", "error": f"{type(e).__name__}: {e}"}
    reply["id"] = msg["id"]
    print(json.dumps(reply), flush=True)
