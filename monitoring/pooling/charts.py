"""The pool page's figure: relevant documents found against judgments made (`evalplatform.charts`)."""

from __future__ import annotations

from typing import Any

from evalplatform.charts import figure, layout, scatter
from monitoring.pooling.models import JudgingPool
from monitoring.pooling.selectors import yield_points

LINE_COLOUR = "#2457c5"
LAYOUT: dict[str, Any] = {
    "height": 380,
    "margin": {"l": 70, "r": 20, "t": 30, "b": 60},
    "font": {"family": "system-ui, sans-serif", "size": 13},
    "showlegend": False,
}


def yield_figure(pool: JudgingPool) -> dict[str, Any] | None:
    """The yield curve from the origin (None before the first judgment), the budget at the x axis' end."""
    points = yield_points(pool)
    if not points:
        return None
    end = max(pool.budget or 0, points[-1].judged)
    trace = scatter(
        x=[0] + [point.judged for point in points], y=[0] + [point.relevant for point in points], mode="lines",
        name="Relevant found", line={"color": LINE_COLOUR, "shape": "hv"},
        hovertemplate="%{x} judged: %{y} relevant<extra></extra>",
    )  # fmt: skip
    return figure(
        [trace],
        layout(
            LAYOUT,
            xaxis={"title": {"text": "Pairs judged"}, "range": [0, end], "rangemode": "tozero"},
            yaxis={"title": {"text": "Relevant found"}, "rangemode": "tozero"},
        ),
    )
