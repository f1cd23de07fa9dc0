"""Charts: plotly.js served from the plotly Python package (vendored, never a CDN), and figures as JSON.

Dashboards lay their figures out on the server from precomputed rows as plain dicts and lists in
plotly.js's figure format: `figure(traces, layout)` with `scatter`, `bar` and `heatmap` traces, a
`layout`, the `vline`/`hline` shapes, `time_axis` (a date axis that spreads a single instant over two
days, not over a millisecond) and `no_value_note` (a figure whose every value is undefined says so in
place of empty axes); `plain` turns numpy arrays into lists, datetimes into ISO strings and NaN or
infinities into null. No plotly figure object is built in a request: the plotly package only serves
plotly.js (`plotly_js`) and its template files.

A dashboard's figure names its template (`layout.template` is "plotly_white") instead of carrying a
copy: the page holds the template once (`{% plotly_script %}` writes `plotly_templates()` into a
`json_script` block), and `evalplatform/static/evalplatform/charts.js` puts it into each figure's layout
before `Plotly.newPlot` draws it, as plotly's Python figures carried it in every figure. The tables of
numbers beside the charts write times with `TimeLabels`. `charts.js` also sizes each chart's container to
its figure's height, so a page's placeholder never leaves white space under a plot. The script's URL
carries the plotly.js version, so it is cached for a year.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterable
from datetime import date, datetime, timedelta
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
from django.http import Http404, HttpRequest, HttpResponse
from django.template.defaultfilters import date as date_filter
from django.urls import reverse
from django.utils.timezone import template_localtime  # type: ignore[attr-defined]  # (missing from the stubs)
from django.views.decorators.http import require_GET

#: The template the dashboards' figures name (plotly's own, as `plotly.io.templates` has it).
TEMPLATE = "plotly_white"


@cache
def plotly_js_version() -> str:
    from plotly.offline import get_plotlyjs_version

    return str(get_plotlyjs_version())


@cache
def _plotly_js() -> tuple[bytes, bytes]:
    """plotly.min.js as shipped in the plotly package, plain and gzipped (4.6 MB, 1.4 MB)."""
    body = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    return body, gzip.compress(body, compresslevel=6, mtime=0)


def plotly_js_source() -> str:
    """plotly.min.js as text, for a file that carries it inline (`monitoring.reports`: a report that opens
    offline)."""
    return _plotly_js()[0].decode("utf-8")


def plotly_js_url() -> str:
    return reverse("plotly-js", args=[plotly_js_version()])


@require_GET
def plotly_js(request: HttpRequest, version: str) -> HttpResponse:
    if version != plotly_js_version():
        raise Http404(f"This server has plotly.js {plotly_js_version()}.")
    plain, compressed = _plotly_js()
    gzipped = "gzip" in request.headers.get("Accept-Encoding", "")
    response = HttpResponse(compressed if gzipped else plain, content_type="text/javascript; charset=utf-8")
    if gzipped:
        response["Content-Encoding"] = "gzip"
    response["Cache-Control"] = "public, max-age=31536000, immutable"
    response["Vary"] = "Accept-Encoding"
    return response


# --- templates: once per page ---------------------------------------------------------------------------


@cache
def plotly_template(name: str = TEMPLATE) -> dict[str, Any]:
    """One of plotly's templates, read once from the file `plotly.io.templates` itself loads (the same
    dict plotly's figures embedded in their layout), without importing plotly's figure classes."""
    path = resources.files("plotly") / "package_data" / "templates" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def plotly_templates() -> dict[str, dict[str, Any]]:
    """The templates a page's figures may name, by name, for `charts.js`."""
    return {TEMPLATE: plotly_template(TEMPLATE)}


# --- figures as plain data ------------------------------------------------------------------------------


#: Values JSON holds as they are (floats are checked for NaN and infinities).
_AS_IS = frozenset({str, int, bool, type(None)})


def plain(value: Any) -> Any:
    """`value` as JSON holds it: dicts, lists (tuples and numpy arrays too) and scalars, numpy scalars as
    Python numbers, datetimes and dates as ISO strings, NaN and infinities as None (an undefined number
    is a gap in a chart, never a `NaN` that `JSON.parse` refuses).

    >>> plain({"x": np.array([1.0, np.nan]), "y": (np.int64(2), float("inf"))})
    {'x': [1.0, None], 'y': [2, None]}
    """
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        # The common case inline: a trace's numbers and labels need no call each.
        return [
            item if type(item) in _AS_IS or (type(item) is float and math.isfinite(item)) else plain(item)
            for item in value
        ]
    if isinstance(value, float):  # a subclass: numpy's float64
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.ndarray):
        return _array(value)
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def _array(values: np.ndarray) -> list[Any]:
    if values.dtype.kind != "f":
        return plain(values.tolist())  # type: ignore[no-any-return]
    finite = np.isfinite(values)
    if finite.all():
        return values.tolist()  # type: ignore[no-any-return]
    shown = values.astype(object)
    shown[~finite] = None
    return shown.tolist()  # type: ignore[no-any-return]


