# Types of the extension module (bindings/python/src/lib.rs).
from __future__ import annotations

import os
from typing import Any, Optional, Union

__version__: str

# Every path parameter: str, bytes or an os.PathLike of either, taken
# without loss (a name that is not UTF-8 is the file it names). A tool's
# ``path`` and ``file_path`` must be text (UTF-8): one that is not raises
# ValueError, as the command line refuses it.
_Path = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

class ToolError(Exception):
    """A tool's error result; ``str(e)`` is the text the model reads."""

    code: Optional[str]

def rg(args: list[str], cwd: _Path) -> tuple[bytes, bytes, int]:
    """rg 15.2.0's stdout, stderr and exit code for ``args`` in ``cwd``."""

class Tools:
    def __init__(
        self,
        root: _Path,
        *,
        index: bool = False,
        index_watch: Optional[str] = None,
        fs: Optional[str] = None,
        backend: Optional[str] = None,
        overlay: Optional[_Path] = None,
        config: Optional[dict[str, Any]] = None,
        identity: Optional[_Path] = None,
        known_hosts: Optional[_Path] = None,
        session: Optional[str] = None,
    ) -> None: ...
    def definitions(self) -> list[dict[str, Any]]: ...
    def call(
        self, name: str, args: dict[str, Any], *, cwd: Optional[_Path] = None, session: Optional[str] = None
    ) -> dict[str, Any]: ...
    def glob(
        self, pattern: str, path: Optional[_Path] = None, *, cwd: Optional[_Path] = None, session: Optional[str] = None
    ) -> str: ...
    def grep(
        self,
        pattern: str,
        path: Optional[_Path] = None,
        include: Optional[str] = None,
        *,
        cwd: Optional[_Path] = None,
        session: Optional[str] = None,
    ) -> str: ...
    def read(
        self,
        file_path: _Path,
        offset: Optional[int] = None,
        limit: Optional[int] = None,
        *,
        cwd: Optional[_Path] = None,
        session: Optional[str] = None,
    ) -> str: ...
    def write(
        self, file_path: _Path, content: str, *, cwd: Optional[_Path] = None, session: Optional[str] = None
    ) -> str: ...
    def edit(
        self,
        file_path: _Path,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
        *,
        cwd: Optional[_Path] = None,
        session: Optional[str] = None,
    ) -> str: ...
