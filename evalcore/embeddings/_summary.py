"""Mergeable sufficient statistics of an embedding snapshot, accumulated over row chunks.

One pass over the rows (in chunks of bounded size, from memory or from a `.npy` file) keeps:

- the count, the mean and the centred scatter matrix `sum (x - mean)(x - mean)^T`, in float64, merged
  chunk by chunk with Chan, Golub and LeVeque's pairwise update (no `sum x x^T - n mean mean^T`
  cancellation when the mean is large next to the spread);
- the sum of the unit vectors `x / |x|` and of their squared norms, for the average cosine;
- a seeded bottom-k sample of rows (see `_sampling`) for the statistics that need rows: uniformity,
  MMD, the per-dimension tests and the domain classifier.

Memory is one chunk plus O(d^2 + k d), whatever the number of rows. Two summaries of disjoint row
ranges of one file merge into the summary of their union (`merge_summaries`): what several workers
compute in parallel and one merges equals the single pass, the sample exactly and the moments up to
float64 rounding.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from evalcore.embeddings._device import Device, resolve_device, to_numpy, to_tensor
from evalcore.embeddings._sampling import bottom_k_range, smallest_keys
from evalcore.embeddings._source import RowSource, as_source
from evalcore.embeddings._validation import EmbeddingInputError, check_count

FloatArray = NDArray[np.float64]
#: Called with the number of rows just processed, after each chunk.
Progress = Callable[[int], None]

_EPS = 1e-12  # as torch.nn.functional.normalize: a zero vector stays zero
DEFAULT_CHUNK_ROWS = 8192
DEFAULT_SAMPLE_SIZE = 10_000


@dataclass(frozen=True, eq=False)
class EmbeddingSummary:
    """Sufficient statistics of a set of embeddings: moments in float64 plus a seeded row sample.

    `scatter` is the centred cross-product matrix, so the covariance is `scatter / (n - 1)`.
    `sample` holds at most `sample_size` rows in key order (a uniform random order), with their
    global row indices in `sample_index`; any prefix of it is a uniform subsample.
    """

    n: int
    mean: FloatArray
    scatter: FloatArray
    unit_sum: FloatArray
    unit_sq_sum: float
    sample: np.ndarray
    sample_index: NDArray[np.int64]
    sample_size: int
    seed: int

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])

    def covariance(self) -> FloatArray:
        """The unbiased covariance (ddof=1), as `numpy.cov(x, rowvar=False)`."""
        if self.n < 2:
            raise EmbeddingInputError("the covariance needs at least 2 rows")
        return self.scatter / (self.n - 1)

    def variances(self) -> FloatArray:
        return np.diag(self.covariance()).copy()

    def merge(self, other: EmbeddingSummary) -> EmbeddingSummary:
        return merge_summaries([self, other])

    # --- storage: plain arrays, so a worker can hand its summary over as an .npz file ---------------

    def to_arrays(self) -> dict[str, Any]:
        return {
            "n": np.array(self.n, dtype=np.int64),
            "mean": self.mean,
            "scatter": self.scatter,
            "unit_sum": self.unit_sum,
            "unit_sq_sum": np.array(self.unit_sq_sum, dtype=np.float64),
            "sample": self.sample,
            "sample_index": self.sample_index,
            "sample_size": np.array(self.sample_size, dtype=np.int64),
            "seed": np.array(self.seed, dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, arrays: Any) -> EmbeddingSummary:
        return cls(
            n=int(arrays["n"]),
            mean=np.asarray(arrays["mean"], dtype=np.float64),
            scatter=np.asarray(arrays["scatter"], dtype=np.float64),
            unit_sum=np.asarray(arrays["unit_sum"], dtype=np.float64),
            unit_sq_sum=float(arrays["unit_sq_sum"]),
            sample=np.asarray(arrays["sample"]),
            sample_index=np.asarray(arrays["sample_index"], dtype=np.int64),
            sample_size=int(arrays["sample_size"]),
            seed=int(arrays["seed"]),
        )

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez(buffer, **self.to_arrays())
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> EmbeddingSummary:
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            return cls.from_arrays(arrays)


class _Moments:
    """Running float64 moments on the device, merged chunk by chunk (Chan et al.)."""

    def __init__(self, dim: int, device: torch.device) -> None:
        self.n = 0
        self.mean = torch.zeros(dim, dtype=torch.float64, device=device)
        self.scatter = torch.zeros((dim, dim), dtype=torch.float64, device=device)
        self.unit_sum = torch.zeros(dim, dtype=torch.float64, device=device)
        self.unit_sq_sum = torch.zeros((), dtype=torch.float64, device=device)

    def add(self, x: torch.Tensor) -> None:
        """Fold in one float64 chunk; `x` is overwritten (centred in place to save a copy)."""
        norms = x.norm(dim=1)
        inverse = 1.0 / norms.clamp_min(_EPS)
        self.unit_sum += inverse @ x
        self.unit_sq_sum += (norms * inverse).square().sum()
        count = x.shape[0]
        chunk_mean = x.mean(dim=0)
        x -= chunk_mean
        chunk_scatter = x.T @ x
        total = self.n + count
        delta = chunk_mean - self.mean
        self.scatter += chunk_scatter
        self.scatter += torch.outer(delta, delta) * (self.n * count / total)
        self.mean += delta * (count / total)
        self.n = total


def summarize(
    embeddings: Any,
    *,
    start: int = 0,
    stop: int | None = None,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    seed: int = 0,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    device: Device = "auto",
    progress: Progress | None = None,
) -> EmbeddingSummary:
    """Summarise rows `start:stop` of `embeddings` (an array, a tensor or a `.npy` path) in one pass.

    Rows are read `chunk_rows` at a time; a non-finite value stops with an error naming its row. The
    sample keys depend on the global row index, so summarising `0:k` and `k:n` and merging gives the
    summary of `0:n`.
    """
    source = as_source(embeddings)
    stop = source.rows if stop is None else stop
    if not 0 <= start < stop <= source.rows:
        raise EmbeddingInputError(f"rows {start}:{stop} are not a non-empty range of 0:{source.rows}")
    check_count(sample_size, name="sample_size", minimum=0)
    check_count(chunk_rows, name="chunk_rows")
    dev = resolve_device(device)
    chosen = bottom_k_range(start, stop, k=sample_size, seed=seed)
    with torch.inference_mode():
        moments, sample = _scan(source, start, stop, chosen, chunk_rows, dev, progress)
    return EmbeddingSummary(
        n=moments.n,
        mean=moments.mean.cpu().numpy(),
        scatter=moments.scatter.cpu().numpy(),
        unit_sum=moments.unit_sum.cpu().numpy(),
        unit_sq_sum=float(moments.unit_sq_sum),
        sample=sample,
        sample_index=chosen,
        sample_size=sample_size,
        seed=seed,
    )


def _sample_dtype(source: RowSource) -> np.dtype[Any]:
    itemsize = getattr(getattr(source, "dtype", None), "itemsize", None)
    if itemsize is None:
        data = getattr(source, "data", None)
        itemsize = data.element_size() if isinstance(data, torch.Tensor) else np.asarray(data).dtype.itemsize
    return np.dtype(np.float64 if itemsize == 8 else np.float32)


def _scan(
    source: RowSource,
    start: int,
    stop: int,
    chosen: NDArray[np.int64],
    chunk_rows: int,
    device: torch.device,
    progress: Progress | None,
) -> tuple[_Moments, np.ndarray]:
    moments = _Moments(source.dim, device)
    sample = np.empty((chosen.size, source.dim), dtype=_sample_dtype(source))
    # Rows in file order with the slot (key order) each one goes to.
    by_row = np.argsort(chosen, kind="stable")
    rows_sorted = chosen[by_row]
    lo = start
    for block in source.chunks(start, stop, chunk_rows):
        hi = lo + block.shape[0]
        x = to_tensor(block, device, torch.float64, copy=True)  # centred in place below
        _check_finite(x, lo)
        first, last = np.searchsorted(rows_sorted, [lo, hi])
        if last > first:
            sample[by_row[first:last]] = to_numpy(block[rows_sorted[first:last] - lo], sample.dtype)
        moments.add(x)
        del x
        if progress is not None:
            progress(hi - lo)
        lo = hi
    return moments, sample


def _check_finite(x: torch.Tensor, first_row: int) -> None:
    # A NaN or an infinity anywhere makes the sum non-finite: one reduction instead of a mask pass.
    if bool(torch.isfinite(x.sum())):
        return
    bad = torch.nonzero(~torch.isfinite(x).all(dim=1))
    if bad.numel():
        raise EmbeddingInputError(f"row {first_row + int(bad[0, 0])} contains NaN or infinite values")
    raise EmbeddingInputError(f"rows from {first_row} on are too large to sum in float64")


def merge_summaries(summaries: Sequence[EmbeddingSummary]) -> EmbeddingSummary:
    """The summary of the union of disjoint row ranges, from the summaries of the ranges."""
    if not summaries:
        raise EmbeddingInputError("nothing to merge")
    first = summaries[0]
    for other in summaries[1:]:
        if other.dim != first.dim:
            raise EmbeddingInputError(f"cannot merge summaries of dimension {first.dim} and {other.dim}")
        if (other.seed, other.sample_size) != (first.seed, first.sample_size):
            raise EmbeddingInputError("summaries to merge must share the sample seed and size")
    n, mean, scatter = first.n, first.mean.copy(), first.scatter.copy()
    for other in summaries[1:]:
        total = n + other.n
        delta = other.mean - mean
        scatter += other.scatter + np.outer(delta, delta) * (n * other.n / total)
        mean += delta * (other.n / total)
        n = total
    return EmbeddingSummary(
        n=n,
        mean=mean,
        scatter=scatter,
        unit_sum=np.sum([s.unit_sum for s in summaries], axis=0),
        unit_sq_sum=float(np.sum([s.unit_sq_sum for s in summaries])),
        **_merged_sample(summaries),
    )


def _merged_sample(summaries: Sequence[EmbeddingSummary]) -> dict[str, Any]:
    first = summaries[0]
    index = np.concatenate([s.sample_index for s in summaries])
    if np.unique(index).size != index.size:
        raise EmbeddingInputError("the summaries overlap: a row was summarised twice")
    rows = np.concatenate([s.sample for s in summaries])
    chosen = smallest_keys(index, first.seed, first.sample_size)
    order = np.argsort(index, kind="stable")
    take = order[np.searchsorted(index[order], chosen)]
    return {
        "sample": rows[take],
        "sample_index": chosen,
        "sample_size": first.sample_size,
        "seed": first.seed,
    }


def load_summary(path: str | os.PathLike[str]) -> EmbeddingSummary:
    with np.load(path, allow_pickle=False) as arrays:
        return EmbeddingSummary.from_arrays(arrays)


def save_summary(summary: EmbeddingSummary, path: str | os.PathLike[str]) -> None:
    np.savez(path, **summary.to_arrays())
