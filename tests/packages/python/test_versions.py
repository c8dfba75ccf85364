"""One version everywhere: Cargo's (DSH_SEARCH_VERSION, from cargo metadata),
the npm packages', their dependencies', the wheel's, the archives', the
binary's `--version`, the module's and server.json's."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import tarfile
import zipfile

import dsh_search

VERSION = os.environ["DSH_SEARCH_VERSION"]
ART = pathlib.Path(os.environ["DSH_SEARCH_ARTIFACTS"])
REPO = pathlib.Path(os.environ["DSH_SEARCH_REPO"])


def npm_manifest(tgz: pathlib.Path) -> dict:
    with tarfile.open(tgz) as t:
        f = t.extractfile("package/package.json")
        assert f is not None
        return json.load(f)


def versions() -> list[tuple[str, str]]:
    found = [
        ("bindings/node/package.json", json.loads((REPO / "bindings/node/package.json").read_text())["version"]),
        ("the Python module", dsh_search.__version__),
        ("dsh-search --version", subprocess.run([dsh_search.binary(), "--version"], capture_output=True,
                                                text=True).stdout.split()[-1]),
    ]
    for tgz in sorted(ART.glob("*.tgz")):
        m = npm_manifest(tgz)
        found.append((f"{tgz.name}: version", m["version"]))
        for dep, v in m.get("optionalDependencies", {}).items():
            found.append((f"{tgz.name}: optional dependency {dep}", v))
    for whl in sorted(ART.glob("*.whl")):
        found.append((whl.name, whl.name.split("-")[1]))
        with zipfile.ZipFile(whl) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            found.append((f"{whl.name}: METADATA", re.search(r"^Version: (.*)$", z.read(meta).decode(), re.M)[1]))
    for archive in sorted([*ART.glob("dsh-search-*.tar.gz"), *ART.glob("dsh-search-*.zip")]):
        found.append((archive.name, archive.name.split("-")[2]))
    server = json.loads((ART / "server.json").read_text())
    found.append(("server.json", server["version"]))
    found += [(f"server.json: {p['registryType']} {p['identifier']}", p["version"]) for p in server["packages"]]
    return found


def test_one_version_everywhere() -> None:
    found = versions()
    assert [(what, v) for what, v in found if v != VERSION] == []
    kinds = {what.split(":")[0].split(".")[-1] for what, _ in found}
    # Each kind of artifact was looked at: npm tarballs, a wheel, an archive.
    assert {"tgz", "whl", "gz"} <= kinds, kinds


def test_server_json_names_the_npm_and_pypi_packages() -> None:
    server = json.loads((ART / "server.json").read_text())
    main = npm_manifest(next(ART.glob("dsh-search-[0-9]*.tgz")))
    whl = next(ART.glob("*.whl"))
    with zipfile.ZipFile(whl) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        pypi_name = re.search(r"^Name: (.*)$", z.read(meta).decode(), re.M)[1]
    assert {(p["registryType"], p["identifier"]) for p in server["packages"]} == {("npm", main["name"]),
                                                                                  ("pypi", pypi_name)}
    assert all(p["packageArguments"] == [{"type": "positional", "value": "mcp"}] for p in server["packages"])


def test_sha256sums_cover_every_artifact() -> None:
    listed = {}
    for line in (ART / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name] = digest
    files = {p.name for p in ART.iterdir() if p.name not in ("SHA256SUMS", "SIZES")}
    assert set(listed) == files
    import hashlib
    for name, digest in listed.items():
        assert hashlib.sha256((ART / name).read_bytes()).hexdigest() == digest, name
