"""The API's JSON: strict, with undefined numbers (NaN, infinities) as null.

DRF's `JSONRenderer` is strict already (`STRICT_JSON`), so a NaN that reached a reply raised "Out of
range float values are not JSON compliant" and the endpoint answered 500 for good (one degenerate
snapshot broke a team's alert APIs). Undefined values are stored as NULL at write time; this renderer is
the one place that keeps whatever slipped through (rows written before that, a future code path) from
taking an endpoint down.
"""

from __future__ import annotations

from typing import Any

from rest_framework.renderers import JSONRenderer

from evalcore.jsonable import json_finite


class FiniteJSONRenderer(JSONRenderer):
    """`JSONRenderer` with non-finite floats as null; the data is walked only when it holds one."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: dict[str, Any] | None = None,
    ) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)  # type: ignore[no-any-return]
        except ValueError:  # "Out of range float values are not JSON compliant"
            return super().render(json_finite(data), accepted_media_type, renderer_context)  # type: ignore[no-any-return]
