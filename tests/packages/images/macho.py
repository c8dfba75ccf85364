"""A Mach-O image's header, load commands and symbols, as LLVM's
llvm-objdump and llvm-nm print them."""

from __future__ import annotations

import dataclasses
import pathlib
import re

from conftest import run, tool


@dataclasses.dataclass
class Image:
    cputype: str
    filetype: str
    commands: list[dict[str, str]]

    def of(self, cmd: str) -> list[dict[str, str]]:
        return [c for c in self.commands if c["cmd"] == cmd]


def read(path: pathlib.Path) -> Image:
    """`llvm-objdump --macho --private-headers` parsed: the header's CPU and
    file type (`-v`: by name), and each load command's fields by name."""
    out = run(tool("llvm-objdump"), "--macho", "--private-headers", "--non-verbose", str(path))
    verbose = run(tool("llvm-objdump"), "--macho", "--private-headers", str(path))
    header = verbose.split("Load command", 1)[0].splitlines()
    i = next(n for n, line in enumerate(header) if line.split()[:2] == ["magic", "cputype"])
    fields = dict(zip(header[i].split(), header[i + 1].split()))
    commands = []
    for block in re.split(r"^Load command \d+$", verbose, flags=re.M)[1:]:
        cmd: dict[str, str] = {}
        for line in block.splitlines():
            parts = line.strip().split(None, 1)
            if len(parts) == 2 and parts[0] not in cmd:
                cmd[parts[0]] = parts[1]
        commands.append(cmd)
    assert len(commands) == int(fields["ncmds"]), (fields, out[:200])
    return Image(fields["cputype"], fields["filetype"], commands)


def dylib_name(cmd: dict[str, str]) -> str:
    """The path of an LC_LOAD_DYLIB/LC_ID_DYLIB: `name PATH (offset N)`."""
    return re.sub(r" \(offset \d+\)$", "", cmd["name"])


def symbols(path: pathlib.Path) -> list[str]:
    """`llvm-nm -m` lines: each symbol with its section and whether it is
    external, undefined or looked up when loaded."""
    return run(tool("llvm-nm"), "-m", str(path)).splitlines()


def binds(path: pathlib.Path) -> list[tuple[str, str]]:
    """(library, symbol) of each symbol dyld binds when it loads the image,
    from its bind and lazy-bind opcodes (`llvm-objdump --macho --bind
    --lazy-bind`): the library is where dyld looks the symbol up, by its
    short name (`libSystem`), or `flat-namespace` for a symbol looked up in
    every image of the process (`-undefined dynamic_lookup`)."""
    out = run(tool("llvm-objdump"), "--macho", "--bind", "--lazy-bind", str(path))
    found = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 5 or fields[0] == "segment" or line.endswith(":"):
            continue
        found.append((fields[-2], fields[-1]))
    return found
