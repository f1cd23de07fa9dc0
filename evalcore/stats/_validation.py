"""Input checks shared by the statistics modules.

Every public function validates first, then computes on plain float64 arrays,
so the kernels never see lists, NaNs or mismatched pairs.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.errors import EvalCoreError

FloatArray: TypeAlias = NDArray[np.float64]
IntArray: TypeAlias = NDArray[np.int64]
BoolArray: TypeAlias = NDArray[np.bool_]

# Upper bound on the elements of one resampling batch (an index or sign
# matrix plus the gathered values): 2**22 float64s are 32 MiB per array.
MAX_BATCH_ELEMENTS = 2**22


class StatsInputError(EvalCoreError, ValueError):
    """Input that a statistic cannot be computed from: empty, non-finite, mismatched, out of range."""


def as_scores(scores: ArrayLike, *, name: str = "scores", min_size: int = 1) -> FloatArray:
    """Return ``scores`` as a finite 1-D float64 array of at least ``min_size`` values."""
    array = np.asarray(scores, dtype=np.float64)
    if array.ndim != 1:
        raise StatsInputError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.size < min_size:
        raise StatsInputError(f"{name} needs at least {min_size} value(s), got {array.size}")
    if not np.isfinite(array).all():
        raise StatsInputError(f"{name} contains NaN or infinite values")
    return array


def as_differences(a: ArrayLike, b: ArrayLike, *, min_size: int = 1) -> FloatArray:
    """Return the per-query differences ``a - b`` of two aligned score arrays."""
    first = as_scores(a, name="a", min_size=min_size)
    second = as_scores(b, name="b", min_size=min_size)
    if first.shape != second.shape:
        raise StatsInputError(
            f"paired scores must be aligned: a has {first.size} values, b has {second.size}"
        )
    return first - second


def check_probability(value: float, *, name: str) -> float:
    """Return ``value`` if it lies strictly between 0 and 1."""
    if not 0.0 < value < 1.0:
        raise StatsInputError(f"{name} must be strictly between 0 and 1, got {value!r}")
    return float(value)


def check_positive(value: float, *, name: str) -> float:
    """Return ``value`` if it is a finite number above zero."""
    if not (np.isfinite(value) and value > 0):
        raise StatsInputError(f"{name} must be a finite number above zero, got {value!r}")
    return float(value)


def check_count(value: int, *, name: str, minimum: int = 1) -> int:
    """Return ``value`` if it is an integer of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise StatsInputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_choice(value: str, *, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        raise StatsInputError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def batch_rows(n_columns: int) -> int:
    """Rows per resampling batch so that a batch holds at most ``MAX_BATCH_ELEMENTS`` values."""
    return max(1, MAX_BATCH_ELEMENTS // max(1, n_columns))
