"""Checks a downloaded file passes before it is renamed into place (run in a worker thread).

A verifier takes the temporary file's path and raises VerifyError when the file is not what
was asked for; the downloader then deletes it and downloads again (a corrupted body), and
gives up after its attempts."""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

Verifier = Callable[[Path], None]


class VerifyError(Exception):
    """The downloaded file is not usable (wrong length, does not decode)."""


def length(expected: int) -> Verifier:
    """The file has exactly `expected` bytes."""

    def check(path: Path) -> None:
        size = path.stat().st_size
        if size != expected:
            raise VerifyError(f"{size:,} bytes where {expected:,} were expected")

    return check


def grib(messages: int | None = None) -> Verifier:
    """Every message is a whole GRIB edition 1 or 2 message whose values decode, back to
    back to the file's end (no stray bytes); with `messages`, exactly that many."""

    def check(path: Path) -> None:
        count, end = _decode_all(path)
        size = path.stat().st_size
        if end != size:
            raise VerifyError(f"GRIB messages end at byte {end:,} of {size:,}")
        if count == 0 or (messages is not None and count != messages):
            raise VerifyError(f"{count} GRIB messages where {messages or 'some'} were expected")

    return check


def _decode_all(path: Path) -> tuple[int, int]:
    """(messages, byte after the last one), decoding every message's values."""
    import eccodes  # imported here: only GRIB sources need it

    count = end = 0
    with open(path, "rb") as handle:
        while True:
            # Framing is checked here, not left to ecCodes, which skips junk between messages.
            head = handle.read(16)
            if not head:
                return count, end
            size = _message_length(head)
            if size is None:
                raise VerifyError(f"no GRIB message at byte {end:,}")
            message = head + handle.read(size - len(head))
            if len(message) < size or not message.endswith(b"7777"):
                raise VerifyError(f"message {count + 1} at byte {end:,} is cut short")
            try:
                handle_id = eccodes.codes_new_from_message(message)
                try:
                    eccodes.codes_get_values(handle_id)
                finally:
                    eccodes.codes_release(handle_id)
            except eccodes.GribInternalError as exc:
                raise VerifyError(f"message {count + 1} at byte {end:,}: {exc}") from None
            count, end = count + 1, end + size


def _message_length(head: bytes) -> int | None:
    """A GRIB message's total length from its indicator section (edition 1 or 2)."""
    if len(head) < 16 or head[:4] != b"GRIB":
        return None
    if head[7] == 2:
        return int.from_bytes(head[8:16], "big")
    if head[7] == 1:
        return int.from_bytes(head[4:7], "big")
    return None


def netcdf() -> Verifier:
    """The file opens as NetCDF (classic or HDF5-based) and lists its variables."""

    def check(path: Path) -> None:
        import netCDF4

        try:
            with netCDF4.Dataset(path) as dataset:
                if not dataset.variables:
                    raise VerifyError("a NetCDF file without variables")
        except OSError as exc:
            raise VerifyError(f"does not open as NetCDF: {exc}") from None

    return check


def zip_archive(member: str) -> Verifier:
    """The file is a zip archive holding `member`, and every member decompresses whole (CRC)."""

    def check(path: Path) -> None:
        try:
            with zipfile.ZipFile(path) as archive:
                if member not in archive.namelist():
                    raise VerifyError(f"the zip archive has no member {member}")
                broken = archive.testzip()
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise VerifyError(f"not a whole zip archive ({exc})") from None
        if broken is not None:
            raise VerifyError(f"zip member {broken} fails its CRC check")

    return check


def tsv(fields: tuple[int, int], comment: str | None = None) -> Verifier:
    """Tab-separated UTF-8 text: every line (but blank ones and those starting with `comment`)
    has fields[0] to fields[1] fields, and the last line ends (a cut file's does not)."""

    def check(path: Path) -> None:
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            raise VerifyError("the last line is cut short (no line end)")
        try:
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise VerifyError(f"not UTF-8 ({exc})") from None
        for number, line in enumerate(lines, 1):
            if not line or (comment and line.startswith(comment)):
                continue
            count = line.count("\t") + 1
            if not fields[0] <= count <= fields[1]:
                raise VerifyError(
                    f"line {number} has {count} tab-separated fields, expected "
                    + (f"{fields[0]}" if fields[0] == fields[1] else f"{fields[0]} to {fields[1]}")
                )

    return check


def all_of(*verifiers: Verifier) -> Verifier:
    """Every one of `verifiers`, in order."""

    def check(path: Path) -> None:
        for verifier in verifiers:
            verifier(path)

    return check


def json_document(kind: type = dict) -> Verifier:
    """The file is UTF-8 JSON whose top level is a `kind` (an object by default)."""

    def check(path: Path) -> None:
        import json

        try:
            value = json.loads(path.read_bytes())
        except (UnicodeDecodeError, ValueError) as exc:
            raise VerifyError(f"not valid JSON: {exc}") from None
        if not isinstance(value, kind):
            raise VerifyError(
                f"JSON whose top level is {type(value).__name__}, not {kind.__name__}"
            )

    return check


def xml_document(*roots: str) -> Verifier:
    """The file is well-formed XML whose root element is one of `roots` ({namespace}name);
    any root when none are given."""

    def check(path: Path) -> None:
        import xml.etree.ElementTree as ET

        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as exc:
            raise VerifyError(f"not well-formed XML: {exc}") from None
        if roots and root.tag not in roots:
            raise VerifyError(f"root element {root.tag}, not {' or '.join(roots)}")

    return check


def image(max_bytes: int | None = None) -> Verifier:
    """The file is a whole JPEG, PNG or WebP image (by its signature and, for a JPEG, its
    end-of-image marker: a cut transfer has none), of at most `max_bytes`."""

    def check(path: Path) -> None:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise VerifyError(f"{size:,} bytes, over the limit of {max_bytes:,}")
        with open(path, "rb") as handle:
            head = handle.read(12)
            handle.seek(max(0, size - 2))
            tail = handle.read(2)
        if head[:3] == b"\xff\xd8\xff":
            if tail != b"\xff\xd9":
                raise VerifyError("a JPEG without its end-of-image marker (cut short)")
            return
        if head[:8] == b"\x89PNG\r\n\x1a\n" or (head[:4] == b"RIFF" and head[8:12] == b"WEBP"):
            return
        raise VerifyError("not a JPEG, PNG or WebP image")

    return check
