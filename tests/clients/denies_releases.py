#!/usr/bin/python3
"""redis-py's Lock as examples/redis-py/lock_client.py runs it, except that it answers
every release "refused" after it released: the lock itself keeps clients apart, but
what the client says of its releases is no behaviour of a lock (the next grant comes
while, by its word, it still held). Lock linearizability, which no model property of
redis-lua is compared with, finds it; the run must say so beside its agreement."""

from example import lock_client

redis_py = lock_client("redis-py")


class Client(redis_py.Client):
    def init(self, msg):
        reply = super().init(msg)
        reply["name"] = "denies its releases"
        return reply

    def release(self, msg):
        lock, self.held = self.held, None
        if lock is not None:
            lock.release()
        return {"type": "refused", "reason": "says it did not hold the lock (it did)"}


if __name__ == "__main__":
    redis_py.serve(Client(redis_py.parse_args([])))
