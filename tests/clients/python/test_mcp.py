"""`dsh-search mcp` driven by the official Python MCP SDK (`mcp` 2.x).

Run by scripts/test, which installs the SDK and pytest into a virtualenv in
${XDG_CACHE_HOME:-$HOME/.cache}/dsh-search/ and points DSH_SEARCH_BIN at the
binary. The tests run on both of the SDK's connection modes: "legacy" (the
initialize handshake, protocol 2025-11-25) and "auto" (the SDK's default,
which discovers the 2026-07-28 protocol), except the roots test: roots are
deprecated on 2026-07-28, so it runs on the handshake only.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters, stdio_client

BIN = os.environ["DSH_SEARCH_BIN"]
MODES = ["legacy", "auto"]

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def tree() -> Iterator[pathlib.Path]:
    """src/main.rs, src/lib.rs, README.md, notes.txt and a FIFO `pipe`."""
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        (root / "src").mkdir()
        (root / "src/main.rs").write_text('fn main() {\n    println!("hello");\n}\n')
        (root / "src/lib.rs").write_text("pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n")
        (root / "README.md").write_text("# demo\nhello from the readme\n")
        (root / "notes.txt").write_text("alpha\nbeta\n")
        os.mkfifo(root / "pipe")
        yield root


def cli(root: pathlib.Path, *args: str) -> str:
    """What `dsh-search --cwd ROOT ARGS` prints."""
    return subprocess.run([BIN, "--cwd", str(root), *args], capture_output=True, text=True).stdout


class Connection:
    """One MCP connection: the SDK's session or client, and the server's stderr."""

    def __init__(self, api, errlog: pathlib.Path) -> None:
        self.api = api
        self.errlog = errlog

    async def call(self, name: str, arguments: dict) -> types.CallToolResult:
        return await self.api.call_tool(name, arguments)

    async def stderr_says(self, needle: str) -> str:
        """The server's stderr once it contains `needle` (60 s hang guard)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = self.errlog.read_text()
            if needle in text:
                return text
            await anyio.sleep(0.02)
        raise AssertionError(f"stderr never said {needle!r}:\n{self.errlog.read_text()}")


@asynccontextmanager
async def connect(
    mode: str, args: list[str], cwd: pathlib.Path, roots=None, mcp_args: tuple[str, ...] = ()
) -> AsyncIterator[Connection]:
    """A `Client` in `mode` on `dsh-search ARGS mcp MCP_ARGS`, its stderr in a file."""
    params = StdioServerParameters(command=BIN, args=[*args, "mcp", *mcp_args], cwd=str(cwd))
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        transport = stdio_client(params, errlog=log)
        async with Client(server=transport, mode=mode, list_roots_callback=roots) as client:
            yield Connection(client, pathlib.Path(log.name))


def text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, result
    return result.content[0].text


@pytest.mark.parametrize("mode", MODES)
async def test_the_tools_are_the_definitions(tree: pathlib.Path, mode: str) -> None:
    definitions = json.loads(cli(tree, "definitions"))
    async with connect(mode, ["--cwd", str(tree)], tree) as conn:
        listed = (await conn.api.list_tools()).tools
    assert [t.name for t in listed] == [d["name"] for d in definitions]
    for tool, d in zip(listed, definitions):
        assert tool.description == d["description"]
        assert tool.input_schema == d["parameters"]


SEARCHES = [
    ("grep", {"pattern": "fn "}, ["grep", "fn "]),
    ("grep", {"pattern": "hello", "include": "*.md"}, ["grep", "hello", "--include", "*.md"]),
    ("grep", {"pattern": "a \\+ b", "path": "src/lib.rs"}, ["grep", "a \\+ b", "src/lib.rs"]),
    ("grep", {"pattern": "nothing_here"}, ["grep", "nothing_here"]),
    ("grep", {"pattern": "fn ("}, ["grep", "fn ("]),
    ("glob", {"pattern": "*.rs"}, ["glob", "*.rs"]),
    ("glob", {"pattern": "*", "path": "src"}, ["glob", "*", "src"]),
    ("glob", {"pattern": "*.zip"}, ["glob", "*.zip"]),
]


