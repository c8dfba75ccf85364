"""The wheel as a user gets it: installed into a fresh virtualenv with no
Rust on PATH (scripts/test-packages), `import dsh_search` from there."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

import dsh_search
from conftest import CLI, RG, make_tree

VCS = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"]


def glob_argv(pattern: str, path: str | None = None) -> list[str]:
    argv = ["--no-config", "--files", f"--glob={pattern}", "--sort=modified", "--no-ignore", "--hidden"]
    for d in VCS:
        argv += [f"--glob=!**/{d}", f"--glob=!**/{d}/**"]
    return argv + (["--", path] if path is not None else [])


def grep_argv(pattern: str, path: str | None = None, include: str | None = None) -> list[str]:
    argv = ["--no-config", "--json", f"--regexp={pattern}"]
    if include is not None:
        argv.append(f"--glob={include}")
    return argv + (["--", path] if path is not None else [])


ELAPSED = re.compile(rb'"(elapsed|elapsed_total)":\{[^{}]*\}')


def normalize(out: tuple[bytes, bytes, int]) -> tuple[list[bytes], bytes, int]:
    """grep's timings masked, its per-file blocks in path order (rg's own is its threads')."""
    stdout, stderr, code = out
    blocks: list[bytes] = []
    rest: list[bytes] = []
    block: list[bytes] | None = None
    for line in ELAPSED.sub(rb'"\1":"[ELAPSED]"', stdout).split(b"\n"):
        if line.startswith(b'{"type":"begin"'):
            block = []
        (rest if block is None else block).append(line)
        if line.startswith(b'{"type":"end"') and block is not None:
            blocks.append(b"\n".join(block))
            block = None
    return sorted(blocks) + rest, stderr, code


RG_CASES = [
    ("glob all", glob_argv("*")),
    ("glob *.md", glob_argv("*.md")),
    ("glob under a path", glob_argv("**/*.rs", "src")),
    ("glob nothing", glob_argv("*.zig")),
    ("glob a missing path", glob_argv("*", "nope")),
    ("glob a bad glob", glob_argv("a[")),
    ("grep hello", grep_argv("hello")),
    ("grep with include", grep_argv(r"fn \w+", include="*.rs")),
    ("grep CRLF", grep_argv("^hello$", "docs")),
    ("grep latin1", grep_argv("caf.", "latin1.txt")),
    ("grep UTF-16", grep_argv("utf16")),
    ("grep a binary file", grep_argv("binary", "data.bin")),
    ("grep nothing", grep_argv("zzz_absent")),
    ("grep a bad regex", grep_argv("fn (")),
    ("grep a missing path", grep_argv("x", "nope")),
]


@pytest.mark.parametrize("name,argv", RG_CASES, ids=[c[0] for c in RG_CASES])
def test_rg_answers_as_rg(tree: pathlib.Path, name: str, argv: list[str]) -> None:
    got = dsh_search.rg(argv, tree)
    # stdin at /dev/null, as a harness spawns rg: a pipe would be searched.
    r = subprocess.run([RG, *argv], cwd=tree, capture_output=True, stdin=subprocess.DEVNULL)
    assert normalize(got) == normalize((r.stdout, r.stderr, r.returncode))


def test_rg_cases_cover_every_exit_code(tree: pathlib.Path) -> None:
    codes = {subprocess.run([RG, *argv], cwd=tree, capture_output=True, stdin=subprocess.DEVNULL).returncode
             for _, argv in RG_CASES}
    assert codes == {0, 1, 2}


def cli(root: pathlib.Path, session: str, *args: str, stdin: str | None = None) -> tuple[str, int]:
    r = subprocess.run([CLI, "--cwd", str(root), "--session", session, *args], capture_output=True, text=True,
                       input=stdin)
    return r.stdout.removesuffix("\n"), r.returncode


def test_tools_give_the_cli_texts() -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        ours, theirs = make_tree(pathlib.Path(a)), make_tree(pathlib.Path(b))
        tools = dsh_search.Tools(ours, session="s")
        steps = [
            (lambda: tools.glob("**/*.md"), ["glob", "**/*.md"], None),
            (lambda: tools.glob("*", "src"), ["glob", "*", "src"], None),
            (lambda: tools.grep("hello", include="*.md"), ["grep", "hello", "--include", "*.md"], None),
            (lambda: tools.grep("zzz_absent"), ["grep", "zzz_absent"], None),
            (lambda: tools.read("src/lib.rs"), ["read", "src/lib.rs"], None),
            (lambda: tools.read("src/main.rs", offset=2, limit=1), ["read", "src/main.rs", "--offset", "2", "--limit", "1"], None),
            (lambda: tools.edit("src/lib.rs", "a + b", "a - b"), ["edit", "src/lib.rs", "--old", "a + b", "--new", "a - b"], None),
            (lambda: tools.write("new.txt", "one\ntwo\n"), ["write", "new.txt"], "one\ntwo\n"),
        ]
        for run, argv, stdin in steps:
            want, code = cli(theirs, "s", *argv, stdin=stdin)
            assert code in (0, 1), (argv, want)
            assert run().replace(str(ours), "[ROOT]") == want.replace(str(theirs), "[ROOT]"), argv
        assert (ours / "src/lib.rs").read_text() == (theirs / "src/lib.rs").read_text()
        assert "a - b" in (ours / "src/lib.rs").read_text()
        assert (ours / "new.txt").read_text() == "one\ntwo\n"


