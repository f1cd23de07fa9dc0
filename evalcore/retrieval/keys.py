"""Document ids as Arrow binary columns, and the 64-bit keys and hashes that stand in for them.

When no document id is longer than 8 bytes, a key is the id's bytes (zero-padded) times an odd
constant: a bijection, so equal keys mean equal ids, and `ordered_keys` undoes it into numbers that
sort as the ids do byte by byte (trec_eval's `strcmp`). Otherwise every key is a hash of the id's
length and its own 8-byte words (`_hashed_chunk_keys`); every match found through a hashed key is confirmed on the bytes, so
a collision costs time, never correctness.

Keying costs time and memory in proportion to the ids' total bytes: each id is read in place, a word
at a time, never padded to the longest id (which made one 100 KB id in a 150,000-row qrels ask for
110 GiB). The work runs a block of rows at a time, so that temporaries stay in cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.arrow import pooled_empty, to_numpy

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_MIX1 = _U64(0xBF58476D1CE4E5B9)
_MIX2 = _U64(0x94D049BB133111EB)


# --- document ids ----------------------------------------------------------------------------------


def as_binary_chunks(values: pa.Array | pa.ChunkedArray | Sequence[str] | np.ndarray) -> pa.ChunkedArray:
    """Document ids as a chunked Arrow binary array (zero-copy for Arrow string or binary input)."""
    if isinstance(values, pa.ChunkedArray):
        chunks = list(values.chunks)
    elif isinstance(values, pa.Array):
        chunks = [values]
    else:
        chunks = [pa.array([str(v) for v in values], type=pa.string())]
    out: list[pa.Array] = []
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary_decode()
        if pa.types.is_string(chunk.type):
            chunk = chunk.view(pa.binary())
        elif pa.types.is_large_string(chunk.type):
            chunk = chunk.view(pa.large_binary())
        elif not (pa.types.is_binary(chunk.type) or pa.types.is_large_binary(chunk.type)):
            raise TypeError(f"document ids must be strings, not {chunk.type}")
        if chunk.null_count:
            raise ValueError("document ids must not be null")
        out.append(chunk)
    if not out:
        return pa.chunked_array([], type=pa.binary())
    if len({c.type for c in out}) > 1:
        out = [c.cast(pa.large_binary()) for c in out]
    return pa.chunked_array(out)


def _offsets(chunk: pa.Array) -> np.ndarray:
    dtype = np.int64 if pa.types.is_large_binary(chunk.type) else np.int32
    raw = np.frombuffer(chunk.buffers()[1], dtype=dtype)
    return raw[chunk.offset : chunk.offset + len(chunk) + 1].astype(np.int64)


def _data(chunk: pa.Array) -> np.ndarray:
    buf = chunk.buffers()[2]
    return np.zeros(0, dtype=np.uint8) if buf is None else np.frombuffer(buf, dtype=np.uint8)


def docno_lengths(docnos: pa.ChunkedArray) -> np.ndarray:
    """Byte length of every document id."""
    parts = [np.diff(_offsets(c)) for c in docnos.chunks if len(c)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def exact_keys(docnos: pa.ChunkedArray) -> bool:
    """Whether every document id fits in one 8-byte word, so that its key is exact rather than a hash."""
    return all(int(np.diff(_offsets(c)).max()) <= 8 for c in docnos.chunks if len(c))


# The low `n` bytes of a little-endian word, for n = 0..8.
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)


class _Words:
    """The ids of one chunk, read as little-endian 8-byte words in place, at any byte offset.

    `word(j)` is the j-th word of each id given, with the bytes past the id's end zeroed.
    """

    def __init__(self, chunk: pa.Array) -> None:
        self.chunk = chunk
        offsets = _offsets(chunk)
        self.starts = offsets[:-1] - offsets[0]
        self.lengths = np.diff(offsets)

    @cached_property
    def _view(self) -> np.ndarray:
        # A copy of the chunk's bytes with 8 zero bytes after them, so that a word read at any id's
        # start stays inside the buffer; its uint64 view steps one byte at a time (unaligned reads).
        offsets = _offsets(self.chunk)
        padded = np.zeros(int(offsets[-1] - offsets[0]) + 8, dtype=np.uint8)
        padded[:-8] = _data(self.chunk)[offsets[0] : offsets[-1]]
        return np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded.data, strides=(1,))

    def padded(self, width: int) -> np.ndarray | None:
        """The ids zero-padded to `width` bytes, as an (n, width / 8) word matrix, padded by Arrow in C++;
        None where that does not work (Arrow pads characters, so a non-ASCII id comes out longer)."""
        chunk = self.chunk
        as_text = chunk.view(pa.large_string() if pa.types.is_large_binary(chunk.type) else pa.string())
        try:
            padded = pc.utf8_rpad(as_text, width=width, padding="\0")
        except pa.ArrowException:
            return None
        offsets = _offsets(padded)
        if offsets[-1] - offsets[0] != len(chunk) * width:
            return None
        return _data(padded)[offsets[0] : offsets[-1]].view("<u8").reshape(len(chunk), width // 8)

    def word(self, j: int, starts: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
        """Word `j` of the ids that start at `starts` (each longer than 8 * j bytes); with their
        `lengths`, the bytes past each id's end are zeroed (without, every word must be whole)."""
        return self.word_at(starts + 8 * j, None if lengths is None else lengths - 8 * j)

    def word_at(self, at: np.ndarray, left: np.ndarray | None) -> np.ndarray:
        """The words at byte offsets `at`, each cut to the `left` bytes left in its id."""
        words = self._view[at].astype(np.uint64, copy=False)
        if left is not None:
            words &= _LOW_BYTES[np.minimum(left, 8)]
        return words


