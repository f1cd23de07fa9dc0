"""Input checks shared by the embedding monitors (no torch here: the registry imports this package)."""

from __future__ import annotations

import math

from evalcore.errors import EvalCoreError


class EmbeddingInputError(EvalCoreError, ValueError):
    """Embeddings a monitor cannot use: wrong shape or dtype, non-finite values, mismatched sets."""


def check_count(value: int, *, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise EmbeddingInputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise EmbeddingInputError(f"{name} must be at most {maximum:,}, got {value!r}")
    return value


def check_probability(value: float, *, name: str) -> float:
    if not (isinstance(value, int | float) and 0.0 < value < 1.0):
        raise EmbeddingInputError(f"{name} must be strictly between 0 and 1, got {value!r}")
    return float(value)


def check_positive(value: float, *, name: str) -> float:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise EmbeddingInputError(f"{name} must be a finite number above zero, got {value!r}")
    return float(value)


def check_same_dim(reference_dim: int, current_dim: int) -> None:
    if reference_dim != current_dim:
        raise EmbeddingInputError(
            f"the reference has dimension {reference_dim} but the current set has {current_dim}"
        )
