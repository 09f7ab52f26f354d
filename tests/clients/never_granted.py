#!/usr/bin/python3
"""A lock client that never gets the lock: every acquire answers "error" (unknown), as a
library whose every call times out would. A run with it enters no critical section, so
it tests nothing of the lock: its gate must say unknown, never pass."""

import json
import sys

for line in sys.stdin:
    msg = json.loads(line)
    kind = msg.get("type")
    if kind == "init":
        reply = {"type": "ok", "name": "never granted"}
    elif kind == "acquire":
        reply = {"type": "error", "error": "TimeoutError: the lock service did not answer"}
    else:
        reply = {"type": "refused", "reason": "this client holds no lock"}
    reply["id"] = msg["id"]
    print(json.dumps(reply), flush=True)
