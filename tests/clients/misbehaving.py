#!/usr/bin/python3
"""A lock client that breaks the external-client protocol on purpose, for locklab's own
tests of what the harness records: redis-py's Lock (examples/redis-py/lock_client.py)
underneath, and one way of misbehaving on top.

    misbehaving.py MODE
      exit-after-grant  answer the first grant, then exit with status 7
      hang              answer init, then never answer again
      garbage           answer init, then answer every request with a line of text
      chatty            answer correctly, and also write a reply to a request never
                        sent, a second reply to each request, and an unreadable one
      fork              start a grandchild that sleeps for 10 minutes, then answer
                        correctly (the grandchild must die with the client's group)
      ticking           answer correctly while a thread of its own writes
                        "tick <monotonic seconds>" to stderr every 20 ms (a pause must
                        stop it too)
"""

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "lock_client", os.path.join(HERE, "..", "..", "examples", "redis-py", "lock_client.py")
)
lock_client = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lock_client)


def write(obj_or_text):
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def tick():
    while True:
        print(f"tick {time.monotonic():.3f}", file=sys.stderr, flush=True)
        time.sleep(0.02)


def main(mode):
    client = lock_client.Client(lock_client.parse_args([]))
    if mode == "fork":
        subprocess.Popen(["sleep", "600"])
    if mode == "ticking":
        threading.Thread(target=tick, daemon=True).start()
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        msg = json.loads(line)
        first = msg["type"] == "init"
        if mode == "hang" and not first:
            continue
        if mode == "garbage" and not first:
            write("this is not JSON")
            continue
        reply = client.handle(msg)
        reply["id"] = msg["id"]
        write(reply)
        if mode == "chatty":
            write(reply)
            write({"id": 100000 + msg["id"], "type": "ok"})
            write({"id": msg["id"], "type": "perhaps"})
        if mode == "exit-after-grant" and msg["type"] == "acquire" and reply["type"] == "ok":
            print("exiting on purpose while holding the lock", file=sys.stderr, flush=True)
            sys.exit(7)


if __name__ == "__main__":
    main(sys.argv[1])
