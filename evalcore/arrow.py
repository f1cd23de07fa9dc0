"""Arrow columns as numpy arrays, and numpy allocation that suits short-lived file-reading arrays.

Shared by the TREC readers (`evalcore.trec`, `evalcore.retrieval.keys`) and the CSV readers
(`evalcore.csvfiles`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


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
        return to_numpy(pa.chunked_array([pc.cast(c, pa.uint8()) for c in chunks], pa.uint8())).astype(bool)
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
