"""Each line is a mistake the stubs must catch (test_types.py)."""

from __future__ import annotations

import dsh_search

dsh_search.rg("--files", "/tmp")  # E1: args is a list
dsh_search.Tools("/tmp", index="yes")  # E2: index is a bool
n: int = dsh_search.Tools("/tmp").grep("x")  # E3: grep returns str
dsh_search.Tools("/tmp").edit("a", "b")  # E4: new_string missing