@pytest.mark.parametrize("mode", MODES)
async def test_grep_and_glob_print_what_the_cli_prints(tree: pathlib.Path, mode: str) -> None:
    async with connect(mode, ["--cwd", str(tree)], tree) as conn:
        for tool, arguments, argv in SEARCHES:
            result = await conn.call(tool, arguments)
            assert text(result) + "\n" == cli(tree, *argv), (tool, arguments)
            assert result.is_error == text(result).startswith("Error: ")
            # The text alone: a client that shows the model structuredContent
            # instead would show it nothing else.
            assert result.structured_content is None, result


@pytest.mark.parametrize("mode", MODES)
async def test_read_then_edit_in_one_connection(tree: pathlib.Path, mode: str) -> None:
    notes = tree / "notes.txt"
    edit = {"file_path": "notes.txt", "old_string": "alpha", "new_string": "gamma"}
    async with connect(mode, ["--cwd", str(tree)], tree) as conn:
        refused = await conn.call("edit", edit)
        assert refused.is_error
        assert text(refused) == f'Error: edit requires reading "{notes}" first — read the file, then retry'
        assert refused.meta["dsh-search/error"]["info"]["code"] == "FS_NOT_OBSERVED"
        read = await conn.call("read", {"file_path": "notes.txt"})
        assert text(read) == (
            f"<path>{notes}</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n\n"
            "(End of file - total 2 lines)\n</content>"
        )
        done = await conn.call("edit", edit)
        assert not done.is_error, done
        assert text(done) == f"The file {notes} has been updated successfully."
        assert notes.read_text() == "gamma\nbeta\n"
        # Its own edit counts as an observation: it may edit again.
        again = await conn.call("edit", {"file_path": "notes.txt", "old_string": "beta", "new_string": "delta"})
        assert not again.is_error, again
    # A new connection is a new session: nothing read there yet.
    async with connect(mode, ["--cwd", str(tree)], tree) as conn:
        assert (await conn.call("edit", {"file_path": "notes.txt", "old_string": "gamma", "new_string": "x"})).is_error


@pytest.mark.parametrize("mode", MODES)
async def test_a_cancelled_grep_stops(tree: pathlib.Path, mode: str) -> None:
    async with connect(mode, ["--cwd", str(tree)], tree) as conn:
        with anyio.move_on_after(0.5) as scope:
            # A grep of a FIFO never ends by itself (until the 30 s timeout).
            await conn.call("grep", {"pattern": "x", "path": "pipe"})
        assert scope.cancelled_caught
        log = await conn.stderr_says("(grep) cancelled by the client")
        assert "ended with SEARCH_ABORTED" in log, log
        after = await conn.call("grep", {"pattern": "println"})
        assert text(after) == 'Found 1 match\n\nsrc/main.rs\nLine 2:     println!("hello");'


async def test_the_workdir_is_the_clients_first_root(tree: pathlib.Path) -> None:
    async def roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=tree.as_uri())])

    with tempfile.TemporaryDirectory() as elsewhere:
        async with connect("legacy", [], pathlib.Path(elsewhere), roots=roots) as conn:
            result = await conn.call("glob", {"pattern": "*.rs"})
    assert text(result) + "\n" == cli(tree, "glob", "*.rs")


@pytest.mark.parametrize("mode", MODES)
async def test_bad_calls_get_clear_errors_and_the_connection_goes_on(tree: pathlib.Path, mode: str) -> None:
    async with connect(mode, ["--cwd", str(tree)], tree) as conn:
        nul = await conn.call("grep", {"pattern": "a\x00b"})
        assert nul.is_error and text(nul).startswith("Error: "), nul
        wrong = await conn.call("grep", {"pattern": 5})
        assert wrong.is_error and text(wrong).startswith("Error: invalid arguments: "), wrong
        # Nesting past serde_json's limit is refused by the SDK itself before
        # it is sent (the raw-message tests send it); 50 levels go through.
        nested: object = "x"
        for _ in range(50):
            nested = {"a": nested}
        deep = await conn.call("grep", {"pattern": nested})
        assert deep.is_error and text(deep) == 'Error: invalid arguments: "pattern" must be a string', deep
        with pytest.raises(Exception, match='unknown tool "nope"'):
            await conn.call("nope", {})
        ok = await conn.call("glob", {"pattern": "lib.rs"})
        assert text(ok) == "src/lib.rs"


