"""The one CSV writer of every download: dashboards' tables, leaderboards, series, alerts, disagreements.

Cells are written so that a spreadsheet opens them as data, never as formulas (OWASP's CSV injection
rule): a text cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading single
quote, so a run named `=HYPERLINK("http://x","y")` shows as that text, not as a live link. Numbers stay
numbers: ints and floats are written as they are (`-0.5`), and so is a text cell that is a plain number
(a qid `-1` is harmless and the quote would change it). The header is text like any other cell: column
names can carry run names.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from django.http import HttpResponse

#: What a spreadsheet may read as the start of a formula (OWASP: CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def neutralised(text: str) -> str:
    """`text` with a leading quote if a spreadsheet would read it as a formula; plain numbers as they are."""
    if text.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def cell(value: Any) -> str:
    """A CSV cell: floats as Python's shortest round-trip repr, None and NaN empty, booleans lowercase,
    text neutralised (`neutralised`)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    return neutralised(str(value))


def csv_response(filename: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> HttpResponse:
    """A download of `header` and `rows`, every cell through `cell`."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", filename)
    response["Content-Disposition"] = f'attachment; filename="{safe}"'
    writer = csv.writer(response, lineterminator="\n")
    writer.writerow([cell(name) for name in header])
    writer.writerows([cell(value) for value in row] for row in rows)
    return response
