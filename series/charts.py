"""A series' metric over time as figure JSON for the vendored plotly.js, built as plain data with
`evalplatform.charts` (no plotly figure objects: one small dict per metric). These charts name no
template: plotly.js's own defaults and the white backgrounds below."""

from __future__ import annotations

from typing import Any

from evalcore.metrics import MetricSpec
from evalplatform.charts import figure, scatter
from series.selectors import MetricHistory

LINE_COLOUR = "#2457c5"
BAND_COLOUR = "rgba(36, 87, 197, 0.15)"


def history_figure(history: MetricHistory, *, spec: MetricSpec) -> dict[str, Any]:
    """The metric's value per observation; its confidence interval, where the job computed one, as a band.
    Undefined values leave a gap."""
    times = [point.observed_at for point in history.points]
    data: list[dict[str, Any]] = []
    if any(point.ci_low is not None for point in history.points):
        data.append(scatter(
            x=times + times[::-1], fill="toself", fillcolor=BAND_COLOUR,
            y=[p.ci_low for p in history.points] + [p.ci_high for p in history.points][::-1],
            line={"width": 0}, hoverinfo="skip", name="confidence interval",
        ))  # fmt: skip
    data.append(scatter(
        mode="lines+markers", x=times, y=[p.value for p in history.points], name=history.metric,
        line={"color": LINE_COLOUR}, connectgaps=False, hovertemplate="%{x|%Y-%m-%d %H:%M}: %{y:.4g}<extra></extra>",
    ))  # fmt: skip
    axis: dict[str, Any] = {"title": {"text": spec.unit or spec.label}}
    low, high = spec.range or (None, None)
    if low is not None and high is not None:
        axis["range"] = [low, high]
    return figure(data, {
        "height": 260, "margin": {"l": 60, "r": 20, "t": 20, "b": 40}, "showlegend": False,
        "font": {"family": "system-ui, sans-serif", "size": 12}, "yaxis": axis,
        "paper_bgcolor": "white", "plot_bgcolor": "white",
    })  # fmt: skip
