"""The built images, read without running them (scripts/inspect-packages):
every Mach-O and ELF file that scripts/package put into the artifacts, taken
out of the npm platform packages, the archives and the wheels, for the
targets named in DSH_SEARCH_TARGETS. LLVM's tools read them; the platforms'
promises (minimum macOS, oldest glibc) come from bindings/node/platforms.json,
the one table the packer, the loader and these tests read."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tarfile
import zipfile
from collections.abc import Callable

import pytest

ART = pathlib.Path(os.environ["DSH_SEARCH_ARTIFACTS"])
REPO = pathlib.Path(os.environ["DSH_SEARCH_REPO"])
VERSION = os.environ["DSH_SEARCH_VERSION"]
TARGETS = os.environ["DSH_SEARCH_TARGETS"].split()
PLATFORMS: dict[str, dict[str, str]] = json.loads((REPO / "bindings/node/platforms.json").read_text())
KEY_OF = {p["target"]: key for key, p in PLATFORMS.items()}

# The platform tag's architecture in a wheel's name, per npm cpu.
WHEEL_ARCH = {"x64": "x86_64", "arm64": "arm64"}


def keys(pred: Callable[[dict[str, str]], bool]) -> list[str]:
    """The platform keys of the targets under test for which `pred` holds."""
    return [KEY_OF[t] for t in TARGETS if pred(PLATFORMS[KEY_OF[t]])]


DARWIN = keys(lambda p: p["os"] == "darwin")
GLIBC = keys(lambda p: p.get("libc") == "glibc")


def tool(name: str) -> str:
    """An LLVM tool (Debian's `llvm`; scripts/inspect-packages installs it)."""
    found = shutil.which(name)
    assert found, f"{name} is not on PATH (Debian: llvm)"
    return found


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def wheel_of(key: str) -> pathlib.Path:
    """The one wheel of the platform `key`."""
    p = PLATFORMS[key]
    if p["os"] == "darwin":
        pattern = f"dsh_search-{VERSION}-cp39-abi3-macosx_*_{WHEEL_ARCH[p['cpu']]}.whl"
    else:
        arch = {"x64": "x86_64", "arm64": "aarch64"}[p["cpu"]]
        pattern = f"dsh_search-{VERSION}-cp39-abi3-manylinux*_{arch}.whl"
    found = sorted(ART.glob(pattern))
    assert len(found) == 1, f"{pattern}: {[f.name for f in found]}"
    return found[0]


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], dict[str, pathlib.Path]]:
    """For a platform key, each native image of its artifacts by where it
    came from: the npm package's addon and binary, the archive's binary,
    the wheel's module and binary."""
    cache: dict[str, dict[str, pathlib.Path]] = {}

    def get(key: str) -> dict[str, pathlib.Path]:
        if key in cache:
            return cache[key]
        target = PLATFORMS[key]["target"]
        root = tmp_path_factory.mktemp(key)
        found: dict[str, pathlib.Path] = {}
        with tarfile.open(ART / f"dsh-search-{key}-{VERSION}.tgz") as t:
            t.extractall(root / "npm", filter="data")
        found["npm addon"] = root / "npm/package/dsh-search.node"
        found["npm binary"] = root / "npm/package/bin/dsh-search"
        with tarfile.open(ART / f"dsh-search-{VERSION}-{target}.tar.gz") as t:
            t.extractall(root / "archive", filter="data")
        found["archive binary"] = root / f"archive/dsh-search-{VERSION}-{target}/dsh-search"
        with zipfile.ZipFile(wheel_of(key)) as z:
            z.extractall(root / "wheel")
        modules = sorted((root / "wheel/dsh_search").glob("*.so"))
        assert len(modules) == 1, modules
        found["wheel module"] = modules[0]
        found["wheel binary"] = root / f"wheel/dsh_search-{VERSION}.data/scripts/dsh-search"
        for what, path in found.items():
            assert path.is_file(), f"{key}: no {what} at {path.relative_to(root)}"
        cache[key] = found
        return found

    return get


def npm_manifest(key: str) -> dict:
    with tarfile.open(ART / f"dsh-search-{key}-{VERSION}.tgz") as t:
        f = t.extractfile("package/package.json")
        assert f is not None
        return json.load(f)


def wheel_metadata(key: str) -> tuple[str, str]:
    """The wheel's WHEEL file and METADATA."""
    with zipfile.ZipFile(wheel_of(key)) as z:
        wheel = next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL"))
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return z.read(wheel).decode(), z.read(meta).decode()
