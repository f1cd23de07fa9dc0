"""The embedding stream dashboard's figures, laid out on the server from stored rows (`monitoring.embeddings`).

A metric's time series over the snapshots' observed times, with each rule's threshold as a dashed line and a
marker where an alert opened; and the scree plot, the covariance eigenvalues of the latest snapshot and of
the reference on a log scale. Plain JSON for `json_script` (`evalplatform.charts`), drawn by the vendored
plotly.js; nothing is computed here beyond placing numbers the monitor runs stored.
"""

from __future__ import annotations

from typing import Any

from evalplatform.charts import figure, layout, no_value_note, scatter, time_axis
from monitoring.embeddings.services import MetricSeries
from monitoring.evaluations.selectors import MeasureColumn
from monitoring.models import MonitorRun

LINE_COLOUR = "#2457c5"
REFERENCE_COLOUR = "#7a8599"
THRESHOLD_COLOURS = {"critical": "#b3261e", "warning": "#c77700", "info": "#439fe0"}
ALERT_COLOUR = "#b3261e"

#: What a metric's chart says when every run left it undefined.
NO_VALUE = "No value to plot yet: every run left this metric undefined<br>(each is listed in the table)."


#: Every figure's height, margins and font.
LAYOUT: dict[str, Any] = {
    "height": 300,
    "margin": {"l": 60, "r": 20, "t": 40, "b": 40},
    "font": {"family": "system-ui, sans-serif", "size": 12},
    "legend": {"orientation": "h", "y": -0.2},
}


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    return layout(LAYOUT, title={"text": title, "font": {"size": 14}}, **extra)


def metric_series_figure(series: MetricSeries, *, column: MeasureColumn) -> dict[str, Any]:
    """The metric per monitor run over observed time; the reference's own run as a grey diamond; each rule's
    threshold as a dashed line in its severity's colour; a red triangle where an alert opened. A single
    instant reads on a two-day time axis (`time_axis`), the thresholds across it; a metric with no defined
    value says so instead of drawing empty axes."""
    points = series.points
    times = [point.observed_at for point in points]
    axis = time_axis([*times, *(event.observed_at for event in series.events)])
    traces = [
        scatter(
            x=times,
            y=[point.value for point in points],
            mode="lines+markers",
            name=series.metric,
            line={"color": LINE_COLOUR},
            marker={
                "color": [REFERENCE_COLOUR if p.is_reference else LINE_COLOUR for p in points],
                "symbol": ["diamond" if p.is_reference else "circle" for p in points],
                "size": 7,
            },
            customdata=[[p.label, "reference" if p.is_reference else "snapshot"] for p in points],
            hovertemplate="%{x|%Y-%m-%d %H:%M}: %{y:.4g}<br>%{customdata[1]} %{customdata[0]}<extra></extra>",
        )
    ]
    if times:
        traces += [
            scatter(
                x=axis.get("range", [min(times), max(times)]),
                y=[rule.threshold, rule.threshold],
                mode="lines",
                name=f"{rule.name}: {rule.comparator} {rule.threshold:g}",
                line={
                    "color": THRESHOLD_COLOURS.get(rule.severity, ALERT_COLOUR),
                    "dash": "dash",
                    "width": 1.5,
                },
                hoverinfo="name",
            )
            for rule in series.rules
        ]
    if series.events:
        traces.append(
            scatter(
                x=[event.observed_at for event in series.events],
                y=[event.value for event in series.events],
                mode="markers",
                name="alert opened",
                marker={"symbol": "triangle-up", "size": 13, "color": ALERT_COLOUR,
                        "line": {"color": "#fff", "width": 1}},
                customdata=[[event.rule.name, event.status] for event in series.events],
                hovertemplate="%{customdata[0]} opened at %{y:.4g} (%{customdata[1]})<extra></extra>",
            )
        )  # fmt: skip
    chart = _layout(
        column.title,
        xaxis=axis,
        yaxis={
            "title": {"text": column.key},
            "rangemode": "tozero" if _non_negative(column) else "normal",
        },
        showlegend=bool(series.rules or series.events),
    )
    if all(point.value is None for point in points):
        chart = no_value_note(chart, NO_VALUE)
    return figure(traces, chart)


def _non_negative(column: MeasureColumn) -> bool:
    return column.range is not None and column.range[0] is not None and column.range[0] >= 0


def _positive(values: list[float]) -> list[float | None]:
    """Log axes cannot show 0: an eigenvalue of 0 (a dead direction) leaves a gap, and the table shows it."""
    return [value if value > 0 else None for value in values]


def _ranks(ranks: list[int]) -> list[int]:
    """Ticks at 1, 2, 5, 10, 20, 50, ... up to the dimension."""
    top = max(ranks, default=1)
    return [step * 10**power for power in range(7) for step in (1, 2, 5) if step * 10**power <= top]


def spectrum_figure(run: MonitorRun) -> dict[str, Any]:
    """The scree: eigenvalue against rank, both on log scales, of the snapshot and of its reference."""
    spectrum = run.spectrum
    traces = []
    if "reference" in spectrum:
        traces.append(
            scatter(
                x=spectrum["rank"],
                y=_positive(spectrum["reference"]),
                mode="lines+markers",
                name=f"reference ({run.reference.label if run.reference else ''})",
                line={"color": REFERENCE_COLOUR, "dash": "dot"},
                marker={"size": 4},
                hovertemplate="rank %{x}: %{y:.4g}<extra>reference</extra>",
            )
        )
    traces.append(
        scatter(
            x=spectrum["rank"],
            y=_positive(spectrum["current"]),
            mode="lines+markers",
            name=f"snapshot {run.snapshot.label} ({run.observed_at:%Y-%m-%d %H:%M})",
            line={"color": LINE_COLOUR},
            marker={"size": 4},
            hovertemplate="rank %{x}: %{y:.4g}<extra>snapshot</extra>",
        )
    )
    return figure(
        traces,
        _layout(
            "Covariance eigenvalues by rank (scree)",
            height=380,
            xaxis={"type": "log", "title": {"text": "rank"}, "tickvals": _ranks(spectrum["rank"])},
            yaxis={
                "type": "log",
                "title": {"text": "eigenvalue (variance along the direction)"},
                "exponentformat": "power",
            },
        ),
    )