def test_an_index_validated_at_each_call_answers_as_the_scan(tree: pathlib.Path) -> None:
    """``index_watch="none"``: the mirror checked against the tree at each
    call (docs/index.md, "Where there is no watcher"); a change made on the
    disk is in the next call's answer."""
    scan = dsh_search.Tools(tree)
    validated = dsh_search.Tools(tree, index=True, index_watch="none")
    for step in range(3):
        for run in (lambda t: t.glob("**/*"), lambda t: t.grep("hello"), lambda t: t.grep("zzz_step_\\d")):
            assert run(validated) == run(scan), step
        (tree / "src" / f"step{step}.rs").write_text(f"// zzz_step_{step}\n")
    assert "zzz_step_2" in validated.grep("zzz_step_\\d")


def test_a_tool_error_is_an_exception_with_the_cli_text(tree: pathlib.Path) -> None:
    tools = dsh_search.Tools(tree, session="e")
    cases = [
        (lambda: tools.grep("fn ("), ["grep", "fn ("]),
        (lambda: tools.edit("README.md", "absent", "x"), ["edit", "README.md", "--old", "absent", "--new", "x"]),
        (lambda: tools.read("nope.txt"), ["read", "nope.txt"]),
    ]
    for run, argv in cases:
        want, code = cli(tree, "other", *argv)
        assert code == 2, (argv, want)
        with pytest.raises(dsh_search.ToolError) as e:
            run()
        assert str(e.value) == want, argv
    with pytest.raises(dsh_search.ToolError) as e:
        tools.edit("README.md", "demo", "x")
    assert e.value.code == "FS_NOT_OBSERVED"


BAD = [
    ("rg: not one of the two invocations", lambda d: dsh_search.rg(["--files"], d), ValueError, "rg: "),
    ("rg: a missing cwd", lambda d: dsh_search.rg(glob_argv("*"), d / "nope"), ValueError, "nope"),
    ("rg: args not a list", lambda d: dsh_search.rg("--files", d), TypeError, ""),
    ("Tools: root None", lambda d: dsh_search.Tools(None), TypeError, "expected str, bytes or os.PathLike object"),
    ("Tools: an unknown backend", lambda d: dsh_search.Tools(d, backend="ripgrep"), ValueError, "ripgrep"),
    ("Tools: a bad fs", lambda d: dsh_search.Tools(d, fs="ftp://x"), ValueError, "fs"),
    ("Tools: an unknown index watch", lambda d: dsh_search.Tools(d, index=True, index_watch="inotify"), ValueError, 'unknown index watch "inotify"'),
    ("Tools.call: args not JSON", lambda d: dsh_search.Tools(d).call("grep", {"pattern": object()}), ValueError, "JSON"),
]


@pytest.mark.parametrize("name,run,kind,needle", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises_with_a_message(tree: pathlib.Path, name: str, run, kind, needle: str) -> None:
    with pytest.raises(kind) as e:
        run(tree)
    assert needle in str(e.value)


def test_call_returns_the_result_object(tree: pathlib.Path) -> None:
    got = dsh_search.Tools(tree).call("grep", {"pattern": "hello", "include": "*.md"})
    want = json.loads(subprocess.run([CLI, "--cwd", str(tree), "call", "grep", '{"pattern":"hello","include":"*.md"}',
                                      "--format", "json"], capture_output=True, text=True).stdout)
    assert got["content"] == want["content"] and got["isError"] is False
    assert [d["name"] for d in dsh_search.Tools(tree).definitions()] == \
        [d["name"] for d in json.loads(subprocess.run([CLI, "definitions"], capture_output=True, text=True).stdout)]


# Windows has no FIFOs, and no SIGINT that os.kill delivers as Ctrl-C.
@pytest.mark.skipif(sys.platform == "win32", reason="needs a FIFO and SIGINT")
def test_a_keyboard_interrupt_stops_a_grep_and_other_threads_run_meanwhile(tree: pathlib.Path) -> None:
    # A grep of a FIFO nobody writes waits until it is cancelled.
    fifo = tree / "pipe"
    os.mkfifo(fifo)
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.01)

    # Daemon threads, started inside the `try`: a failed check must never
    # leave a thread the interpreter waits for at exit.
    counter = threading.Thread(target=count, daemon=True)
    interrupt = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    interrupt.daemon = True
    start = time.monotonic()
    try:
        counter.start()
        interrupt.start()
        with pytest.raises(KeyboardInterrupt):
            dsh_search.rg(grep_argv("x", "pipe"), tree)
    finally:
        interrupt.cancel()
        stop.set()
        counter.join()
    assert time.monotonic() - start < 10
    # The GIL was free while the call waited.
    assert ticks > 20