def figure(traces: list[dict[str, Any]], layout: dict[str, Any]) -> dict[str, Any]:
    """A figure for `json_script` and `charts.js`: its traces and layout as plain JSON data."""
    return {"data": plain(traces), "layout": plain(layout)}


def scatter(**properties: Any) -> dict[str, Any]:
    return {"type": "scatter", **properties}


def bar(**properties: Any) -> dict[str, Any]:
    return {"type": "bar", **properties}


def heatmap(**properties: Any) -> dict[str, Any]:
    return {"type": "heatmap", **properties}


def layout(defaults: dict[str, Any], /, **properties: Any) -> dict[str, Any]:
    """A layout naming the page's template (`charts.js` puts the template itself in): `defaults` (a
    dashboard's height, margins and font), with `properties` over them."""
    return {"template": TEMPLATE, **defaults, **properties}


def vline(x: Any, *, line: dict[str, Any]) -> dict[str, Any]:
    """A vertical line at `x` across the whole plot height (a shape, as plotly's `add_vline` adds)."""
    return {"type": "line", "x0": x, "x1": x, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain", "line": line}


def hline(y: Any, *, line: dict[str, Any]) -> dict[str, Any]:
    """A horizontal line at `y` across the whole plot width (as plotly's `add_hline` adds)."""
    return {"type": "line", "x0": 0, "x1": 1, "xref": "x domain", "y0": y, "y1": y, "yref": "y", "line": line}


def vline_label(x: Any, text: str) -> dict[str, Any]:
    """The label of a `vline`, at its top right (plotly's `annotation_position="top right"`)."""
    return {"text": text, "showarrow": False, "x": x, "xref": "x", "xanchor": "left",
            "y": 1, "yref": "y domain", "yanchor": "top"}  # fmt: skip


#: How far a time axis reaches either side of its only instant (`time_axis`).
INSTANT_SPAN = timedelta(days=1)


def time_axis(times: Iterable[datetime], **properties: Any) -> dict[str, Any]:
    """A date axis over `times` (`properties` over it): plotly's own range, except over a single instant
    (one observation, or every one at the same time), which plotly spreads over a millisecond and ticks
    in fractions of one ("13:37:30.5615"); that axis spans `INSTANT_SPAN` either side of the instant,
    ticked in hours and dates.

    >>> time_axis([datetime(2026, 3, 2, 9, 30)] * 2)["range"]
    [datetime.datetime(2026, 3, 1, 9, 30), datetime.datetime(2026, 3, 3, 9, 30)]
    """
    axis: dict[str, Any] = {"type": "date", **properties}
    instants = set(times)
    if len(instants) == 1 and "range" not in axis:
        (at,) = instants
        axis["range"] = [at - INSTANT_SPAN, at + INSTANT_SPAN]
    return axis


def no_value_note(chart_layout: dict[str, Any], text: str) -> dict[str, Any]:
    """`chart_layout` for a figure with no value to plot (every value undefined): its axes hidden and
    `text` in the middle of the plot instead, so the chart says why it is empty rather than drawing
    empty axes; the table beside it still lists every observation."""
    axes = sorted({"xaxis", "yaxis", *(key for key in chart_layout if key.startswith(("xaxis", "yaxis")))})
    return {
        **chart_layout,
        **{axis: {**chart_layout.get(axis, {}), "visible": False} for axis in axes},
        "annotations": [
            *chart_layout.get("annotations", []),
            {"text": text, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5,
             "xanchor": "center", "yanchor": "middle", "font": {"size": 14, "color": "#5b6475"}},
        ],
    }  # fmt: skip


# --- the numbers beside a chart -------------------------------------------------------------------------


class TimeLabels:
    """Times as the tables beside the charts write them, `{{ at|date:"Y-m-d H:i" }}` in the current time
    zone, by the same filter; each distinct time once per page (a dashboard's metrics share their runs'
    times, so a page of 17 metrics over 13 runs formats 13 times, not 221)."""

    def __init__(self) -> None:
        self._written: dict[datetime, str] = {}

    def __call__(self, at: datetime) -> str:
        if at not in self._written:
            self._written[at] = date_filter(template_localtime(at), "Y-m-d H:i")
        return self._written[at]
