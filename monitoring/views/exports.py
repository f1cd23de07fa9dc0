"""CSV downloads of the dashboards' tables: the numbers a chart shows, at full precision."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from django.http import HttpResponse


def cell(value: Any) -> str:
    """A CSV cell: floats as Python's shortest round-trip repr, None and NaN empty, booleans lowercase."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def csv_response(filename: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", filename)
    response["Content-Disposition"] = f'attachment; filename="{safe}"'
    writer = csv.writer(response, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([cell(value) for value in row] for row in rows)
    return response