def test_the_binary_is_installed_with_the_package_version() -> None:
    exe = dsh_search.binary()
    assert pathlib.Path(exe).parent == pathlib.Path(sys.executable).parent
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"dsh-search {dsh_search.__version__}"
    assert dsh_search.__version__ == os.environ["DSH_SEARCH_VERSION"]


def test_python_m_dsh_search_runs_the_cli(tree: pathlib.Path) -> None:
    ours = subprocess.run([sys.executable, "-m", "dsh_search", "--cwd", str(tree), "grep", "zzz_absent"],
                          capture_output=True, text=True)
    theirs = subprocess.run([CLI, "--cwd", str(tree), "grep", "zzz_absent"], capture_output=True, text=True)
    assert (ours.stdout, ours.returncode) == (theirs.stdout, theirs.returncode) == ("No matches found\n", 1)



# Paths that are not UTF-8 (a root whose name is not UTF-8 was decoded lossily
# and refused; a bytes path was refused).
def path_forms(path: bytes) -> list[tuple[str, str | bytes | pathlib.Path]]:
    """`path` as each kind of path a parameter takes: os.fsdecode's str
    (surrogateescape), the bytes, a pathlib.Path."""
    return [("str", os.fsdecode(path)), ("bytes", path), ("pathlib.Path", pathlib.Path(os.fsdecode(path)))]


# Windows' file names are UTF-16: none is bytes that are not UTF-8.
@pytest.mark.skipif(sys.platform == "win32", reason="Windows names are UTF-16")
def test_a_directory_whose_name_is_not_utf8_is_taken_as_it_is() -> None:
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as elsewhere:
        root = os.path.join(os.fsencode(d), b"\xe9dir")
        os.mkdir(root)
        make_tree(pathlib.Path(os.fsdecode(root)))
        steps = [
            (lambda t, **kw: t.grep("hello", include="*.md", **kw), ["grep", "hello", "--include", "*.md"]),
            (lambda t, **kw: t.glob("**/*.rs", **kw), ["glob", "**/*.rs"]),
            (lambda t, **kw: t.read("src/lib.rs", **kw), ["read", "src/lib.rs"]),
        ]
        for form, path in path_forms(root):
            for run, argv in steps:
                # The command line's --cwd takes the bytes (subprocess
                # encodes the str back to them).
                want, code = cli(pathlib.Path(os.fsdecode(root)), "s", *argv)
                assert code == 0, (argv, want)
                # As the root, and as a call's cwd in a workspace elsewhere.
                assert run(dsh_search.Tools(path, session="s")) == want, (form, argv)
                assert run(dsh_search.Tools(elsewhere, session="s"), cwd=path) == want, (form, argv)
            for name, argv in RG_CASES:
                r = subprocess.run([RG, *argv], cwd=root, capture_output=True, stdin=subprocess.DEVNULL)
                assert normalize(dsh_search.rg(argv, path)) == normalize((r.stdout, r.stderr, r.returncode)), (form, name)


@pytest.mark.skipif(sys.platform == "win32", reason="Windows names are UTF-16")
def test_an_overlay_whose_name_is_not_utf8_gets_the_edits(tree: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as d:
        for i in range(3):
            # An overlay of its own for each form.
            form, overlay = path_forms(os.path.join(os.fsencode(d), b"\xe9overlay%d" % i))[i]
            tools = dsh_search.Tools(tree, overlay=overlay, session="o")
            tools.read("README.md")
            tools.edit("README.md", "# demo", f"# {form}")
            assert (tree / "README.md").read_bytes().startswith(b"# demo\n")
            kept = [os.path.join(top, f) for top, _, files in os.walk(os.fsencode(overlay)) for f in files]
            assert any(open(f, "rb").read().startswith(f"# {form}\n".encode()) for f in kept), (form, kept)
            assert f"# {form}\n" in tools.read("README.md"), form


def test_a_tool_path_is_text_from_str_bytes_or_a_path(tree: pathlib.Path) -> None:
    tools = dsh_search.Tools(tree, session="p")
    assert tools.read(b"src/lib.rs") == tools.read(pathlib.Path("src/lib.rs")) == tools.read("src/lib.rs")
    assert tools.glob("*.rs", b"src") == tools.glob("*.rs", pathlib.Path("src")) == tools.glob("*.rs", "src")
    assert tools.grep("fn", b"src") == tools.grep("fn", pathlib.Path("src")) == tools.grep("fn", "src")
    # A path that is not text is refused, as the command line refuses it,
    # never changed into another. (On Windows os.fsdecode itself refuses
    # such bytes: only the bytes form is there.)
    forms = path_forms(b"\xe9.txt") if sys.platform != "win32" else [("bytes", b"\xe9.txt")]
    for form, path in forms:
        with pytest.raises(ValueError, match=r"Tools\.read: file_path .* is not UTF-8"):
            tools.read(path)
        with pytest.raises(ValueError, match=r"Tools\.grep: path .* is not UTF-8"):
            tools.grep("x", path)
    with pytest.raises(TypeError, match="expected str, bytes or os.PathLike object"):
        tools.read(None)  # type: ignore[arg-type]
