"""A series' metric over time as figure JSON for the vendored plotly.js, built as plain data with
`evalplatform.charts` (no plotly figure objects: one small dict per metric). These charts name no
template: plotly.js's own defaults and the white backgrounds below."""

from __future__ import annotations

from typing import Any

from evalcore.metrics import MetricSpec
from evalplatform.charts import figure, no_value_note, scatter, time_axis
from series.selectors import MetricHistory, Point

LINE_COLOUR = "#2457c5"
BAND_COLOUR = "rgba(36, 87, 197, 0.15)"

#: The figures' height; the page's chart containers are as tall (`series_detail.html`).
HEIGHT = 260

#: What a chart whose every value is undefined says in place of empty axes.
NO_VALUE = "No value to plot yet: every observation's value is undefined<br>(each is listed in the table)."


def _has_ci(point: Point) -> bool:
    return point.ci_low is not None and point.ci_high is not None


def _runs(points: list[Point]) -> list[list[int]]:
    """The runs of consecutive observations with a CI that span two or more instants (the band's parts),
    as indices into `points`."""
    runs: list[list[int]] = []
    run: list[int] = []
    for i, point in enumerate([*points, None]):
        if point is not None and _has_ci(point):
            run.append(i)
            continue
        if len({points[j].observed_at for j in run}) >= 2:
            runs.append(run)
        run = []
    return runs


def _band(points: list[Point], runs: list[list[int]]) -> tuple[list[Any], list[float | None]]:
    """The confidence band's outline: one closed shape per run (lows forward, highs back), the runs apart
    (a gap between them: plotly closes each part on its own)."""
    x: list[Any] = []
    y: list[float | None] = []
    for run in runs:
        if x:
            x.append(None)
            y.append(None)
        x += [points[i].observed_at for i in run] + [points[i].observed_at for i in run[::-1]]
        y += [points[i].ci_low for i in run] + [points[i].ci_high for i in run[::-1]]
    return x, y


def _error_bars(points: list[Point], runs: list[list[int]]) -> dict[str, Any] | None:
    """The CIs no band reaches, as error bars on their observations' values (a single observation is one
    point with its interval, not three dots); None where there is none."""
    banded = {i for run in runs for i in run}
    above: list[float | None] = []
    below: list[float | None] = []
    for i, point in enumerate(points):
        value, low, high = point.value, point.ci_low, point.ci_high
        if i in banded or value is None or low is None or high is None:
            above.append(None)
            below.append(None)
        else:
            above.append(high - value)
            below.append(value - low)
    if all(bar is None for bar in above):
        return None
    return {"type": "data", "symmetric": False, "array": above, "arrayminus": below,
            "color": LINE_COLOUR, "thickness": 1.5, "width": 6}  # fmt: skip


def history_figure(history: MetricHistory, *, spec: MetricSpec) -> dict[str, Any]:
    """The metric's value per observation; its confidence interval, where the job computed one, as a band
    over consecutive observations and as an error bar where no band reaches (an observation alone with one). Undefined values
    leave a gap; a metric with no defined value says so instead of drawing empty axes. A single instant
    reads on a two-day time axis (`time_axis`)."""
    points = history.points
    times = [point.observed_at for point in points]
    data: list[dict[str, Any]] = []
    runs = _runs(points)
    band_x, band_y = _band(points, runs)
    if band_x:
        data.append(scatter(
            x=band_x, y=band_y, mode="lines", fill="toself", fillcolor=BAND_COLOUR,
            line={"width": 0}, hoverinfo="skip", name="confidence interval",
        ))  # fmt: skip
    line = scatter(
        mode="lines+markers", x=times, y=[p.value for p in points], name=history.metric,
        line={"color": LINE_COLOUR}, connectgaps=False, hovertemplate="%{x|%Y-%m-%d %H:%M}: %{y:.4g}<extra></extra>",
    )  # fmt: skip
    error_bars = _error_bars(points, runs)
    if error_bars is not None:
        line["error_y"] = error_bars
    data.append(line)
    axis: dict[str, Any] = {"title": {"text": spec.unit or spec.label}}
    low, high = spec.range or (None, None)
    if low is not None and high is not None:
        axis["range"] = [low, high]
    chart = {
        "height": HEIGHT, "margin": {"l": 60, "r": 20, "t": 20, "b": 40}, "showlegend": False,
        "font": {"family": "system-ui, sans-serif", "size": 12}, "xaxis": time_axis(times), "yaxis": axis,
        "paper_bgcolor": "white", "plot_bgcolor": "white",
    }  # fmt: skip
    if all(point.value is None for point in points):
        chart = no_value_note(chart, NO_VALUE)
    return figure(data, chart)
