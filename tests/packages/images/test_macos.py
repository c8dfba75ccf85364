"""The macOS images, built on Linux (cargo-zigbuild) and read here without a
Mac: each one's architecture, minimum macOS, libraries, install name,
ad-hoc signature and exported symbols; the wheel's tags and the npm
package's fields (docs/packaging.md, "macOS")."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Callable

import codesign
import macho
import pytest
from conftest import DARWIN, PLATFORMS, REPO, npm_manifest, wheel_metadata, wheel_of

# What every image may link: the C library and the iconv that Rust's std
# and the crates' C code need, all in the OS itself (no framework).
SYSTEM_LIBRARIES = {"/usr/lib/libSystem.B.dylib", "/usr/lib/libiconv.2.dylib", "/usr/lib/libcharset.1.dylib"}
CPUTYPE = {"arm64": "ARM64", "x64": "X86_64"}
IMAGES = ["npm addon", "npm binary", "archive binary", "wheel module", "wheel binary"]
# What each image is: the executables, and the two libraries Node and
# Python load (cdylibs: Mach-O dylibs).
FILETYPE = {"npm binary": "EXECUTE", "archive binary": "EXECUTE", "wheel binary": "EXECUTE",
            "npm addon": "DYLIB", "wheel module": "DYLIB"}
# Load commands that carry a path (a build path would show there).
PATH_COMMANDS = {"LC_ID_DYLIB", "LC_LOAD_DYLIB", "LC_LOAD_WEAK_DYLIB", "LC_REEXPORT_DYLIB", "LC_RPATH",
                 "LC_LOAD_DYLINKER", "LC_SUB_FRAMEWORK", "LC_DYLD_ENVIRONMENT"}

Images = Callable[[str], dict[str, pathlib.Path]]
cases = [(key, what) for key in DARWIN for what in IMAGES]


def test_some_darwin_target_is_checked() -> None:
    # scripts/inspect-packages runs this file only for darwin targets.
    assert DARWIN


@pytest.mark.parametrize(("key", "what"), cases)
def test_architecture_and_file_type(images: Images, key: str, what: str) -> None:
    image = macho.read(images(key)[what])
    assert (image.cputype, image.filetype) == (CPUTYPE[PLATFORMS[key]["cpu"]], FILETYPE[what])


@pytest.mark.parametrize(("key", "what"), cases)
def test_minimum_macos(images: Images, key: str, what: str) -> None:
    image = macho.read(images(key)[what])
    # One version command at the stated minimum: LC_BUILD_VERSION for
    # macOS, or for a minimum below 10.14, which that command came with,
    # the older LC_VERSION_MIN_MACOSX (what Apple's linker writes too).
    build, old = image.of("LC_BUILD_VERSION"), image.of("LC_VERSION_MIN_MACOSX")
    minimum = PLATFORMS[key]["macos"]
    if tuple(int(n) for n in minimum.split(".")) >= (10, 14):
        assert old == [] and [(b["platform"], b["minos"]) for b in build] == [("macos", minimum)]
    else:
        assert build == [] and [v["version"] for v in old] == [minimum]


@pytest.mark.parametrize(("key", "what"), cases)
def test_links_only_the_system(images: Images, key: str, what: str) -> None:
    image = macho.read(images(key)[what])
    linked = {macho.dylib_name(c) for c in image.of("LC_LOAD_DYLIB")}
    assert "/usr/lib/libSystem.B.dylib" in linked
    assert linked <= SYSTEM_LIBRARIES, linked - SYSTEM_LIBRARIES
    # No other way to pull in a library or search a directory.
    kinds = {c["cmd"] for c in image.commands}
    assert kinds & {"LC_LOAD_WEAK_DYLIB", "LC_REEXPORT_DYLIB", "LC_RPATH", "LC_DYLD_ENVIRONMENT"} == set()
    if FILETYPE[what] == "EXECUTE":
        assert [c["name"] for c in image.of("LC_LOAD_DYLINKER")] == ["/usr/lib/dyld (offset 12)"]


@pytest.mark.parametrize(("key", "what"), cases)
def test_no_build_path_in_any_load_command(images: Images, key: str, what: str) -> None:
    path = images(key)[what]
    image = macho.read(path)
    allowed = SYSTEM_LIBRARIES | {"/usr/lib/dyld"}
    if what == "npm addon":
        # The addon's install name: its packaged name, not where it was
        # linked (bindings/node/build.rs).
        [ident] = image.of("LC_ID_DYLIB")
        assert macho.dylib_name(ident) == "@rpath/dsh-search.node"
        allowed.add("@rpath/dsh-search.node")
    if what == "wheel module":
        [ident] = image.of("LC_ID_DYLIB")
        assert not macho.dylib_name(ident).startswith("/"), ident
        allowed.add(macho.dylib_name(ident))
    paths = {re.sub(r" \(offset \d+\)$", "", v) for c in image.commands if c["cmd"] in PATH_COMMANDS
             for k, v in c.items() if k in ("name", "path")}
    assert paths <= allowed, paths - allowed
    # Nor anywhere in the load commands' bytes: the build's directories.
    data = path.read_bytes()
    ncmds_end = 32 + int.from_bytes(data[20:24], "little")
    for build_dir in {str(REPO), str(pathlib.Path.home()), "/tmp/", "/root/", "/home/"}:
        assert build_dir.encode() not in data[:ncmds_end], build_dir


@pytest.mark.parametrize(("key", "what"), cases)
def test_ad_hoc_signature_valid(images: Images, key: str, what: str) -> None:
    # arm64 macOS runs no unsigned code: the linker's ad-hoc signature must
    # be there and match every page (a change after linking, such as a
    # strip, would break it). x86_64 code runs unsigned, and the linker
    # signs it only when asked, as Apple's does: no signature, or a valid one.
    path = images(key)[what]
    if PLATFORMS[key]["cpu"] == "x64" and macho.read(path).of("LC_CODE_SIGNATURE") == []:
        return
    data = path.read_bytes()
    sig = codesign.verify(data)
    assert sig.flags & codesign.CS_ADHOC, hex(sig.flags)
    assert sig.pages > 0
    main_binary = bool(sig.exec_seg_flags & codesign.CS_EXECSEG_MAIN_BINARY)
    assert main_binary == (FILETYPE[what] == "EXECUTE")


def test_signature_check_sees_a_changed_byte(images: Images) -> None:
    # The check above can fail: a byte of code changed after signing, and
    # the page holding it no longer matches.
    arm = [key for key in DARWIN if PLATFORMS[key]["cpu"] == "arm64"]
    assert arm, "the signature check needs an arm64 image"
    data = bytearray(images(arm[0])["npm binary"].read_bytes())
    sig = codesign.verify(bytes(data))
    at = sig.page_size * (sig.pages // 2) + 100
    data[at] ^= 0xFF
    with pytest.raises(codesign.SignatureError, match=f"page {sig.pages // 2} "):
        codesign.verify(bytes(data))


def exported(path: pathlib.Path) -> set[str]:
    return {line.split()[-1] for line in macho.symbols(path) if " external " in line and "(undefined)" not in line}


def looked_up(path: pathlib.Path) -> dict[str, set[str]]:
    """Where dyld looks up each library's symbols: {library: symbols}."""
    out: dict[str, set[str]] = {}
    for lib, sym in macho.binds(path):
        out.setdefault(lib, set()).add(sym)
    return out


