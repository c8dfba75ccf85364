"""Checked by mypy --strict against the installed stubs (test_types.py)."""

from __future__ import annotations

import pathlib

import dsh_search


def use(root: pathlib.Path) -> str:
    stdout, stderr, code = dsh_search.rg(["--no-config", "--json", "--regexp=x"], root)
    tools = dsh_search.Tools(root, index=False, fs="mem", config={"sampleOverCapGlobResults": False})
    text: str = tools.grep("x", include="*.py") + tools.read("a.py", offset=1, limit=2)
    result: dict[str, object] = tools.call("glob", {"pattern": "*"})
    try:
        tools.edit("a.py", "x", "y", replace_all=True)
    except dsh_search.ToolError as e:
        text += e.code or ""
    # Every path parameter takes str, bytes or an os.PathLike of either.
    raw = bytes(root) + b"/\xe9dir"
    dsh_search.rg(["--no-config", "--files"], raw)
    text += dsh_search.Tools(raw, overlay=raw).glob("*", b"src", cwd=raw) + tools.read(pathlib.Path("a.py"))
    return text + stdout.decode() + stderr.decode() + str(code) + str(result) + dsh_search.binary()
