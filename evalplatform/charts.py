"""Charts: plotly.js served from the plotly Python package (vendored, never a CDN), and figures as JSON.

Dashboards build their figures on the server with `plotly.graph_objects` from precomputed rows
(`figure_data`), put them in the page with `json_script`, and draw them with `Plotly.newPlot`
(`evalplatform/static/evalplatform/charts.js`). The script's URL carries the plotly.js version, so it
is cached for a year.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from importlib import resources
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET


@cache
def plotly_js_version() -> str:
    from plotly.offline import get_plotlyjs_version

    return str(get_plotlyjs_version())


@cache
def _plotly_js() -> tuple[bytes, bytes]:
    """plotly.min.js as shipped in the plotly package, plain and gzipped (4.6 MB, 1.4 MB)."""
    body = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    return body, gzip.compress(body, compresslevel=6, mtime=0)


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


def figure_data(figure: Any) -> dict[str, Any]:
    """A plotly figure as plain JSON data for `json_script` (plotly's encoder converts numpy arrays)."""
    return json.loads(figure.to_json())