@pytest.mark.parametrize("key", DARWIN)
def test_addon_exports_the_module_and_leaves_n_api_to_node(images: Images, key: str) -> None:
    addon = images(key)["npm addon"]
    assert "_napi_register_module_v1" in exported(addon)
    undefined = {line.split()[-1] for line in macho.symbols(addon) if "(undefined)" in line}
    napi = {s for s in undefined if re.fullmatch(r"_(napi|node_api)_\w+", s)}
    # Each N-API function is found in the process that loads the addon
    # (napi-build's `-undefined dynamic_lookup`): bound in the flat
    # namespace, not to a library named at link time.
    assert len(napi) > 50, napi
    binds = looked_up(addon)
    assert binds.get("flat-namespace") == napi
    assert set(binds) <= {"flat-namespace", "libSystem", "libiconv", "libcharset"}, set(binds)


@pytest.mark.parametrize("key", DARWIN)
def test_wheel_tags_and_module_export(images: Images, key: str) -> None:
    minimum = PLATFORMS[key]["macos"].replace(".", "_")
    arch = {"arm64": "arm64", "x64": "x86_64"}[PLATFORMS[key]["cpu"]]
    tag = f"cp39-abi3-macosx_{minimum}_{arch}"
    assert wheel_of(key).name.endswith(f"-{tag}.whl")
    wheel, _meta = wheel_metadata(key)
    assert re.findall(r"^Tag: (.*)$", wheel, re.M) == [tag]
    module = images(key)["wheel module"]
    assert "_PyInit__native" in exported(module)
    # CPython's functions come from the interpreter that imports it.
    binds = looked_up(module)
    flat = binds.get("flat-namespace", set())
    python = {s for s in flat if re.fullmatch(r"__?Py\w+", s)}
    assert python and flat == python, flat - python
    assert set(binds) <= {"flat-namespace", "libSystem", "libiconv", "libcharset"}, set(binds)


@pytest.mark.parametrize("key", DARWIN)
def test_npm_package_fields(key: str) -> None:
    m = npm_manifest(key)
    p = PLATFORMS[key]
    assert (m["name"], m["os"], m["cpu"], "libc" in m) == (f"@dsh-search/{key}", ["darwin"], [p["cpu"]], False)
    assert f"macOS {p['macos']} or later" in m["description"]
