"""The installed wheel's tests (scripts/test-packages): the reference rg
(DSH_SEARCH_RG) and the repository's command line (DSH_SEARCH_BIN) are what
the package is compared with."""

from __future__ import annotations

import os
import pathlib
import tempfile
from collections.abc import Iterator

import pytest

RG = os.environ["DSH_SEARCH_RG"]
CLI = os.environ["DSH_SEARCH_BIN"]

# name, bytes, mtime offset: glob sorts by mtime, so each file has its own.
FILES = [
    ("src/main.rs", b'fn main() {\n    println!("hello");\n}\n'),
    ("src/lib.rs", b"pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"),
    ("README.md", b"# demo\nhello from the readme\n"),
    ("docs/guide.md", b"TODO: write\r\nhello\r\n"),
    ("data.bin", b"hello\0binary\n"),
    ("latin1.txt", b"caf\xe9 hello\n"),
    ("utf16.txt", "\ufeffhello utf16\n".encode("utf-16-le")),
    (".hidden/notes.txt", b"hello hidden\n"),
    (".git/config", b"hello git\n"),
]


def make_tree(root: pathlib.Path) -> pathlib.Path:
    for i, (name, data) in enumerate(FILES):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))
    return root


@pytest.fixture
def tree() -> Iterator[pathlib.Path]:
    with tempfile.TemporaryDirectory() as d:
        yield make_tree(pathlib.Path(d))
