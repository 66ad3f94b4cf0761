"""Writers for the archive formats Python cannot write, for fixtures: RAR 4.x (stored members) and unix `compress`.

- `rar_bytes`: a RAR 4.x archive (marker block, archive header, one file header per member with method 0x30,
  "store", then the end-of-archive block); header CRCs are the low 16 bits of the header's CRC32, data CRCs the
  member's CRC32. Members may be files, folders (a name ending "/"), symbolic links (`links`) or entries of any
  other unix mode (`modes`: a fifo, a device file).
- `compress_bytes`: unix `compress` (LZW, .Z) output as compress(1) writes it: the 1f 9d header with block mode
  and 16 bits, 9-bit codes growing to 16, each width change padding the output to a whole group of eight codes.
"""

from __future__ import annotations

import struct
import zlib

RAR_MARKER = b"Rar!\x1a\x07\x00"
DOS_TIME = (((2000 - 1980) << 9 | 1 << 5 | 1) << 16) | (12 << 11)  # 2000-01-01 12:00
UNIX_HOST = 3
S_IFREG, S_IFDIR, S_IFLNK = 0o100644, 0o040755, 0o120777


def _rar_block(head_type: int, flags: int, body: bytes) -> bytes:
    """A RAR 4.x block header: CRC16 (low half of the CRC32 of what follows it), type, flags, size, body."""
    rest = struct.pack("<BHH", head_type, flags, 7 + len(body)) + body
    return struct.pack("<H", zlib.crc32(rest) & 0xFFFF) + rest


def _rar_file(name: str, data: bytes, mode: int) -> bytes:
    encoded = name.encode()
    flags = 0x8000 | (0x00E0 if mode == S_IFDIR else 0)  # LONG_BLOCK (data follows); directory dictionary bits
    body = struct.pack("<IIBIIBBHI", len(data), len(data), UNIX_HOST, zlib.crc32(data), DOS_TIME, 20, 0x30,
                       len(encoded), mode)  # fmt: skip
    return _rar_block(0x74, flags, body + encoded) + data


def rar_bytes(
    members: dict[str, bytes], links: dict[str, str] | None = None, modes: dict[str, int] | None = None
) -> bytes:
    """A RAR 4.x archive of stored `members` (name -> bytes; a name ending "/" is a folder), symbolic `links`
    (name -> target) and empty entries of other unix `modes` (name -> mode, e.g. 0o010644 a fifo)."""
    blocks = [RAR_MARKER, _rar_block(0x73, 0, b"\x00" * 6)]
    for name, data in members.items():
        folder = name.endswith("/")
        blocks.append(_rar_file(name.rstrip("/"), b"" if folder else data, S_IFDIR if folder else S_IFREG))
    for name, target in (links or {}).items():
        blocks.append(_rar_file(name, target.encode(), S_IFLNK))
    for name, mode in (modes or {}).items():
        blocks.append(_rar_file(name, b"", mode))
    blocks.append(_rar_block(0x7B, 0x4000, b""))
    return b"".join(blocks)


def libarchive_missing() -> str:
    """Why the RAR and .Z readers cannot run here ("" when libarchive-c and the shared library load)."""
    from lifelong.data.fetch import archives_libarchive

    try:
        archives_libarchive.libarchive()
    except archives_libarchive.MissingLibarchive as exc:
        return str(exc)
    return ""


class _Bits:
    """Codes packed least significant bit first, as compress(1) writes them."""

    def __init__(self) -> None:
        self.value, self.count, self.out = 0, 0, bytearray()

    def write(self, code: int, width: int) -> None:
        self.value |= code << self.count
        self.count += width
        while self.count >= 8:
            self.out.append(self.value & 0xFF)
            self.value >>= 8
            self.count -= 8

    def finish(self) -> bytes:
        if self.count:
            self.out.append(self.value & 0xFF)
        return bytes(self.out)


def compress_bytes(data: bytes, max_bits: int = 16) -> bytes:
    """`data` as unix `compress -b max_bits` would write it (block mode; no CLEAR codes are ever needed)."""
    header = bytes([0x1F, 0x9D, 0x80 | max_bits])
    if not data:
        return header
    bits = _Bits()
    width, free, limit = 9, 257, 1 << max_bits
    in_group = 0  # codes written at this width: a width change pads to a whole group of 8

    def output(code: int) -> None:
        nonlocal width, in_group
        bits.write(code, width)
        in_group += 1
        if free > (limit if width == max_bits else (1 << width) - 1):  # the next code needs another bit
            for _ in range(-in_group % 8):
                bits.write(0, width)
            width, in_group = width + 1, 0

    table: dict[tuple[int, int], int] = {}
    current = data[0]
    for byte in data[1:]:
        if (current, byte) in table:
            current = table[(current, byte)]
            continue
        output(current)
        if free < limit:
            table[(current, byte)] = free
            free += 1
        current = byte
    output(current)
    return header + bits.finish()
