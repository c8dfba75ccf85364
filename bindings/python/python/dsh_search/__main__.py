"""``python -m dsh_search ARGS``: the ``dsh-search`` command (``mcp``,
``serve``, ``grep``, …), the binary installed with this package."""

from __future__ import annotations

import os
import subprocess
import sys

from dsh_search import binary


def main() -> int:
    try:
        exe = binary()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    args = [exe, *sys.argv[1:]]
    if sys.platform == "win32":
        # Windows has no exec: the child's status becomes this process's.
        try:
            return subprocess.call(args)
        except KeyboardInterrupt:
            return 130
    # Replaced by the binary: its signals, standard streams and exit status
    # are the server's own, with no Python process between.
    os.execv(exe, args)


if __name__ == "__main__":
    sys.exit(main())
