# Types of the extension module (bindings/python/src/lib.rs).
from __future__ import annotations

import os
from typing import Any, Optional, Union

__version__: str

_Path = Union[str, "os.PathLike[str]"]

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
        self, pattern: str, path: Optional[str] = None, *, cwd: Optional[_Path] = None, session: Optional[str] = None
    ) -> str: ...
    def grep(
        self,
        pattern: str,
        path: Optional[str] = None,
        include: Optional[str] = None,
        *,
        cwd: Optional[_Path] = None,
        session: Optional[str] = None,
    ) -> str: ...
    def read(
        self,
        file_path: str,
        offset: Optional[int] = None,
        limit: Optional[int] = None,
        *,
        cwd: Optional[_Path] = None,
        session: Optional[str] = None,
    ) -> str: ...
    def write(
        self, file_path: str, content: str, *, cwd: Optional[_Path] = None, session: Optional[str] = None
    ) -> str: ...
    def edit(
        self,
        file_path: str,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
        *,
        cwd: Optional[_Path] = None,
        session: Optional[str] = None,
    ) -> str: ...