LARGE_FILES = 10_000
TEXT_CAP = 50_000  # maxInlineBytes
META_CAP = 65_536  # searchMetaMaxBytes


@pytest.fixture(scope="module")
def large() -> Iterator[pathlib.Path]:
    """10,000 files in 100 directories, three lines with `needle` each:
    canonical values of hundreds of kilobytes, far past every cap."""
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d)
        for k in range(100):
            sub = root / f"d{k:02}"
            sub.mkdir()
            for f in range(LARGE_FILES // 100):
                (sub / f"file-{f:03}.txt").write_text(f"needle {k} {f}\nsecond needle\nthird needle, the last\n")
        yield root


def result_bytes(result: types.CallToolResult) -> int:
    """The JSON of every field of a result, as the SDK holds it."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def text_bytes(result: types.CallToolResult) -> int:
    """The JSON of the result's text alone."""
    return len(json.dumps(text(result), ensure_ascii=False).encode())


LARGE_CALLS = [
    ("glob", {"pattern": "*"}, {"shape": "paths", "total": LARGE_FILES, "truncated": True}),
    ("grep", {"pattern": "needle"}, {"shape": "matches", "total": 3 * LARGE_FILES, "truncated": True}),
]


@pytest.mark.parametrize("mode", MODES)
async def test_a_result_is_its_text_and_little_else(large: pathlib.Path, mode: str) -> None:
    """The bound of contract.md §12 on structuredContent and _meta: beside its text, a
    result carries at most 1 KiB (every field counted); its `_meta` has the
    presentation meta's counts."""
    async with connect(mode, ["--cwd", str(large)], large) as conn:
        for tool, arguments, counts in LARGE_CALLS:
            result = await conn.call(tool, arguments)
            assert not result.is_error, result
            assert len(text(result).encode()) <= TEXT_CAP, tool
            assert result_bytes(result) <= text_bytes(result) + 1_024, (tool, result_bytes(result))
            assert result.structured_content is None, tool
            assert result.meta["dsh-search/meta"] == counts, tool


@pytest.mark.parametrize("mode", MODES)
async def test_structured_content_meta_and_full_and_the_meta_page(large: pathlib.Path, mode: str) -> None:
    async with connect(mode, ["--cwd", str(large)], large, mcp_args=("--structured-content", "meta")) as conn:
        for tool, arguments, counts in LARGE_CALLS:
            result = await conn.call(tool, arguments)
            assert result.structured_content == counts, tool
            assert result_bytes(result) <= text_bytes(result) + 1_024, (tool, result_bytes(result))
    async with connect(mode, ["--cwd", str(large)], large, mcp_args=("--meta-page",)) as conn:
        for tool, arguments, counts in LARGE_CALLS:
            result = await conn.call(tool, arguments)
            assert result.structured_content is None, tool
            assert result_bytes(result) <= text_bytes(result) + META_CAP + 1_024, (tool, result_bytes(result))
            page = result.meta["dsh-search/meta"]
            assert {k: page[k] for k in counts} == counts, tool
            assert len(page["paths" if tool == "glob" else "files"]) > 0, tool
    async with connect(mode, ["--cwd", str(large)], large, mcp_args=("--structured-content", "full")) as conn:
        result = await conn.call("glob", {"pattern": "*"})
        assert len(result.structured_content["paths"]) == LARGE_FILES
        result = await conn.call("grep", {"pattern": "needle"})
        assert len(result.structured_content["matches"]) == 3 * LARGE_FILES
