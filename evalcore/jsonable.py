"""Numbers as JSON can hold them: NaN and infinities (undefined figures) become null.

>>> json_number(float("nan")), json_number(2.0, integer=True), json_matrix([[1.0, float("inf")]])
(None, 2, [[1.0, None]])
>>> json_finite({"auc": float("nan"), "curve": [0.5, float("-inf")], "n": 3})
{'auc': None, 'curve': [0.5, None], 'n': 3}
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def json_number(value: Any, *, integer: bool = False) -> float | int | None:
    """A float (or, with `integer`, a rounded int) for JSON; None for NaN, infinities and None."""
    if value is None:
        return None
    number = float(value)
    if not math.isfinite(number):
        return None
    return int(round(number)) if integer else number


def json_numbers(values: Any) -> list[float | None]:
    """A 1-D array as a JSON list, undefined entries as None."""
    return [json_number(v) for v in np.asarray(values, dtype=np.float64).tolist()]


def json_matrix(matrix: Any, *, integer: bool = False) -> list[list[Any]]:
    """A 2-D array as nested JSON lists (ints with `integer`), undefined entries as None."""
    if integer:
        return np.asarray(matrix, dtype=np.int64).tolist()
    return [json_numbers(row) for row in np.asarray(matrix, dtype=np.float64)]


def json_finite(data: Any) -> Any:
    """`data` (dicts, lists and tuples of scalars) with every NaN or infinite float as None, the rest as is.

    The last guard before JSON: a value stored before undefined figures were written as NULL, or one a
    new code path forgets to pass through `json_number`, becomes null rather than a reply that strict
    JSON parsers (browsers' `JSON.parse`) refuse.
    """
    if isinstance(data, float | np.floating):
        return float(data) if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: json_finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [json_finite(value) for value in data]
    return data
