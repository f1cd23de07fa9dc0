"""Read a search log: CSV, JSON Lines, or User Behavior Insights (UBI) events.

CSV (`session,query,doc,position,clicked[,dwell]`, a header row, columns in any order) and JSON Lines
(one object a line with the same keys) hold one row per shown result. UBI files hold one event a line, as
stored in OpenSearch's `ubi_events` index (each document's `_source`); the fields read are those the
Search Relevance Workbench's COEC model reads: `action_name`, `query_id` (the session), `user_query`
(the query, on the event itself), `event_attributes.object.object_id` (the document) and
`event_attributes.position.ordinal` (the 1-based position).

Every reader parses with Arrow first (no Python object per line); when Arrow refuses a file, or the
columns break a rule, the file is read again line by line to name the first bad line:
`FormatError(file, line, reason)`. Nothing is returned from a file with a bad line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.json as pajson
from pyarrow._compute import DictionaryEncodeOptions, call_function

from evalcore.arrow import binary_length, from_numpy, small_pages, to_numpy
from evalcore.clicks._log import ClickLog, ClickLogError
from evalcore.csvfiles import CsvSchema, encode_column, read_csv
from evalcore.errors import FormatError
from evalcore.textfiles import arrow_input, json_object, text_lines

FORMATS = ("csv", "jsonl", "ubi")
LOG_CSV = CsvSchema(
    {
        "session": "text",
        "query": "text",
        "doc": "text",
        "position": "integer",
        "clicked": "flag",
        "dwell": "number",
    },
    ("session", "query", "doc", "position", "clicked"),
)
#: UBI actions that show a result, and those that click one; any other action is skipped.
UBI_IMPRESSIONS = frozenset({"impression"})
UBI_CLICKS = frozenset({"click", "click_through"})
_IDS = ("session", "query", "doc")


class ArrowNames(Sequence[str]):
    """The distinct ids of a column as Arrow holds them, decoded to text only when asked for."""

    def __init__(self, values: pa.Array) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        value = self.values[index].as_py()
        return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def read_click_log(path: str | Path, fmt: str = "csv") -> ClickLog:
    """Read a log in `fmt` (`csv`, `jsonl` or `ubi`); an empty log is an error."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; choose from {', '.join(FORMATS)}")
    name = str(path)
    with small_pages():
        log = {"csv": _read_csv, "jsonl": _read_jsonl, "ubi": _read_ubi}[fmt](name)
    if log.num_rows == 0:
        raise FormatError(name, None, "the log holds no impressions")
    return log


# --- CSV ---------------------------------------------------------------------------------------------


def _read_csv(name: str) -> ClickLog:
    table = read_csv(name, LOG_CSV)
    codes = {}
    for column in _IDS:
        values, row_codes = table.encode(column, grouped=column == "session")
        codes[column] = (ArrowNames(values), row_codes)
    dwell = to_numpy(table.column("dwell")) if table.has("dwell") else None
    if dwell is not None:
        bad = np.flatnonzero(_bad_dwell(dwell))
        if bad.size:
            table.fail(
                int(bad[0]), f"dwell {table.text('dwell', int(bad[0]))!r} is not a non-negative number"
            )
    return _build(
        codes, to_numpy(table.column("position")), to_numpy(table.column("clicked")), dwell, table.fail
    )


def _bad_dwell(dwell: np.ndarray) -> np.ndarray:
    """Negative or infinite dwell times (NaN is an unknown one)."""
    return ~np.isnan(dwell) & ~(np.isfinite(dwell) & (dwell >= 0))


def _build(
    codes: Mapping[str, tuple[Sequence[str], np.ndarray]],
    position: np.ndarray,
    clicked: np.ndarray,
    dwell: np.ndarray | None,
    fail: Callable[[int, str], object],
) -> ClickLog:
    try:
        return ClickLog.from_codes(
            codes["session"][1], codes["query"][1], codes["doc"][1], position, clicked,
            sessions=codes["session"][0], queries=codes["query"][0], docs=codes["doc"][0], dwell=dwell,
        )  # fmt: skip
    except ClickLogError as exc:
        fail(exc.row, exc.reason)
        raise AssertionError("unreachable") from exc  # pragma: no cover


