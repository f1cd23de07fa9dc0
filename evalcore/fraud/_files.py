"""Read scored examples from a CSV file: `id,score,label[,amount][,entity,timestamp]`.

- `id`: the example's id (any string; not used by the metrics);
- `score`: a finite number, higher meaning more likely fraud;
- `label`: 1 (fraud) or 0 (also `true` / `false`);
- `amount` (optional): the money at stake, a non-negative number; a missed fraud costs it;
- `entity`, `timestamp` (optional, together): the account or card, and when the example happened,
  as a number (any unit, such as epoch seconds) or an ISO 8601 date (read as seconds since the epoch;
  naive dates as UTC).

Columns may come in any order. The file is parsed by Arrow's multi-threaded CSV reader; a malformed
line stops the read with `FILE:LINE: reason`.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa

from evalcore.arrow import cast, small_pages, to_numpy
from evalcore.csvfiles import CsvSchema, CsvTable, read_csv
from evalcore.errors import FormatError
from evalcore.fraud._registry import ScoredExamples

SCORES = CsvSchema(
    {
        "id": "text",
        "score": "number",
        "label": "flag",
        "amount": "number",
        "entity": "text",
        "timestamp": "text",
    },
    ("id", "score", "label"),
    ignored=("id",),
)


def read_scores(path: str | Path) -> ScoredExamples:
    """Read and check a scores file; an empty file (a header only) is an error."""
    with small_pages():
        table = read_csv(path, SCORES)
        if table.num_rows == 0:
            raise FormatError(str(path), None, "the file holds no scores")
        scores = _finite(table, "score")
        amounts = _finite(table, "amount", non_negative=True) if table.has("amount") else None
        if table.has("entity") != table.has("timestamp"):
            missing = "timestamp" if table.has("entity") else "entity"
            raise FormatError(str(path), 1, f"missing column {missing!r}: entity and timestamp come together")
        entities = entity_ids = timestamps = None
        if table.has("entity"):
            values, entities = table.encode("entity")
            entity_ids = np.asarray(
                [v.decode("utf-8", errors="replace") for v in values.to_pylist()], dtype=object
            )
            timestamps = _timestamps(table)
        return ScoredExamples(
            to_numpy(table.column("label")), scores, amounts, entities, entity_ids, timestamps
        )


def _finite(table: CsvTable, name: str, *, non_negative: bool = False) -> np.ndarray:
    values = to_numpy(table.column(name))
    bad = ~np.isfinite(values) | ((values < 0) if non_negative else False)
    if bad.any():
        row = int(np.argmax(bad))
        need = "a finite, non-negative number" if non_negative else "a finite number"
        table.fail(row, f"{name} {float(values[row])!r} is not {need}")
    return values


_SECONDS = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}


def _timestamps(table: CsvTable) -> np.ndarray:
    """Numbers as they are, or ISO 8601 dates as seconds since the epoch; one kind per file."""
    text = cast(table.column("timestamp"), pa.string())
    for kind in (pa.float64(), pa.timestamp("ns"), pa.timestamp("ns", tz="UTC")):
        try:
            parsed = cast(text, kind)
        except pa.ArrowInvalid:
            continue
        if pa.types.is_floating(kind):
            return _checked_numbers(table, to_numpy(parsed))
        return to_numpy(cast(parsed, pa.int64())) / _SECONDS["ns"]
    _fail_first_timestamp(table)
    raise AssertionError("unreachable")  # pragma: no cover


def _checked_numbers(table: CsvTable, values: np.ndarray) -> np.ndarray:
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.argmax(bad))
        table.fail(row, f"timestamp {table.text('timestamp', row)!r} is not a finite number")
    return values


def _kind(text: str) -> str | None:
    try:
        return "number" if math.isfinite(float(text)) else None
    except ValueError:
        pass
    try:
        return "zoned date" if datetime.fromisoformat(text).tzinfo else "date"
    except ValueError:
        return None


def _fail_first_timestamp(table: CsvTable) -> None:
    """The slow path: the first timestamp that is not of the first row's kind (number, date, zoned date)."""
    column = table.column("timestamp")
    first = _kind(table.text("timestamp", 0))
    for row in range(table.num_rows):
        value = column[row].as_py().decode("utf-8", errors="replace")
        kind = _kind(value)
        if kind is None or first is None:
            table.fail(row, f"timestamp {value!r} is neither a number nor an ISO 8601 date")
        if kind != first:
            table.fail(row, f"timestamp {value!r} is a {kind}, but the first row's is a {first}")
    table.fail(0, "timestamps could not be read")
