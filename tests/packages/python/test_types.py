"""The stubs (`_native.pyi`, `py.typed`) under mypy --strict."""

from __future__ import annotations

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent


def mypy(file: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", file],
                          cwd=HERE, capture_output=True, text=True)


def test_the_stubs_type_a_correct_use() -> None:
    r = mypy("typed_usage.py")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_stubs_catch_each_misuse() -> None:
    r = mypy("typed_misuse.py")
    lines = (HERE / "typed_misuse.py").read_text().splitlines()
    wanted = {i + 1 for i, line in enumerate(lines) if "# E" in line}
    flagged = {int(line.split(":")[1]) for line in r.stdout.splitlines() if ": error:" in line}
    assert wanted == flagged, r.stdout