# --- JSON Lines: the Arrow path, and the line-by-line path that names a bad line -------------------------


def _records(name: str) -> Iterator[tuple[int, dict[str, object]]]:
    for number, line in text_lines(name):
        if line.strip():
            try:
                yield number, json_object(line)
            except ValueError as exc:
                raise FormatError(name, number, str(exc)) from exc


def _row_lines(name: str) -> list[int]:
    """The line of each record (blank lines skipped), for a row's message."""
    return [number for number, line in text_lines(name) if line.strip()]


def _arrow_json(name: str, schema: pa.Schema) -> pa.Table | None:
    options = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        with arrow_input(name) as source:
            return pajson.read_json(source, parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _text_codes(column: pa.ChunkedArray) -> tuple[ArrowNames, np.ndarray] | None:
    """The codes of a text column, or None where a value is missing or empty."""
    if column.null_count:
        return None
    values, codes = encode_column(column)
    if len(values) and (binary_length(values) == 0).any():
        return None
    return ArrowNames(values), codes


_JSONL_SCHEMA = pa.schema(
    [("session", pa.string()), ("query", pa.string()), ("doc", pa.string()), ("position", pa.int64()),
     ("clicked", pa.bool_()), ("dwell", pa.float64())]
)  # fmt: skip


def _read_jsonl(name: str) -> ClickLog:
    table = _arrow_json(name, _JSONL_SCHEMA)
    if table is not None and table.num_rows and _jsonl_columns_complete(table):
        codes = {column: _text_codes(table.column(column)) for column in _IDS}
        if all(code is not None for code in codes.values()):
            dwell = table.column("dwell")
            dwell_values = None if dwell.null_count == len(dwell) else _numbers_or_nan(dwell)
            if dwell_values is None or not _bad_dwell(dwell_values).any():
                return _build(
                    codes,  # type: ignore[arg-type]
                    to_numpy(table.column("position")), to_numpy(table.column("clicked")), dwell_values,
                    _fail_at_row(name),
                )  # fmt: skip
    return _read_jsonl_slowly(name)


def _jsonl_columns_complete(table: pa.Table) -> bool:
    return not any(table.column(c).null_count for c in ("position", "clicked"))


def _fail_at_row(name: str) -> Callable[[int, str], object]:
    def fail(row: int, reason: str) -> None:
        raise FormatError(name, _row_lines(name)[row], reason)

    return fail


def _identifier(record: dict[str, object], key: str) -> str:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f'"{key}" must be a string or an integer' if key in record else f'missing "{key}"')
    text = str(value)
    if not text:
        raise ValueError(f'empty "{key}"')
    return text


def _integer(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f'"{key}" must be an integer, not {value!r}')
    return value


def _flag(value: object, key: str) -> bool:
    if value in (True, False, 0, 1) and not isinstance(value, float):
        return bool(value)
    raise ValueError(f'"{key}" must be true, false, 0 or 1, not {value!r}')


def _dwell(value: object) -> float:
    if value is None:
        return float("nan")
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not value >= 0
        or value == float("inf")
    ):
        raise ValueError(f'"dwell" must be a non-negative number, not {value!r}')
    return float(value)


class _Collector:
    """Rows gathered one by one (the slow path), their ids coded in order of first appearance."""

    def __init__(self) -> None:
        self.ids: dict[str, dict[str, int]] = {column: {} for column in _IDS}
        self.codes: dict[str, list[int]] = {column: [] for column in _IDS}
        self.position: list[int] = []
        self.clicked: list[bool] = []
        self.dwell: list[float] = []
        self.lines: list[int] = []

    def add(self, line: int, ids: tuple[str, str, str], position: int, clicked: bool, dwell: float) -> None:
        for column, value in zip(_IDS, ids, strict=True):
            self.codes[column].append(self.ids[column].setdefault(value, len(self.ids[column])))
        self.position.append(position)
        self.clicked.append(clicked)
        self.dwell.append(dwell)
        self.lines.append(line)

    def log(self, name: str, *, with_dwell: bool) -> ClickLog:
        codes = {c: (tuple(self.ids[c]), np.asarray(self.codes[c], dtype=np.int32)) for c in _IDS}
        dwell = np.asarray(self.dwell, dtype=np.float64) if with_dwell else None

        def fail(row: int, reason: str) -> None:
            raise FormatError(name, self.lines[row], reason)

        return _build(codes, np.asarray(self.position, dtype=np.int64), np.asarray(self.clicked), dwell, fail)