def _exact_chunk_keys(words: _Words, out: np.ndarray) -> None:
    np.multiply(words.word(0, words.starts, words.lengths), _KEY_MIX, out=out)


# A hashed key chains the id's first `_CHAINED` words; the words after those, mixed with their place,
# are summed, which takes whole arrays instead of one Python step per word of the longest id.
_CHAINED = 4
_PLACE = _U64(0xD6E8FEB86659FD93)


def _hashed_chunk_keys(words: _Words, out: np.ndarray) -> None:
    """A hash of each id's length and words: chained over its first words, summed over the rest.

    Each round of the chain takes only the ids long enough for it; the rest of the longer ids' words
    are gathered into one flat array. Either way the work is the ids' total words, never rows times the
    longest id.
    """
    starts, lengths = words.starts, words.lengths
    counts = np.maximum(1, -(-lengths // 8))  # words per id; an empty id has one, of zeros
    hashes = lengths.astype(np.uint64) * _PLACE  # the length first: `a` and `a\0` pad alike
    common = int(counts.min())
    most = int(counts.max())
    packed = words.padded(8 * most) if most <= _CHAINED else None
    if packed is not None:  # short ids (the usual case): padded in C++, no gathers
        for j in range(most):
            mixed = splitmix(hashes ^ packed[:, j])
            hashes = mixed if j < common else np.where(counts > j, mixed, hashes)
        out[:] = hashes
        return
    rows = np.flatnonzero(counts > common)  # the ids with words past the ones every id has
    for j in range(min(_CHAINED, most)):
        if j < common:  # every id: no gathers; before the last common word, no id ends in its word
            hashes = splitmix(hashes ^ words.word(j, starts, None if j < common - 1 else lengths))
            continue
        rows = rows[counts[rows] > j]
        hashes[rows] = splitmix(hashes[rows] ^ words.word(j, starts[rows], lengths[rows]))
    longer = np.flatnonzero(counts > _CHAINED)
    if len(longer):
        extra = counts[longer] - _CHAINED
        first = np.concatenate([[0], np.cumsum(extra)[:-1]])
        # Each tail word's index in its id.
        place = np.arange(int(extra.sum())) - np.repeat(first, extra) + _CHAINED
        tail = words.word_at(
            np.repeat(starts[longer], extra) + 8 * place, np.repeat(lengths[longer], extra) - 8 * place
        )
        mixed = splitmix(tail ^ (place.astype(np.uint64) * _PLACE))
        hashes[longer] = splitmix(hashes[longer] ^ np.add.reduceat(mixed, first))
    out[:] = hashes


def splitmix(x: np.ndarray) -> np.ndarray:
    z = x + _GOLDEN
    z ^= z >> _U64(30)
    z *= _MIX1
    z ^= z >> _U64(27)
    z *= _MIX2
    z ^= z >> _U64(31)
    return z


# Keys are the packed bytes times an odd constant: a bijection, so equal keys still mean equal ids,
# and the multiplication spreads every byte into the top bits that the hash tables bucket on.
_KEY_MIX = _U64(0x9E3779B97F4A7C15)
_KEY_UNMIX = _U64(0xF1DE83E19937733D)  # its inverse modulo 2**64


def query_salts(size: int, seed: int = 0) -> np.ndarray:
    """A pseudo-random 64-bit salt per query code; a (query, document) hash is key ^ salt."""
    return splitmix(np.arange(size, dtype=np.uint64) + _U64((seed * 0x632BE59BD9B4E019) % (1 << 64)))


BLOCK = 1 << 16


def iter_pair_hashes(
    doc_keys: np.ndarray, codes: np.ndarray, salts: np.ndarray
) -> Iterator[tuple[int, np.ndarray]]:
    """(start, hashes) a block of rows at a time: each row's document key xor its query's salt.

    Blocks keep the temporaries in cache, which on millions of rows is twice as fast as whole arrays.
    """
    for lo in range(0, len(doc_keys), BLOCK):
        hashes = np.take(salts, codes[lo : lo + BLOCK])
        hashes ^= doc_keys[lo : lo + BLOCK]
        yield lo, hashes


def pair_hashes(doc_keys: np.ndarray, codes: np.ndarray, salts: np.ndarray) -> np.ndarray:
    """Every row's (query, document) hash (see `iter_pair_hashes`)."""
    out = pooled_empty(len(doc_keys), np.uint64)
    for lo, hashes in iter_pair_hashes(doc_keys, codes, salts):
        out[lo : lo + len(hashes)] = hashes
    return out


def docno_keys(docnos: pa.ChunkedArray, *, exact: bool) -> np.ndarray:
    """One uint64 key per id, a block of rows at a time so that temporaries stay in cache.

    With `exact` a key is the id itself (mixed by a bijection), so equal keys mean equal ids and
    `ordered_keys` recovers the ids' byte order; every id must then fit in 8 bytes. Otherwise a key is
    a hash of the id, the same whatever the other ids are.
    """
    keys = pooled_empty(len(docnos), np.uint64)
    at = 0
    for chunk in docnos.chunks:
        for lo in range(0, len(chunk), BLOCK):
            words = _Words(chunk.slice(lo, BLOCK))
            (_exact_chunk_keys if exact else _hashed_chunk_keys)(words, keys[at : at + len(words.starts)])
            at += len(words.starts)
    return keys


def ordered_keys(keys: np.ndarray) -> np.ndarray:
    """Exact keys as numbers whose order is the ids' byte order (trec_eval's strcmp).

    Unmixed, a key is the id's bytes read little-endian; swapped, its first byte is the most significant.
    """
    return (keys * _KEY_UNMIX).byteswap()


def decode(values: Iterable[bytes]) -> list[str]:
    return [v.decode("utf-8", errors="surrogateescape") for v in values]


# --- duplicate detection ---------------------------------------------------------------------------


def _exact_duplicate_rows(
    codes: np.ndarray, doc_keys: np.ndarray, docnos: pa.ChunkedArray, rows: np.ndarray, exact: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Among candidate `rows`, the later occurrences of a (code, id) pair and, for each, its first row."""
    if exact:
        order = np.lexsort((rows, doc_keys[rows], codes[rows]))  # groups equal pairs; any order will do
        r = rows[order]
        same = (codes[r][1:] == codes[r][:-1]) & (doc_keys[r][1:] == doc_keys[r][:-1])
    else:
        table = pa.table({"c": codes[rows], "d": docnos.take(pa.array(rows)), "r": rows})
        order = pc.sort_indices(table, sort_keys=[("c", "ascending"), ("d", "ascending"), ("r", "ascending")])
        order = to_numpy(order)
        r = rows[order]
        d = table.column("d").take(pa.array(order))
        same = (codes[r][1:] == codes[r][:-1]) & to_numpy(pc.equal(d[1:], d[:-1]))
    later = np.flatnonzero(same) + 1
    if not later.size:
        return later, later
    # The first row of each run of equal pairs.
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    first = r[starts[np.searchsorted(starts, later, side="right") - 1]]
    return r[later], first


def find_duplicates(
    codes: np.ndarray, docnos: pa.ChunkedArray, doc_keys: np.ndarray, salts: np.ndarray, exact: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Rows that repeat an earlier (query code, document id) pair, and the earlier row of each."""
    empty = np.zeros(0, dtype=np.int64)
    if len(codes) < 2:
        return empty, empty
    ordered = pair_hashes(doc_keys, codes, salts)
    ordered.sort()
    clash = ordered[1:] == ordered[:-1]
    if not clash.any():
        return empty, empty
    clashing = np.unique(ordered[1:][clash])
    del ordered
    candidates = np.flatnonzero(np.isin(pair_hashes(doc_keys, codes, salts), clashing))
    later, first = _exact_duplicate_rows(codes, doc_keys, docnos, candidates, exact)
    order = np.argsort(later, kind="stable")
    return later[order], first[order]
