"""Where embeddings come from: an array in memory, or a `.npy` file read in row chunks.

A `.npy` file in C order is read with plain positioned reads into one chunk-sized buffer at a time,
never memory-mapped as a whole: a memory map would count every page it touched in the process's
resident set, so a 10M x 768 file would look like 30 GB of memory. A Fortran-order file (rare for
embeddings) falls back to a read-only memory map sliced by rows. Nothing here imports torch.
"""

from __future__ import annotations

import os
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from evalcore.embeddings._validation import EmbeddingInputError

#: Floating-point dtypes the monitors accept (any byte order).
ACCEPTED_ITEMSIZES = (2, 4, 8)


class RowSource(Protocol):
    """A (rows x dim) matrix that can be walked in row chunks, each an array or a tensor."""

    @property
    def rows(self) -> int: ...

    @property
    def dim(self) -> int: ...

    def chunks(self, start: int, stop: int, chunk_rows: int) -> Iterator[Any]: ...


#: What numpy's header parser raises on a corrupt header: it runs Python's tokenizer on the header text.
HEADER_ERRORS = (ValueError, OSError, SyntaxError, TypeError, tokenize.TokenError)


def _check_dtype(dtype: np.dtype[Any], where: str) -> None:
    if dtype.hasobject:
        # Its data is a pickle, which runs code when loaded: refused on the header, never unpickled.
        raise EmbeddingInputError(
            f"{where}dtype {dtype}: the file holds pickled Python objects, which are never loaded; "
            "save a float32 or float64 array"
        )
    if dtype.kind != "f" or dtype.itemsize not in ACCEPTED_ITEMSIZES:
        raise EmbeddingInputError(
            f"{where}dtype {dtype}: embeddings must be floating point (float16, float32 or float64)"
        )


def _check_shape(shape: tuple[int, ...], where: str) -> tuple[int, int]:
    if len(shape) != 2:
        raise EmbeddingInputError(f"{where}shape {tuple(shape)}: embeddings must be a 2-d (rows, dim) array")
    rows, dim = int(shape[0]), int(shape[1])
    if rows < 2 or dim < 1:
        raise EmbeddingInputError(f"{where}shape {tuple(shape)}: need at least 2 rows and 1 dimension")
    return rows, dim


@dataclass(frozen=True)
class NpyFile:
    """The header of a `.npy` embedding file, validated; `chunks` reads its rows."""

    path: Path
    rows: int
    dim: int
    dtype: np.dtype[Any]
    fortran_order: bool
    data_offset: int

    @property
    def nbytes(self) -> int:
        return self.rows * self.dim * self.dtype.itemsize

    def chunks(self, start: int, stop: int, chunk_rows: int) -> Iterator[np.ndarray]:
        if self.fortran_order:
            yield from _memmap_chunks(self, start, stop, chunk_rows)
            return
        row_bytes = self.dim * self.dtype.itemsize
        with open(self.path, "rb", buffering=0) as handle:
            for lo in range(start, stop, chunk_rows):
                hi = min(lo + chunk_rows, stop)
                block = np.empty((hi - lo, self.dim), dtype=self.dtype)
                view = block.data.cast("B")
                got = os.preadv(handle.fileno(), [view], self.data_offset + lo * row_bytes)
                if got != view.nbytes:
                    raise EmbeddingInputError(f"{self.path}: truncated: rows {lo}-{hi} are missing")
                yield block


def _memmap_chunks(npy: NpyFile, start: int, stop: int, chunk_rows: int) -> Iterator[np.ndarray]:
    mapped = np.load(npy.path, mmap_mode="r", allow_pickle=False)
    for lo in range(start, stop, chunk_rows):
        yield np.ascontiguousarray(mapped[lo : min(lo + chunk_rows, stop)])


def open_npy(path: str | os.PathLike[str]) -> NpyFile:
    """Read and check a `.npy` file's header: 2-d, floating point, at least 2 rows, not truncated."""
    file = Path(path)
    if not file.is_file():
        raise EmbeddingInputError(f"{path}: no such file")
    with open(file, "rb") as handle:
        try:
            version = np.lib.format.read_magic(handle)
            shape, fortran_order, dtype = _read_header(handle, version)
        except HEADER_ERRORS as exc:
            raise EmbeddingInputError(f"{path}: not a .npy file ({exc})") from exc
        offset = handle.tell()
    where = f"{path}: "
    _check_dtype(dtype, where)
    rows, dim = _check_shape(shape, where)
    npy = NpyFile(file, rows, dim, dtype, bool(fortran_order), offset)
    if file.stat().st_size < offset + npy.nbytes:
        raise EmbeddingInputError(f"{path}: truncated: the header announces {rows} x {dim} {dtype}")
    return npy


def _read_header(handle: Any, version: tuple[int, int]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(handle)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(handle)
    # Version 3.0 (utf-8 field names) has no public reader; numpy's own private one handles all.
    read = getattr(np.lib.format, "_read_array_header")  # noqa: B009
    return read(handle, version)


@dataclass(frozen=True)
class ArraySource:
    """A numpy array (a memmap included) or a torch tensor, sliced by rows."""

    data: Any
    rows: int
    dim: int

    def chunks(self, start: int, stop: int, chunk_rows: int) -> Iterator[Any]:
        for lo in range(start, stop, chunk_rows):
            yield self.data[lo : min(lo + chunk_rows, stop)]


def as_source(embeddings: Any, *, name: str = "embeddings") -> RowSource:
    """A path becomes an `NpyFile`; an array or tensor is checked and wrapped as it is."""
    if isinstance(embeddings, NpyFile | ArraySource):
        return embeddings
    if isinstance(embeddings, str | os.PathLike):
        return open_npy(embeddings)
    if hasattr(embeddings, "detach") and hasattr(embeddings, "is_floating_point"):  # a torch tensor
        if not embeddings.is_floating_point():
            raise EmbeddingInputError(f"{name}: dtype {embeddings.dtype}: embeddings must be floating point")
        rows, dim = _check_shape(tuple(embeddings.shape), f"{name}: ")
        return ArraySource(embeddings.detach(), rows, dim)
    array = np.asarray(embeddings)
    _check_dtype(array.dtype, f"{name}: ")
    rows, dim = _check_shape(array.shape, f"{name}: ")
    return ArraySource(array, rows, dim)
