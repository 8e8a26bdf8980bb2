"""Instructions per `db[key]`, for valgrind's callgrind (deterministic where
wall-clock timings on a shared 2-CPU machine are not).

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        python get_instructions.py N VALUE_BYTES

Reads one key N times; the difference between two N divided by their
difference is the cost of one read. The pool is small (valgrind refuses the
default 64 GiB address-space reservation) and its background threads are
off, so that only the reads differ between runs.
"""

import sys, tempfile, os, persimmon
n, size = int(sys.argv[1]), int(sys.argv[2])
d = tempfile.mkdtemp(dir="/dev/shm")
db = persimmon.open(os.path.join(d, "p.pool"), pool_bytes_max="1G", pool_bytes_initial="64M", cleaner=False, active_expiry=False)
db[b"k"] = b"x" * size
g = db.__getitem__
for _ in range(n):
    g(b"k")
db.close()
import shutil; shutil.rmtree(d)
