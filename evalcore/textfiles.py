"""Opening the files the readers read: lines decoded strictly, gzip decompressed under a cap, JSON lines parsed
safely; every problem a `FormatError` that names the file and the line.

Document collections may come gzipped (`evalcore.documents`); every other input is read as it is, and a
gzip-compressed one is refused with a reason rather than parsed as bytes. Decompression is capped here
and nowhere else: `text_lines(..., decompress=True)` stops, and raises, as soon as more than
`max_decompressed_bytes` came out of the file, so a small file that expands to gigabytes (a decompression
bomb) costs a read buffer, not its expanded size. A file named `.gz` that is not gzip, or is cut short or
corrupt, is a `FormatError` at the line where reading stopped.

The readers that hand a file to Arrow open it with `arrow_input`: given a path, Arrow decompresses a file
named `.gz`, `.bz2`, `.zst` or `.lz4` by itself, with no cap. Nothing here imports Django.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import IO

import pyarrow as pa

from evalcore.errors import FormatError

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "arrow_input",
    "byte_size",
    "json_object",
    "refuse_gzip",
    "text_lines",
]

PathLike = str | Path

DEFAULT_MAX_DECOMPRESSED_BYTES = 4 << 30
DEFAULT_MAX_LINE_BYTES = 256 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_SURROGATE = re.compile("[\ud800-\udfff]")


def byte_size(count: int) -> str:
    """A size for a message: `900 bytes`, `64 KiB`, `1.5 MiB`, `4 GiB`."""
    if count < 1024:
        return f"{count:,} byte{'s' * (count != 1)}"
    value = count / 1024
    units = ["KiB", "MiB", "GiB", "TiB"]
    while value >= 1024 and len(units) > 1:
        value /= 1024
        units.pop(0)
    return f"{value:.1f} {units[0]}".replace(".0 ", " ")


class _StreamError(Exception):
    """Reading stopped inside the decompressor; `text_lines` adds the line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _CappedGzip(io.RawIOBase):
    """A gzip file's decompressed bytes, refused past `limit`; decompression runs one read at a time."""

    def __init__(self, path: PathLike, limit: int) -> None:
        self._file = gzip.GzipFile(path, "rb")
        self._limit = limit
        self._count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            count = self._file.readinto(buffer)
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            raise _StreamError(f"not a readable gzip file ({exc})") from None
        self._count += count
        if self._count > self._limit:
            raise _StreamError(f"decompresses to more than {byte_size(self._limit)}, the most accepted")
        return count

    def close(self) -> None:
        self._file.close()
        super().close()


_PLAIN_ONLY = "the file is gzip-compressed; decompress it first (only documents may be gzipped)"


def refuse_gzip(path: PathLike, reason: str = _PLAIN_ONLY) -> None:
    """Refuse a gzip-compressed file where only plain text is read."""
    with open(path, "rb") as handle:
        if handle.read(2) == _GZIP_MAGIC:
            raise FormatError(str(path), 1, reason)


def text_lines(
    path: PathLike,
    *,
    decompress: bool = False,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[tuple[int, str]]:
    """(1-based number, line) of every line of a UTF-8 file, with its line ending.

    `decompress`: a file named `.gz` is gunzipped, up to `max_decompressed_bytes`; otherwise a gzip file is
    refused. Raises `FormatError` at the line of a decoding error, of a line over `max_line_bytes`, or where
    decompression failed or passed the cap.
    """
    name = str(path)
    if decompress and name.endswith(".gz"):
        handle: IO[bytes] = io.BufferedReader(_CappedGzip(path, max_decompressed_bytes), 1 << 16)
    else:
        refuse_gzip(
            path, "the file is gzip-compressed; name it .gz to have it read" if decompress else _PLAIN_ONLY
        )
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below
    number = 0
    with handle:
        try:
            for number, raw in enumerate(iter(partial(handle.readline, max_line_bytes + 1), b""), start=1):
                if len(raw) > max_line_bytes:
                    raise FormatError(name, number, f"a line longer than {byte_size(max_line_bytes)}")
                yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(name, number, f"not UTF-8 text ({exc.reason})") from None
        except _StreamError as exc:
            raise FormatError(name, number + 1, exc.reason) from None


def json_error(exc: json.JSONDecodeError) -> str:
    """The reason of a JSON error in one line of a JSON Lines file, by column: the caller names the file's
    line, so json's own "line 1 column 5" (or "line 2 column 1" at the line's newline) would name a second,
    wrong one.

    >>> try:
    ...     json.loads('{"a": 1')
    ... except json.JSONDecodeError as exc:
    ...     json_error(exc)
    "invalid JSON: expecting ',' delimiter at the end of the line"
    """
    reason = exc.msg[:1].lower() + exc.msg[1:]
    rest = exc.doc[exc.pos :] if isinstance(exc.doc, str) else ""
    if not rest.strip():
        return f"invalid JSON: {reason} at the end of the line"
    return f"invalid JSON: {reason} at column {exc.colno}"


def json_object(line: str) -> dict[str, object]:
    """One JSON Lines record; ValueError with the reason for anything but an object, including one nested
    deeper than Python's parser goes, or a field that is not text (an unpaired surrogate escape)."""
    try:
        record = json.loads(line)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ValueError(json_error(exc)) from None
    if not isinstance(record, dict):
        raise ValueError("each line must be a JSON object")
    if "\\ud" in line or "\\uD" in line:  # only an escape can make an unpaired surrogate
        for name, value in record.items():
            if isinstance(value, str) and _SURROGATE.search(value):
                raise ValueError(f'"{name}" holds an unpaired surrogate escape, which is not text')
    return record


def arrow_input(path: PathLike) -> pa.NativeFile:
    """The file for Arrow's readers, as it is: never decompressed because of its name."""
    return pa.input_stream(str(path), compression=None)
