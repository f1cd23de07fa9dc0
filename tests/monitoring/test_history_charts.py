"""The dashboards' charts over time as figure JSON (`evalplatform.charts.time_axis` and `no_value_note`):
a fraud or recommendation set's headline metrics and an embedding stream's metric read on a two-day time
axis when they have a single observation time, and say there is no value yet when every one is undefined."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from monitoring.alerts.models import AlertRule
from monitoring.embeddings.charts import NO_VALUE as STREAM_NO_VALUE
from monitoring.embeddings.charts import metric_series_figure
from monitoring.embeddings.selectors import MetricSeries, SeriesPoint
from monitoring.evaluations.selectors import measure_column
from monitoring.recsys_fraud import charts
from monitoring.recsys_fraud.selectors import HistoryPoint, specs

AT = datetime(2026, 11, 28, 13, 37, 11, 596000, tzinfo=UTC)
HEADLINE = ("detection_rate", "roc_auc", "total_cost")
DAY_EITHER_SIDE = [(AT - timedelta(days=1)).isoformat(), (AT + timedelta(days=1)).isoformat()]


def checked(built: dict[str, Any]) -> dict[str, Any]:
    json.dumps(built, allow_nan=False)
    return built


class TestSetHistory:
    def test_one_evaluation_reads_on_a_day_either_side(self) -> None:
        built = checked(charts.history_figure(specs(HEADLINE), [HistoryPoint(AT, [0.46, 0.95, 26103.8])]))
        xaxis = built["layout"]["xaxis"]
        assert xaxis["type"] == "date" and xaxis["range"] == DAY_EITHER_SIDE
        assert xaxis["title"] == {"text": "evaluated at"}
        assert [trace["y"] for trace in built["data"]] == [[0.46], [0.95], [26103.8]]
        assert "annotations" not in built["layout"]

    def test_several_evaluations_keep_plotlys_range(self) -> None:
        points = [HistoryPoint(AT, [0.4, 0.9, 1.0]), HistoryPoint(AT + timedelta(hours=2), [0.5, 0.9, 2.0])]
        assert "range" not in checked(charts.history_figure(specs(HEADLINE), points))["layout"]["xaxis"]

    def test_every_value_undefined_says_so_on_every_axis(self) -> None:
        built = checked(charts.history_figure(specs(HEADLINE), [HistoryPoint(AT, [None, None, None])]))
        layout = built["layout"]
        assert (
            not layout["xaxis"]["visible"]
            and not layout["yaxis"]["visible"]
            and not layout["yaxis2"]["visible"]
        )
        assert [note["text"] for note in layout["annotations"]] == [charts.NO_VALUE]


def stream(values: list[float | None], times: list[datetime], **extra: Any) -> MetricSeries:
    points = [SeriesPoint(i, at, f"s{i}", False, value) for i, (at, value) in enumerate(zip(times, values, strict=True))]  # fmt: skip
    return MetricSeries(metric="mean_norm", section="current", points=points, **extra)


class TestStreamMetric:
    def test_one_run_reads_on_a_day_either_side_with_the_thresholds_across_it(self) -> None:
        rule = AlertRule(name="floor", comparator="<", threshold=0.2, severity="warning")
        built = checked(
            metric_series_figure(stream([0.5], [AT], rules=[rule]), column=measure_column("mean_norm"))
        )
        assert built["layout"]["xaxis"] == {"type": "date", "range": DAY_EITHER_SIDE}
        line, threshold = built["data"]
        assert line["y"] == [0.5] and threshold["x"] == DAY_EITHER_SIDE and threshold["y"] == [0.2, 0.2]

    def test_several_runs_keep_plotlys_range_and_the_thresholds_span_the_runs(self) -> None:
        rule = AlertRule(name="floor", comparator="<", threshold=0.2, severity="warning")
        times = [AT, AT + timedelta(days=3)]
        built = checked(
            metric_series_figure(stream([0.5, 0.4], times, rules=[rule]), column=measure_column("x"))
        )
        assert built["layout"]["xaxis"] == {"type": "date"}
        assert built["data"][1]["x"] == [at.isoformat() for at in times]

    def test_every_value_undefined_says_so(self) -> None:
        built = checked(metric_series_figure(stream([None, None], [AT, AT + timedelta(days=1)]), column=measure_column("x")))  # fmt: skip
        assert built["layout"]["xaxis"]["visible"] is False
        assert [note["text"] for note in built["layout"]["annotations"]] == [STREAM_NO_VALUE]
