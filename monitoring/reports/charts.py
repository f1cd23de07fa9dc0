"""The figures only a report draws (the others are the pages' own, `monitoring.evaluations.charts` and
`monitoring.embeddings.charts`): plain JSON data for `json_script`, nothing computed beyond placing stored numbers."""

from __future__ import annotations

from typing import Any

from evalplatform.charts import bar, figure, layout
from monitoring.embeddings.services import MetricSeries
from monitoring.evaluations.charts import BAR_COLOUR, LAYOUT, _above, _below, _value_axis
from monitoring.evaluations.selectors import MeasureColumn, RunSummaryRow


def means_figure(rows: list[RunSummaryRow], *, column: MeasureColumn) -> dict[str, Any]:
    """Each run's mean of one measure with its bootstrap CI as error bars (the table beside has them)."""
    return figure(
        [
            bar(
                x=[row.run.label for row in rows],
                y=[row.mean for row in rows],
                marker={"color": BAR_COLOUR},
                error_y={"type": "data", "symmetric": False, "array": [_above(_Result(r)) for r in rows],
                         "arrayminus": [_below(_Result(r)) for r in rows], "color": "#1d2330", "thickness": 1.5},
                hovertemplate="<b>%{x}</b><br>" + column.key + " %{y:.4f}<extra></extra>",
            )
        ],
        layout(
            LAYOUT,
            title={"text": f"{column.title}: mean per run, with bootstrap CIs"},
            yaxis=_value_axis(column),
            xaxis={"title": {"text": "run"}, "type": "category"},
        ),
    )  # fmt: skip


class _Result:
    """A summary row read as the error bars read a measure's result (value, ci_low, ci_high)."""

    def __init__(self, row: RunSummaryRow) -> None:
        self.value, self.ci_low, self.ci_high = row.mean, row.ci_low, row.ci_high


def series_until(series: MetricSeries, *, observed_at: Any, points: int) -> MetricSeries:
    """The series as it stood at a run: its points and events up to `observed_at`, the last `points` of
    them (a report's chart stays small however long the stream has run)."""
    kept = [point for point in series.points if point.observed_at <= observed_at][-points:]
    start = kept[0].observed_at if kept else observed_at
    return MetricSeries(
        metric=series.metric,
        section=series.section,
        points=kept,
        rules=list(series.rules),
        events=[event for event in series.events if start <= event.observed_at <= observed_at],
    )
