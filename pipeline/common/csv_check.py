"""What is wrong, and where, in a CSV file that polars could not read: its messages name no
line ("found more fields than defined in 'Schema'", "invalid utf-8 sequence")."""

from __future__ import annotations

import codecs
import csv
import re
from pathlib import Path

CHUNK = 1 << 20
LONE_CR = re.compile(r"\r(?!\n)")


def problem(path: Path) -> str | None:
    """'line N: what' for the first fault found (bytes that are not UTF-8, a record with more
    fields than the header, broken quoting), or None when none of these is found."""
    return _not_utf8(path) or _bad_record(path)


def _not_utf8(path: Path) -> str | None:
    """Where the first byte that is not UTF-8 is, read in chunks (a file may be large)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, lines = 0, 1
    with path.open("rb") as handle:
        while True:
            chunk = handle.read(CHUNK)
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                # The decoder may hold back up to 3 bytes of the chunk before: where exc.start
                # counts from (its object) is not the chunk, so look the bad byte up in both.
                held = len(exc.object) - len(chunk)
                at = offset - held + exc.start
                lines += exc.object[: exc.start].count(b"\n") - (exc.object[:held].count(b"\n"))
                return (
                    f"line {lines}: the byte at offset {at} (0x{exc.object[exc.start]:02x}) "
                    "is not UTF-8; save the file as UTF-8"
                )
            if not chunk:
                return None
            offset += len(chunk)
            lines += chunk.count(b"\n")


def _bad_record(path: Path) -> str | None:
    """The first record with more fields than the header, or with broken quoting."""
    last: list[str] = [""]

    def remembered(handle):
        for line in handle:
            # polars ends records at \n only: a lone \r is in a field, not a line end
            last[0] = LONE_CR.sub(" ", line)
            yield last[0]

    with path.open(newline="\n", encoding="utf-8") as handle:
        reader = csv.reader(remembered(handle), strict=True)
        start, width = 1, None
        try:
            for record in reader:
                if width is None:
                    width = len(record)
                elif len(record) > width:
                    return f"line {start}: {len(record)} fields where the header has {width}"
                if reader.line_num == start and _bare_quote(last[0]):
                    return (
                        f"line {start}: a quote inside a field that does not start with "
                        "one (quote the whole field and double the quotes in it)"
                    )
                start = reader.line_num + 1
        except csv.Error as exc:
            return f"line {start}: {_quoting(str(exc), start, reader.line_num)}"
    return None


def _quoting(error: str, start: int, reached: int) -> str:
    """The csv module's error, in words that say what to fix, for a record from line `start`
    that was read up to line `reached`."""
    if "end of data" in error:
        return "a quoted field is not closed before the end of the file"
    if reached > start:
        return f"a quoted field runs on to line {reached} (a quote is missing or not doubled)"
    if "expected after" in error:
        return "text after the closing quote of a field (double the quotes inside a quoted field)"
    return error


def _bare_quote(line: str) -> bool:
    """True when a field of this one-line record has a quote but does not start with one."""
    state = "start"  # start | plain | quoted | closed
    for char in line:
        if state == "quoted":
            state = "closed" if char == '"' else "quoted"
        elif char == ",":
            state = "start"
        elif char == '"':
            if state == "plain":
                return True
            state = "quoted"  # an opening quote, or the second of a doubled one
        elif state == "start":
            state = "plain"
    return False