def _read_jsonl_slowly(name: str) -> ClickLog:
    rows = _Collector()
    with_dwell = False
    for number, record in _records(name):
        try:
            unknown = sorted(set(record) - set(_JSONL_SCHEMA.names))
            if unknown:
                raise ValueError(f'unknown key "{unknown[0]}"; expected {", ".join(_JSONL_SCHEMA.names)}')
            ids = (_identifier(record, "session"), _identifier(record, "query"), _identifier(record, "doc"))
            for key in ("position", "clicked"):
                if key not in record:
                    raise ValueError(f'missing "{key}"')
            position = _integer(record["position"], "position")
            clicked = _flag(record["clicked"], "clicked")
            dwell = _dwell(record.get("dwell"))
        except ValueError as exc:
            raise FormatError(name, number, str(exc)) from exc
        with_dwell |= "dwell" in record
        rows.add(number, ids, position, clicked, dwell)
    return rows.log(name, with_dwell=with_dwell)


# --- UBI events ----------------------------------------------------------------------------------------

_UBI_SCHEMA = pa.schema(
    [
        ("action_name", pa.string()),
        ("query_id", pa.string()),
        ("user_query", pa.string()),
        ("event_attributes", pa.struct([
            ("object", pa.struct([("object_id", pa.string())])),
            ("position", pa.struct([("ordinal", pa.int64())])),
        ])),
    ]
)  # fmt: skip


def _read_ubi(name: str) -> ClickLog:
    table = _arrow_json(name, _UBI_SCHEMA)
    if table is not None:
        events = _ubi_columns(table)
        if events is not None:
            return _ubi_log(name, *events, lines=None)
    return _read_ubi_slowly(name)


def _ubi_columns(table: pa.Table) -> tuple[np.ndarray, list[pa.ChunkedArray], np.ndarray, np.ndarray] | None:
    """(kept event rows, [query_id, user_query, object_id] of those, ordinal, is_click), or None when a
    kept event lacks a field (the slow path names its line)."""
    action = table.column("action_name")
    # A missing action_name is a value of its own (None), so that every row has a code.
    encoded = call_function("dictionary_encode", [action.combine_chunks()], DictionaryEncodeOptions("encode"))
    values, codes = encoded.dictionary, to_numpy(encoded.indices)
    kinds = np.asarray([_ubi_kind(v) for v in values.to_pylist()], dtype=np.int8)
    kind = kinds[codes] if len(values) else np.zeros(0, dtype=np.int8)
    rows = np.flatnonzero(kind > 0)
    kept = call_function("take", [table, from_numpy(rows)])
    attributes = kept.column("event_attributes")
    if attributes.null_count:
        return None
    flat = attributes.combine_chunks() if len(kept) else None
    if flat is None:
        return rows, [], np.zeros(0, np.int64), np.zeros(0, bool)
    obj, pos = flat.flatten()  # unlike field(), flatten() honours the parent's offset and nulls
    if obj.null_count or pos.null_count:
        return None
    (object_id,), (ordinal,) = obj.flatten(), pos.flatten()
    columns = [kept.column("query_id"), kept.column("user_query"), pa.chunked_array([object_id])]
    if any(c.null_count for c in columns) or ordinal.null_count:
        return None
    if any((binary_length(c) == 0).any() for c in columns):
        return None
    return rows, columns, to_numpy(ordinal), kind[rows] == 2


