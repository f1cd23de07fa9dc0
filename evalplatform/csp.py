"""Content-Security-Policy on every HTML response (Django 5.2 has none built in).

The pages run no inline script: every script is a file served from this site (plotly.js included, see
`evalplatform.charts`), and chart data travels in `json_script` tags, which are data, not script. Styles
allow 'unsafe-inline' because plotly.js writes a style element and style attributes as it draws, and
Swagger UI and Redoc do the same. A response that already carries the header keeps its own: Redoc's page
(`REDOC_POLICY`) also starts its search index in a web worker made from a blob: URL.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "object-src 'none'",
    ]
)
HEADER = "Content-Security-Policy"
#: Only scripts already allowed on the page can make a blob: URL, so this adds no source of code.
REDOC_POLICY = f"{POLICY}; worker-src 'self' blob:"
#: A downloaded report (`monitoring.reports`) carries its own inline script and data: should a browser show
#: it rather than save it, it runs sandboxed (an opaque origin, no script) and loads nothing.
DOWNLOAD_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"

View = Callable[..., HttpResponse]


def with_policy(policy: str) -> Callable[[View], View]:
    """A view's own policy in place of `POLICY`, for the one page that needs a different one."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            response = view(request, *args, **kwargs)
            response[HEADER] = policy
            return response

        return wrapped

    return decorate


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html") and HEADER not in response:
            response[HEADER] = POLICY
        return response
