"""`python -m dsh_search mcp` under the official Python MCP SDK's client."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tempfile

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from conftest import CLI

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_tools_list_and_a_grep(tree: pathlib.Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "dsh_search", "--cwd", str(tree), "mcp"],
                                   cwd=str(tree))
    with tempfile.TemporaryFile("w+") as log:
        async with Client(server=stdio_client(params, errlog=log), mode="legacy") as client:
            with anyio.fail_after(60):
                listed = (await client.list_tools()).tools
                result = await client.call_tool("grep", {"pattern": r"fn \w+", "include": "*.rs"})
    definitions = json.loads(subprocess.run([CLI, "definitions"], capture_output=True, text=True).stdout)
    assert [t.name for t in listed] == [d["name"] for d in definitions]
    want = subprocess.run([CLI, "--cwd", str(tree), "grep", r"fn \w+", "--include", "*.rs"],
                          capture_output=True, text=True).stdout
    assert not result.is_error
    assert result.content[0].text + "\n" == want