def _numbers_or_nan(column: pa.ChunkedArray) -> np.ndarray:
    """A float64 column with NaN for its nulls (`fill_null`, whose scalar would import `pyarrow.compute`)."""
    out = np.full(len(column), np.nan)
    at = 0
    for chunk in column.chunks:
        buffer = chunk.buffers()[1]
        if buffer is not None:
            out[at : at + len(chunk)] = np.frombuffer(buffer, dtype=np.float64)[
                chunk.offset : chunk.offset + len(chunk)
            ]
        at += len(chunk)
    if column.null_count:
        out[to_numpy(call_function("is_null", [column]))] = np.nan
    return out


def _ubi_kind(action: str | None) -> int:
    if action in UBI_IMPRESSIONS:
        return 1
    return 2 if action in UBI_CLICKS else 0


def _ubi_log(
    name: str,
    rows: np.ndarray,
    columns: list[pa.ChunkedArray],
    ordinal: np.ndarray,
    is_click: np.ndarray,
    *,
    lines: list[int] | None,
) -> ClickLog:
    """Impressions from events: one per (query_id, object_id), at the first impression's ordinal (a click
    with no impression event counts as shown at its own ordinal); clicked when any click event names it."""
    if not columns:
        return ClickLog.from_codes([], [], [], [], [], sessions=(), queries=(), docs=())
    encoded = [encode_column(c) for c in columns]
    session, doc = encoded[0][1].astype(np.int64), encoded[2][1].astype(np.int64)
    key = session * max(len(encoded[2][0]), 1) + doc
    # The first impression of each key; keys only clicked take their first click.
    order = np.lexsort((np.arange(key.size), is_click, key))
    first = order[np.r_[True, key[order][1:] != key[order][:-1]]]
    first.sort()
    clicked_keys = np.unique(key[is_click])
    clicked = np.isin(key[first], clicked_keys)
    event_line = _ubi_lines(name, lines)

    def fail(row: int, reason: str) -> None:
        raise FormatError(name, event_line(int(rows[first[row]])), reason)

    codes = {
        column: (ArrowNames(values), row_codes[first])
        for column, (values, row_codes) in zip(_IDS, encoded, strict=True)
    }
    return _build(codes, ordinal[first], clicked, None, fail)  # type: ignore[arg-type]


def _ubi_lines(name: str, lines: list[int] | None) -> Callable[[int], int]:
    if lines is not None:
        return lambda row: lines[row]
    return lambda row: _row_lines(name)[row]


def _read_ubi_slowly(name: str) -> ClickLog:
    lines: list[int] = []
    rows: list[int] = []
    ids: list[list[str]] = [[], [], []]
    ordinals: list[int] = []
    clicks: list[bool] = []
    for number, record in _records(name):
        lines.append(number)
        kind = _ubi_kind(record.get("action_name") if isinstance(record.get("action_name"), str) else None)  # type: ignore[arg-type]
        if not kind:
            continue
        try:
            attributes = _object(record, "event_attributes")
            position = _object(attributes, "position", "event_attributes.")
            target = _object(attributes, "object", "event_attributes.")
            values = (
                _identifier(record, "query_id"),
                _identifier(record, "user_query"),
                _identifier(target, "object_id"),
            )
            if "ordinal" not in position:
                raise ValueError('missing "event_attributes.position.ordinal"')
            ordinal = _integer(position["ordinal"], "event_attributes.position.ordinal")
        except ValueError as exc:
            raise FormatError(name, number, f"{record.get('action_name')} event: {exc}") from exc
        rows.append(len(lines) - 1)
        for column, value in zip(ids, values, strict=True):
            column.append(value)
        ordinals.append(ordinal)
        clicks.append(kind == 2)
    columns = [pa.chunked_array([pa.array(column, pa.string())]) for column in ids] if rows else []
    return _ubi_log(
        name, np.asarray(rows, dtype=np.int64), columns, np.asarray(ordinals, dtype=np.int64),
        np.asarray(clicks, dtype=bool), lines=lines,
    )  # fmt: skip


def _object(record: dict[str, object], key: str, prefix: str = "") -> dict[str, object]:
    value = record.get(key)
    if not isinstance(value, dict):
        raise ValueError(
            f'"{prefix}{key}" must be an object' if key in record else f'missing "{prefix}{key}"'
        )
    return value
