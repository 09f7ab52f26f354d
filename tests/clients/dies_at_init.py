#!/usr/bin/python3
"""A lock client that dies before it answers init: the run could not start (exit 4),
which is neither a bad config nor a verdict."""

import sys

sys.stdin.readline()
print("cannot import the lock library", file=sys.stderr, flush=True)
sys.exit(3)
