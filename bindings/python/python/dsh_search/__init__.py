"""rg's glob and grep invocations and the dsh-search tools, in-process.

- ``rg(args, cwd)``: rg 15.2.0's own answer (stdout, stderr, exit code) to
  one of the two invocations a coding agent's harness makes, without a
  process;
- ``Tools(root, ...)``: the model-facing tools (glob, grep, read, write,
  edit) over a workspace, each returning the text the model reads;
- ``binary()``: the ``dsh-search`` executable installed with this package
  (``python -m dsh_search mcp`` runs it).
"""

from __future__ import annotations

import os
import sys
import sysconfig

from dsh_search._native import ToolError, Tools, __version__, rg

__all__ = ["ToolError", "Tools", "__version__", "binary", "rg"]


def binary() -> str:
    """The path of the ``dsh-search`` executable this package installed.

    The wheel puts it among the environment's scripts, beside ``python``:
    the scripts directory of the install scheme in use (a virtualenv's,
    the system's, or the user's for ``pip install --user``).
    """
    exe = "dsh-search" + (".exe" if sys.platform == "win32" else "")
    schemes = [sysconfig.get_default_scheme()]
    user = f"{os.name}_user"
    if user in sysconfig.get_scheme_names():
        schemes.append(user)
    dirs = [sysconfig.get_path("scripts", scheme) for scheme in schemes]
    for d in dirs:
        path = os.path.join(d, exe)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"dsh-search {__version__}: no {exe} in {', '.join(dirs)}; reinstall the dsh-search package"
    )
