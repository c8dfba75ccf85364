"""The glibc Linux images need no glibc newer than the one stated in
bindings/node/platforms.json (`glibc`): each one's version needs, read with
llvm-readelf; the wheels' manylinux tags say the same (docs/packaging.md,
"glibc")."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Callable

import pytest
from conftest import GLIBC, PLATFORMS, npm_manifest, run, tool, wheel_metadata, wheel_of

IMAGES = ["npm addon", "npm binary", "archive binary", "wheel module", "wheel binary"]
MACHINE = {"x64": "X86-64", "arm64": "AArch64"}

Images = Callable[[str], dict[str, pathlib.Path]]
cases = [(key, what) for key in GLIBC for what in IMAGES]


def version(v: str) -> tuple[int, ...]:
    return tuple(int(n) for n in v.split("."))


def glibc_needs(path: pathlib.Path) -> set[str]:
    """Every `GLIBC_…` version the image's `.gnu.version_r` asks of its libraries."""
    out = run(tool("llvm-readelf"), "--version-info", str(path))
    needs = out.split("Version needs section", 1)
    assert len(needs) == 2, f"{path.name}: no version needs section"
    return set(re.findall(r"Name: (GLIBC_[\w.]+)", needs[1]))


def test_some_glibc_target_is_checked() -> None:
    assert GLIBC


@pytest.mark.parametrize(("key", "what"), cases)
def test_no_glibc_newer_than_stated(images: Images, key: str, what: str) -> None:
    path = images(key)[what]
    header = run(tool("llvm-readelf"), "--file-header", str(path))
    assert re.search(rf"^  Machine: .*\b{MACHINE[PLATFORMS[key]['cpu']]}$", header, re.M), header
    needs = glibc_needs(path)
    # Something is asked (the test would pass on an image it could not read).
    assert needs, f"{what}: no GLIBC_ version needed"
    stated = version(PLATFORMS[key]["glibc"])
    newer = sorted(n for n in needs if not re.fullmatch(r"GLIBC_[\d.]+", n) or version(n[6:]) > stated)
    assert newer == [], f"{what} needs {newer}, above glibc {PLATFORMS[key]['glibc']}"


@pytest.mark.parametrize("key", GLIBC)
def test_wheel_is_manylinux_of_that_glibc(key: str) -> None:
    major, minor = PLATFORMS[key]["glibc"].split(".")
    arch = {"x64": "x86_64", "arm64": "aarch64"}[PLATFORMS[key]["cpu"]]
    wheel, _meta = wheel_metadata(key)
    tags = re.findall(r"^Tag: (.*)$", wheel, re.M)
    want = f"cp39-abi3-manylinux_{major}_{minor}_{arch}"
    assert want in tags, tags
    # glibc 2.17 is also manylinux2014's name (PEP 599), which pip before
    # 20.3 knows it by.
    if (major, minor) == ("2", "17"):
        assert f"cp39-abi3-manylinux2014_{arch}" in tags, tags
    assert f"manylinux_{major}_{minor}_{arch}" in wheel_of(key).name


@pytest.mark.parametrize("key", GLIBC)
def test_npm_package_states_the_glibc(key: str) -> None:
    m = npm_manifest(key)
    assert m["libc"] == ["glibc"]
    assert f"glibc {PLATFORMS[key]['glibc']} or later" in m["description"]


def test_needs_are_read() -> None:
    # The reader above on this machine's own C library's users: the Python
    # running this asks for some GLIBC_ version, so an empty answer means
    # the reader is broken, not that an image needs nothing.
    import sys

    assert any(n.startswith("GLIBC_2.") for n in glibc_needs(pathlib.Path(sys.executable).resolve()))
