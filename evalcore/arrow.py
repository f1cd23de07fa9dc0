"""Arrow columns as numpy arrays, numpy allocation that suits short-lived file-reading arrays, and
Arrow's compute kernels without `pyarrow.compute`.

Shared by the TREC readers (`evalcore.trec`, `evalcore.retrieval.keys`) and the CSV readers
(`evalcore.csvfiles`).

Importing `pyarrow.compute` builds a Python wrapper, with a parsed docstring, for each of Arrow's few
hundred kernels: a tenth of a second of CPU, a sixth of `eval_fraud`'s whole run on a million scores.
The CSV readers call the few kernels they need through `call_function` (what those wrappers call, and
what `pyarrow.compute.call_function` is), so that `pyarrow.compute` is never imported; neither are the
Array methods that import it (`cast`, `filter`, `take`) called.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import numpy as np
import pyarrow as pa
from pyarrow._compute import CastOptions, SortOptions, TrimOptions, call_function


def _hugepage_switch() -> object:
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    return getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)


@contextmanager
def small_pages() -> Iterator[None]:
    """Allocate numpy arrays on ordinary pages while inside.

    numpy asks the kernel for transparent huge pages for every array over 4 MB. Where THP defrag is
    "madvise" (the Debian and Ubuntu default) such an allocation can stall in direct compaction, and
    did so for a third of the time of a large evaluation here; these arrays live for milliseconds.
    """
    switch = _hugepage_switch()
    if not callable(switch):
        yield
        return
    previous = switch(False)
    try:
        yield
    finally:
        switch(previous)


@cache
def reader_pool() -> pa.MemoryPool:
    """The memory pool the TREC readers parse into and `pooled_empty` allocates from: jemalloc where
    this pyarrow has it, else Arrow's default.

    Arrow's default pool on Linux, mimalloc, spent most of a run's parse in the kernel here: parsing a
    7-million-line run took 0.8-1.1 s of system time out of 2.3 s of CPU, against 0.2 s with jemalloc,
    in a fifth as many page faults (huge pages, whose faults can stall in compaction, as numpy's do;
    see `small_pages`).
    """
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # pragma: no cover - a pyarrow built without jemalloc
        return pa.default_memory_pool()


def pooled_empty(size: int, dtype: type | np.dtype) -> np.ndarray:
    """An uninitialised array allocated from the readers' memory pool (`reader_pool`).

    The pool keeps the pages the CSV reader has just released, so the arrays built right after a read
    reuse pages that are already mapped instead of faulting in fresh ones (twice as fast here).
    """
    kind = np.dtype(dtype)
    buffer = pa.allocate_buffer(max(size, 1) * kind.itemsize, memory_pool=reader_pool())
    return np.frombuffer(buffer, dtype=kind)[:size]


_NUMPY_TYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def to_numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A numeric or boolean Arrow column without nulls as one numpy array.

    Reads the buffers directly: `Array.to_numpy` imports pandas on first use (a quarter of a second)
    and `ChunkedArray.to_numpy` is slow on many chunks.
    """
    chunks = list(column.chunks) if isinstance(column, pa.ChunkedArray) else [column]
    if pa.types.is_boolean(column.type):
        return to_numpy(pa.chunked_array([cast(c, pa.uint8()) for c in chunks], pa.uint8())).astype(bool)
    dtype = _NUMPY_TYPES.get(column.type)
    if dtype is None:
        raise TypeError(f"no numpy type for {column.type}")
    out = pooled_empty(sum(len(c) for c in chunks), dtype)
    at = 0
    for chunk in chunks:
        if chunk.null_count:
            raise ValueError("unexpected null values")
        if len(chunk):
            values = np.frombuffer(chunk.buffers()[1], dtype=dtype)
            out[at : at + len(chunk)] = values[chunk.offset : chunk.offset + len(chunk)]
        at += len(chunk)
    return out


def cast(values: pa.Array | pa.ChunkedArray, to: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """`pyarrow.compute.cast(values, to)`: ArrowInvalid where a value does not convert."""
    return call_function("cast", [values], CastOptions.safe(to))


def binary_length(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Each text value's length in bytes."""
    return to_numpy(call_function("binary_length", [values]))


def utf8_trim(values: pa.Array | pa.ChunkedArray, characters: str) -> pa.Array | pa.ChunkedArray:
    """Each text value without the `characters` at either end."""
    return call_function("utf8_trim", [values], TrimOptions(characters))


def utf8_rtrim(values: pa.Array | pa.ChunkedArray, characters: str) -> pa.Array | pa.ChunkedArray:
    """Each text value without the `characters` at its end."""
    return call_function("utf8_rtrim", [values], TrimOptions(characters))


def dictionary_encode(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    return call_function("dictionary_encode", [values])


def equal(left: pa.Array | pa.ChunkedArray, right: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return to_numpy(call_function("equal", [left, right]))


def keep(values: pa.Array | pa.ChunkedArray, mask: pa.Array) -> pa.Array | pa.ChunkedArray:
    """The values where the boolean `mask` is true (`Array.filter`)."""
    return call_function("filter", [values, mask])


def take(values: pa.Array | pa.ChunkedArray, indices: pa.Array) -> pa.Array | pa.ChunkedArray:
    return call_function("take", [values, indices])


def sort_indices(table: pa.Table, sort_keys: list[tuple[str, str]]) -> np.ndarray:
    """The row order of `table` by `sort_keys` ((column, "ascending" | "descending"), ...), stable."""
    return to_numpy(call_function("sort_indices", [table], SortOptions(sort_keys=sort_keys)))


_ARROW_OF_NUMPY = {
    np.dtype(np.int32): pa.int32(),
    np.dtype(np.int64): pa.int64(),
    np.dtype(np.float64): pa.float64(),
}


def from_numpy(array: np.ndarray) -> pa.Array:
    """A numpy bool, int32, int64 or float64 array as an Arrow array over the same bytes.

    `pa.array` would do, but imports pandas (half a second) the first time it sees a numpy array.
    """
    if array.dtype == np.bool_:
        bits = np.packbits(array, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), array.size, [None, pa.py_buffer(bits)])
    contiguous = np.ascontiguousarray(array)
    return pa.Array.from_buffers(
        _ARROW_OF_NUMPY[contiguous.dtype], contiguous.size, [None, pa.py_buffer(contiguous)]
    )


def value_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a numpy int32, int64 or float64 array in order of first appearance, and
    how many times each occurs, through Arrow's hash table: one pass, no sort, no code per element.

    Floats are told apart by their bits: 0.0 and -0.0 are two values here, although they compare equal.
    """
    counted = call_function("value_counts", [from_numpy(values)])
    return to_numpy(counted.field("values")), to_numpy(counted.field("counts"))
