"""Numbers for JSON: undefined figures (NaN, infinities) become null, everything else is kept."""

from __future__ import annotations

import json
import math

import numpy as np

from evalcore.jsonable import json_finite


def test_it_makes_any_nesting_strict_json_and_keeps_the_rest() -> None:
    data = {"a": [1, 2.5, math.nan, (np.float64(math.inf), -math.inf)], "b": {"c": np.float32("nan")},
            "d": "NaN", "e": None, "f": True}  # fmt: skip
    cleaned = json_finite(data)
    assert cleaned == {"a": [1, 2.5, None, [None, None]], "b": {"c": None}, "d": "NaN", "e": None, "f": True}
    assert json.loads(json.dumps(cleaned, allow_nan=False)) == cleaned
