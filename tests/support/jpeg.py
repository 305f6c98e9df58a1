"""Small, valid baseline JPEGs without an imaging library (Pillow is no dependency): a
grayscale image of flat 8x8 blocks (DC coefficients only), with a comment segment, so that
every frame of a stand-in camera has bytes of its own. ImageMagick decodes them (checked in
tests/pipeline/webcams/test_webcams_fetch.py when it is installed)."""

from __future__ import annotations

import struct

# Annex K's luminance DC table; an AC table of one code, end-of-block ("0"), the only one used.
DC_BITS = bytes([0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
DC_VALUES = bytes(range(12))
AC_BITS = bytes([1] + [0] * 15)
AC_VALUES = bytes([0x00])
QUANT = 16


def _codes(bits: bytes, values: bytes) -> dict[int, tuple[int, int]]:
    """Canonical Huffman codes: value -> (code, length)."""
    codes, code, k = {}, 0, 0
    for length, count in enumerate(bits, start=1):
        for _ in range(count):
            codes[values[k]] = (code, length)
            code, k = code + 1, k + 1
        code <<= 1
    return codes


DC_CODES = _codes(DC_BITS, DC_VALUES)
EOB = _codes(AC_BITS, AC_VALUES)[0]


def _segment(marker: int, payload: bytes) -> bytes:
    return struct.pack(">HH", marker, len(payload) + 2) + payload


def _scan(levels: list[int]) -> bytes:
    """The entropy-coded blocks (DC differences, then end of block), byte-stuffed."""
    bits, count, out, previous = 0, 0, bytearray(), 0

    def put(value: int, length: int) -> None:
        nonlocal bits, count
        bits, count = (bits << length) | (value & ((1 << length) - 1)), count + length
        while count >= 8:
            count -= 8
            byte = (bits >> count) & 0xFF
            out.append(byte)
            if byte == 0xFF:
                out.append(0x00)

    for level in levels:
        dc = round((level - 128) * 8 / QUANT)
        diff, previous = dc - previous, dc
        size = abs(diff).bit_length()
        put(*DC_CODES[size])
        if size:
            put(diff if diff > 0 else diff - 1, size)
        put(*EOB)
    if count:
        put((1 << (8 - count)) - 1, 8 - count)  # pad with ones
    return bytes(out)


def jpeg(width: int = 64, height: int = 48, seed: int = 0, comment: str = "") -> bytes:
    """A width x height grayscale JPEG (multiples of 8) of blocks shaded by `seed`."""
    blocks = [
        (seed * 37 + 29 * x + 17 * y) % 256 for y in range(height // 8) for x in range(width // 8)
    ]
    return (
        b"\xff\xd8"
        + _segment(0xFFE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + (_segment(0xFFFE, comment.encode()) if comment else b"")
        + _segment(0xFFDB, bytes([0]) + bytes([QUANT] * 64))
        + _segment(0xFFC0, struct.pack(">BHHBBBB", 8, height, width, 1, 1, 0x11, 0))
        + _segment(0xFFC4, bytes([0x00]) + DC_BITS + DC_VALUES)
        + _segment(0xFFC4, bytes([0x10]) + AC_BITS + AC_VALUES)
        + _segment(0xFFDA, bytes([1, 1, 0x00, 0, 63, 0]))
        + _scan(blocks)
        + b"\xff\xd9"
    )
