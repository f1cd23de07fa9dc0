"""Readers for trec_eval's other relevance formats and its z-score file, with file/line/reason errors.

| format (`-R`)  | line                              | read as                                     |
|----------------|-----------------------------------|---------------------------------------------|
| `prefs`        | `qid jg jsg docno rel_level`      | preferences (`evalcore.retrieval.preferences`) |
| `qrels_prefs`  | `qid iter docno rel`              | preferences: the iter column is the JG, JSG "0" |
| `qrels_jg`     | `qid jg docno rel`                | qrels per judgment group (`evalcore.retrieval.judgment_groups`) |
| zscores (`-Z`) | `qid measure mean stddev`         | {(qid, measure): (mean, stddev)}            |

As trec_eval reads them: whitespace-separated fields, rel_level and the numbers as C's atof reads them
(the leading number: `5.5`, `1e2`, `2abc` -> 2.0), lines starting with '#' and blank lines skipped. A
number field that does not start with a number is refused (trec_eval would read 0).
"""

from __future__ import annotations

import re
from pathlib import Path

from evalcore.errors import FormatError
from evalcore.retrieval.data import DuplicateRowError
from evalcore.retrieval.judgment_groups import QrelsJG
from evalcore.retrieval.preferences import Prefs

_ATOL = re.compile(r"^[+-]?[0-9]+")
_ATOF = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _number(text: str, what: str) -> tuple[float | None, str | None]:
    match = _ATOF.match(text)
    if not match:
        return None, f"{what} {text!r} is not a number"
    return float(match.group()), None


def _rows(path: str | Path, width: int, describe: str) -> list[tuple[int, list[str]]]:
    out = []
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        for number, line in enumerate(handle, start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            fields = stripped.split()
            if len(fields) != width:
                raise FormatError(
                    str(path), number, f"expected {width} columns ({describe}), found {len(fields)}"
                )
            out.append((number, fields))
    if not out:
        raise FormatError(str(path), None, f"no lines ({describe})")
    return out


def _prefs(path: str | Path, rows: list[tuple[int, list[str]]], jg: int, jsg: int | None) -> Prefs:
    columns: tuple[list[str], list[str], list[str], list[str], list[float]] = ([], [], [], [], [])
    for number, fields in rows:
        level, problem = _number(fields[-1], "rel_level")
        if problem:
            raise FormatError(str(path), number, problem)
        columns[0].append(fields[0])
        columns[1].append(fields[jg])
        columns[2].append("0" if jsg is None else fields[jsg])
        columns[3].append(fields[-2])
        columns[4].append(float(level or 0.0))
    return Prefs.from_rows(*columns)


def read_prefs(path: str | Path) -> Prefs:
    """A `-R prefs` file: `qid jg jsg docno rel_level` per line."""
    return _prefs(path, _rows(path, 5, "qid jg jsg docno rel_level"), 1, 2)


def read_qrels_prefs(path: str | Path) -> Prefs:
    """A qrels file read as preferences (`-R qrels_prefs`): the iter column is the JG, JSG "0"."""
    return _prefs(path, _rows(path, 4, "qid iter docno rel"), 1, None)


def read_qrels_jg(path: str | Path) -> QrelsJG:
    """A `-R qrels_jg` file: `qid jg docno rel` per line, rel read as C's atol reads it (`1.5` is 1).

    A document judged twice by one JG is refused, naming both lines, as trec_eval refuses it.
    """
    rows = _rows(path, 4, "qid jg docno rel")
    columns: tuple[list[str], list[str], list[str], list[int]] = ([], [], [], [])
    for number, fields in rows:
        match = _ATOL.match(fields[3])
        if not match:
            raise FormatError(str(path), number, f"relevance {fields[3]!r} is not an integer")
        columns[0].append(fields[0])
        columns[1].append(fields[1])
        columns[2].append(fields[2])
        columns[3].append(int(match.group()))
    try:
        return QrelsJG.from_rows(*columns)
    except DuplicateRowError as exc:
        first, second = (rows[i][0] for i in exc.rows)
        raise FormatError(
            str(path), second, f"document {exc.docno!r} is judged twice by one judgment group (line {first})"
        ) from exc


def read_zscores(path: str | Path) -> dict[tuple[str, str], tuple[float, float]]:
    """A `-Z` file: `qid measure mean stddev` per line (a pair given twice keeps its first line)."""
    table: dict[tuple[str, str], tuple[float, float]] = {}
    for number, fields in _rows(path, 4, "qid measure mean stddev"):
        mean, problem = _number(fields[2], "mean")
        stddev, problem2 = _number(fields[3], "stddev")
        if problem or problem2:
            raise FormatError(str(path), number, str(problem or problem2))
        table.setdefault((fields[0], fields[1]), (float(mean or 0.0), float(stddev or 0.0)))
    return table
