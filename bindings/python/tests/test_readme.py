"""The Python example of the top-level README runs as printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys

README = os.path.join(os.path.dirname(__file__), "..", "..", "..", "README.md")


def test_readme_example_runs(pool_path):
    with open(README, encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "the README has a Python example"
    code = blocks[0].replace("/dev/shm/app.pool", pool_path)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "[None, b'Grace'] 3",
        "b'user:2' b'Grace'",
    ]
