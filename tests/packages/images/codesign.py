"""An ad-hoc code signature's check for a thin 64-bit Mach-O image, as the
macOS kernel makes it before it runs a page of arm64 code: the image's
`LC_CODE_SIGNATURE` names a SuperBlob at the end of `__LINKEDIT`, whose
CodeDirectory holds one SHA-256 hash per page of the file up to the
signature; every hash must match the page it names.

`rcodesign verify` (the apple-codesign crate) makes the same check but is a
build of several minutes here; this reads the blobs' documented layout
(Apple's `cs_blobs.h`: `CS_SuperBlob`, `CS_CodeDirectory`) and nothing more.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct

MH_MAGIC_64 = 0xFEEDFACF
LC_CODE_SIGNATURE = 0x1D
LC_SEGMENT_64 = 0x19

CSMAGIC_EMBEDDED_SIGNATURE = 0xFADE0CC0
CSMAGIC_CODEDIRECTORY = 0xFADE0C02
CSSLOT_CODEDIRECTORY = 0
CS_HASHTYPE_SHA256 = 2
CS_ADHOC = 0x2
CS_LINKER_SIGNED = 0x20000
CS_EXECSEG_MAIN_BINARY = 0x1


class SignatureError(Exception):
    """The image is not signed, or its signature does not match it."""


@dataclasses.dataclass
class Signature:
    identifier: str
    flags: int
    page_size: int
    pages: int
    code_limit: int
    exec_seg_flags: int


def load_commands(data: bytes) -> list[tuple[int, int, int]]:
    """(cmd, offset, size) of each load command of a thin 64-bit image."""
    if len(data) < 32:
        raise SignatureError("not a Mach-O image: too short")
    magic, _cpu, _sub, _filetype, ncmds, sizeofcmds, _flags, _res = struct.unpack_from("<8I", data, 0)
    if magic != MH_MAGIC_64:
        raise SignatureError(f"not a thin 64-bit Mach-O image (magic {magic:#x})")
    out = []
    off = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<2I", data, off)
        if size < 8 or off + size > 32 + sizeofcmds:
            raise SignatureError(f"load command {cmd:#x} at {off} has a bad size {size}")
        out.append((cmd, off, size))
        off += size
    return out


def verify(data: bytes) -> Signature:
    """The image's ad-hoc signature, checked against every page it covers."""
    commands = load_commands(data)
    sigs = [(off, size) for cmd, off, size in commands if cmd == LC_CODE_SIGNATURE]
    if len(sigs) != 1:
        raise SignatureError(f"{len(sigs)} LC_CODE_SIGNATURE load commands, not 1")
    dataoff, datasize = struct.unpack_from("<2I", data, sigs[0][0] + 8)
    if dataoff + datasize > len(data):
        raise SignatureError(f"the signature ({dataoff}+{datasize}) lies past the end of the file ({len(data)})")
    # __LINKEDIT ends the file and the signature ends __LINKEDIT: nothing
    # after it escapes the hashes.
    linkedit = None
    text = None
    for cmd, off, _size in commands:
        if cmd == LC_SEGMENT_64:
            name = data[off + 8 : off + 24].rstrip(b"\0").decode()
            _vmaddr, _vmsize, fileoff, filesize = struct.unpack_from("<4Q", data, off + 24)
            if name == "__LINKEDIT":
                linkedit = (fileoff, filesize)
            elif name == "__TEXT":
                text = (fileoff, filesize)
    if linkedit is None or text is None:
        raise SignatureError("no __TEXT or __LINKEDIT segment")
    if linkedit[0] + linkedit[1] != len(data):
        raise SignatureError(f"__LINKEDIT ends at {linkedit[0] + linkedit[1]}, the file at {len(data)}")
    if not (linkedit[0] <= dataoff and dataoff + datasize <= linkedit[0] + linkedit[1]):
        raise SignatureError("the signature lies outside __LINKEDIT")

    blob = data[dataoff : dataoff + datasize]
    magic, length, count = struct.unpack_from(">3I", blob, 0)
    if magic != CSMAGIC_EMBEDDED_SIGNATURE:
        raise SignatureError(f"the signature is not an embedded SuperBlob (magic {magic:#x})")
    if length > datasize:
        raise SignatureError(f"the SuperBlob's length {length} exceeds its load command's {datasize}")
    index = [struct.unpack_from(">2I", blob, 12 + 8 * i) for i in range(count)]
    blobs = {}
    for slot, off in index:
        if off + 8 > length:
            raise SignatureError(f"blob {slot} at {off} lies past the SuperBlob")
        bmagic, blen = struct.unpack_from(">2I", blob, off)
        blobs[slot] = (bmagic, blob[off : off + blen])
    if CSSLOT_CODEDIRECTORY not in blobs:
        raise SignatureError("no CodeDirectory")
    cmagic, cd = blobs[CSSLOT_CODEDIRECTORY]
    if cmagic != CSMAGIC_CODEDIRECTORY:
        raise SignatureError(f"the CodeDirectory's magic is {cmagic:#x}")

    (_m, _len, version, flags, hash_offset, ident_offset, n_special, n_code, code_limit) = struct.unpack_from(
        ">9I", cd, 0
    )
    hash_size, hash_type, _platform, page_log2 = struct.unpack_from(">4B", cd, 36)
    if hash_type != CS_HASHTYPE_SHA256 or hash_size != 32:
        raise SignatureError(f"hash type {hash_type} of size {hash_size}, not SHA-256")
    if version >= 0x20300:
        (code_limit64,) = struct.unpack_from(">Q", cd, 56)
        if code_limit64:
            code_limit = code_limit64
    exec_seg_flags = 0
    if version >= 0x20400:
        exec_base, exec_limit, exec_seg_flags = struct.unpack_from(">3Q", cd, 64)
        if (exec_base, exec_limit) != (text[0], text[1]):
            raise SignatureError(f"the executable segment {exec_base}+{exec_limit} is not __TEXT {text}")
    if code_limit != dataoff:
        raise SignatureError(f"the hashes cover {code_limit} bytes, the signature starts at {dataoff}")
    page_size = 1 << page_log2
    if n_code != (code_limit + page_size - 1) // page_size:
        raise SignatureError(f"{n_code} page hashes for {code_limit} bytes of pages of {page_size}")
    for i in range(n_code):
        page = data[i * page_size : min((i + 1) * page_size, code_limit)]
        want = cd[hash_offset + i * hash_size : hash_offset + (i + 1) * hash_size]
        if hashlib.sha256(page).digest() != want:
            raise SignatureError(f"page {i} (offset {i * page_size}) does not match its hash")
    # The special slots (before the page hashes, slot -k for blob k): each
    # present blob's hash, or zeros where there is none.
    for k in range(1, n_special + 1):
        want = cd[hash_offset - k * hash_size : hash_offset - (k - 1) * hash_size]
        if k in blobs:
            if hashlib.sha256(blobs[k][1]).digest() != want:
                raise SignatureError(f"special slot -{k} does not match its blob")
        elif want != bytes(hash_size):
            raise SignatureError(f"special slot -{k} has a hash but no blob")
    identifier = cd[ident_offset : cd.index(b"\0", ident_offset)].decode()
    return Signature(identifier, flags, page_size, n_code, code_limit, exec_seg_flags)
