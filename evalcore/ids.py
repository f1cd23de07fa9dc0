"""Query and document ids that TREC's whitespace-separated files can hold: not empty, and no whitespace.

A qrels build is written as `qid 0 docno rel` lines, so an id with a space, a tab or a line break in it,
or an empty one, could be imported but never exported (`evalcore.judging.check_trec_safe`). The readers
refuse such ids where they read them, naming the line. Whitespace is what `str.isspace` says it is
(Unicode's, `\\x1c`-`\\x1f` included), the same definition the qrels writer applies.

`id_problem` checks one id; `first_bad_row` checks an Arrow column of ids without a Python object per
row: a minimum and maximum over the column's bytes clear nearly every chunk (no byte at or below the
space, none that could start a multi-byte space), and only the others are matched with a regex.

trec_eval reads ids of any length; a service may bound them (`max_chars`, in characters), and
`first_long_row` finds the first id over the bound, counting bytes first (never fewer than characters).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.arrow import to_numpy

__all__ = ["first_bad_row", "first_long_row", "id_problem", "long_id_problem"]

_WHITESPACE = re.compile(r"\s")  # Python's \s is str.isspace
# The same characters for Arrow's RE2, whose \s is ASCII only.
_WHITESPACE_RE2 = (
    r"[\t-\r\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
)
_NOT_TEXT = re.compile("[\ud800-\udfff]")  # undecodable bytes kept by surrogateescape, or a lone JSON escape
_LOWEST_MULTIBYTE_SPACE_LEAD = 0xC2  # U+0085 and U+00A0; the others start with 0xE1-0xE3


def id_problem(value: str, what: str) -> str | None:
    """Why `value` cannot be a TREC id (`what`: "query id", "document id"), or None."""
    if not value:
        return f"empty {what}"
    if _WHITESPACE.search(value):
        return f"{what} {value!r} contains whitespace; TREC ids cannot"
    if _NOT_TEXT.search(value):
        return f"{what} {value!r} is not UTF-8 text"
    return None


def long_id_problem(value: str, what: str, max_chars: int | None) -> str | None:
    """Why `value` is too long to be an id under a bound of `max_chars` characters, or None."""
    if max_chars is None or len(value) <= max_chars:
        return None
    return f"{what} {value[:40]!r}... is {len(value):,} characters long, more than the {max_chars:,} an id may have"


def first_long_row(ids: pa.ChunkedArray, max_chars: int) -> int | None:
    """The first row of a string or binary column whose id is more than `max_chars` characters, or None."""
    start = 0
    for chunk in ids.chunks:
        if len(chunk):
            over = np.flatnonzero(to_numpy(pc.greater(pc.binary_length(chunk), max_chars)))
            for row in over.tolist():  # bytes: characters are at most as many
                value = chunk[row].as_py()
                text = value.decode("utf-8", errors="surrogateescape") if isinstance(value, bytes) else value
                if len(text) > max_chars:
                    return start + row
        start += len(chunk)
    return None


def first_bad_row(ids: pa.ChunkedArray) -> int | None:
    """The first row of a string or binary column whose id is empty or holds whitespace, or None."""
    start = 0
    for chunk in ids.chunks:
        if len(chunk) and _may_hold_bad_ids(chunk):
            text = chunk.view(pa.large_string() if _is_large(chunk) else pa.string())
            bad = pc.or_(
                pc.equal(pc.binary_length(chunk), 0), pc.match_substring_regex(text, _WHITESPACE_RE2)
            )
            rows = np.flatnonzero(to_numpy(bad))
            if rows.size:
                return start + int(rows[0])
        start += len(chunk)
    return None


def _may_hold_bad_ids(chunk: pa.Array) -> bool:
    offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64 if _is_large(chunk) else np.int32)
    offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
    data = chunk.buffers()[2]
    if data is None or offsets[-1] == offsets[0] or np.diff(offsets).min() == 0:
        return True
    values = np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]]
    return bool(values.min() <= 0x20 or values.max() >= _LOWEST_MULTIBYTE_SPACE_LEAD)


def _is_large(chunk: pa.Array) -> bool:
    return pa.types.is_large_binary(chunk.type) or pa.types.is_large_string(chunk.type)
