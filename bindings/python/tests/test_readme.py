"""The Python examples of the top-level README and of this package's README
run as printed (their pool path swapped for a scratch one), twice over the
same pool, as someone trying them would."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)
READMES = {
    "top-level": os.path.join(HERE, "..", "..", "..", "README.md"),
    "package": os.path.join(HERE, "..", "README.md"),
}
# The pool path both examples print.
EXAMPLE_POOL = "/dev/shm/app-py.pool"


def example(readme: str) -> str:
    with open(READMES[readme], encoding="utf-8") as f:
        text = f.read()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, f"the {readme} README has a Python example"
    assert EXAMPLE_POOL in blocks[0], f"the {readme} README's example opens {EXAMPLE_POOL}"
    return blocks[0]


def run(code: str, pool_path: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code.replace(EXAMPLE_POOL, pool_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


@pytest.mark.parametrize("readme", ["top-level", "package"])
def test_readme_example_runs(readme, pool_path):
    code = example(readme)
    expected = {
        "top-level": ["[None, b'Grace'] 3", "b'user:2' b'Grace'"],
        "package": ["b'user:2' b'Grace'"],
    }[readme]
    assert run(code, pool_path) == expected
    # Again, on the pool the first run left: the same output.
    assert run(code, pool_path) == expected
