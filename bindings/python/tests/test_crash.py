"""kill -9 of a writer: every acknowledged write survives, batches stay whole.

A child process writes keys and prints each one after its put returned
(durable on return); the parent kills it with SIGKILL mid-load, reopens the
pool and checks every acknowledged key and value.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import persimmon

CHILD = textwrap.dedent(
    """
    import sys, persimmon
    db = persimmon.open(sys.argv[1])
    i = 0
    while True:
        if i % 10 == 9:
            with db.batch() as b:  # three keys that must appear together
                for j in range(3):
                    b.put(b"batch:%d:%d" % (i, j), b"bv%d" % i)
            print("B", i, flush=True)
        else:
            db.put(b"key:%d" % i, b"value:%d:" % i + b"x" * (i % 200))
            print("K", i, flush=True)
        i += 1
    """
)


def test_kill_9_keeps_every_acknowledged_write(pool_path):
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, pool_path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=1 << 16,
    )
    acked = []
    try:
        while len(acked) < 3000:
            line = child.stdout.readline()
            assert line, child.stderr.read().decode()
            acked.append(line)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        # Through the same buffered reader (communicate() would read the
        # raw pipe and lose what this reader has buffered).
        acked.extend(child.stdout.read().splitlines(keepends=True))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    complete = [l.split() for l in acked if l.endswith(b"\n")]

    with persimmon.open(pool_path, create=False) as db:
        last = -1
        for kind, n in complete:
            i = int(n)
            last = i
            if kind == b"K":
                assert db.get(b"key:%d" % i) == b"value:%d:" % i + b"x" * (i % 200), i
            else:
                for j in range(3):
                    assert db.get(b"batch:%d:%d" % (i, j)) == b"bv%d" % i, (i, j)
        # The one write in flight at the kill: a batch is all or nothing.
        nxt = last + 1
        if nxt % 10 == 9:
            present = [db.get(b"batch:%d:%d" % (nxt, j)) is not None for j in range(3)]
            assert all(present) or not any(present)
        assert len(db) >= len(complete)
        assert db.check()["ok"]
