"""A series' metric over time as figure JSON: a single observation on a readable time axis, with its CI
as an error bar on the one point (not three dots); CIs as a band over consecutive observations; a metric
whose every value is undefined says so in place of empty axes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from evalcore.metrics import metric_registry
from series.charts import HEIGHT, NO_VALUE, history_figure
from series.selectors import MetricHistory, Point

AT = datetime(2026, 11, 28, 13, 37, 30, 562000, tzinfo=UTC)


Values = tuple[float | None, float | None, float | None]


def chart(*values: Values, at: list[datetime] | None = None) -> dict[str, Any]:
    """The figure of nDCG@10 over observations a day apart (or at `at`), each (value, ci_low, ci_high)."""
    times = at or [AT + timedelta(days=i) for i in range(len(values))]
    points = [Point(time, "evaluation", i, *value) for i, (time, value) in enumerate(zip(times, values, strict=True))]  # fmt: skip
    built = history_figure(MetricHistory("nDCG@10", "", points), spec=metric_registry().resolve("nDCG@10"))
    json.dumps(built, allow_nan=False)
    return built


def iso(at: datetime) -> str:
    return at.isoformat()


class TestSingleObservation:
    def test_its_time_axis_spans_a_day_either_side_not_a_millisecond(self) -> None:
        xaxis = chart((0.5146, 0.334, 0.695))["layout"]["xaxis"]
        assert xaxis == {"type": "date", "range": [iso(AT - timedelta(days=1)), iso(AT + timedelta(days=1))]}

    def test_its_ci_is_an_error_bar_on_the_one_point(self) -> None:
        (trace,) = chart((0.5146, 0.334, 0.695))["data"]  # no band: one trace, one point
        assert trace["x"] == [iso(AT)] and trace["y"] == [0.5146]
        error = trace["error_y"]
        assert error["type"] == "data" and error["symmetric"] is False
        assert error["array"] == [0.695 - 0.5146] and error["arrayminus"] == [0.5146 - 0.334]

    def test_without_a_ci_it_is_one_point_alone(self) -> None:
        (trace,) = chart((0.5, None, None))["data"]
        assert trace["y"] == [0.5] and "error_y" not in trace

    def test_observations_at_one_instant_read_as_one(self) -> None:
        built = chart((0.5, 0.4, 0.6), (0.5, 0.4, 0.6), at=[AT, AT])
        assert built["layout"]["xaxis"]["range"] == [iso(AT - timedelta(days=1)), iso(AT + timedelta(days=1))]
        (trace,) = built["data"]  # a band of no width would hide the intervals: error bars instead
        assert trace["error_y"]["array"] == pytest.approx([0.1, 0.1])


class TestSeveralObservations:
    def test_the_ci_is_a_band_without_markers_and_plotly_ranges_the_times(self) -> None:
        built = chart((0.6, 0.5, 0.7), (0.55, 0.45, 0.65), (0.4, 0.3, 0.5))
        band, line = built["data"]
        assert band["fill"] == "toself" and band["mode"] == "lines"
        days = [iso(AT + timedelta(days=i)) for i in range(3)]
        assert band["x"] == days + days[::-1] and band["y"] == [0.5, 0.45, 0.3, 0.5, 0.65, 0.7]
        assert line["y"] == [0.6, 0.55, 0.4] and "error_y" not in line
        assert built["layout"]["xaxis"] == {"type": "date"}
        assert built["layout"]["height"] == HEIGHT and not built["layout"].get("annotations")

    def test_a_band_per_run_of_cis_and_an_error_bar_where_none_reaches(self) -> None:
        built = chart((0.6, 0.5, 0.7), (0.55, 0.45, 0.65), (None, None, None), (0.4, 0.3, 0.5))
        band, line = built["data"]
        days = [iso(AT + timedelta(days=i)) for i in range(4)]
        assert band["x"] == days[:2] + days[1::-1] and band["y"] == [0.5, 0.45, 0.65, 0.7]
        assert line["y"] == [0.6, 0.55, None, 0.4]
        assert line["error_y"]["array"][:3] == line["error_y"]["arrayminus"][:3] == [None, None, None]
        assert line["error_y"]["array"][3] == pytest.approx(0.1) == line["error_y"]["arrayminus"][3]

    def test_two_runs_of_cis_are_two_closed_parts_of_the_band(self) -> None:
        values = [(0.6, 0.5, 0.7), (0.6, 0.5, 0.7), (None, None, None), (0.4, 0.3, 0.5), (0.4, 0.3, 0.5)]
        band = chart(*values)["data"][0]
        days = [iso(AT + timedelta(days=i)) for i in range(5)]
        assert band["x"] == [days[0], days[1], days[1], days[0], None, days[3], days[4], days[4], days[3]]
        assert band["y"] == [0.5, 0.5, 0.7, 0.7, None, 0.3, 0.3, 0.5, 0.5]


class TestEveryValueUndefined:
    def test_it_says_there_is_no_value_yet_in_place_of_empty_axes(self) -> None:
        built = chart((None, None, None), (None, None, None), (None, None, None))
        layout = built["layout"]
        assert layout["xaxis"]["visible"] is False and layout["yaxis"]["visible"] is False
        (note,) = layout["annotations"]
        assert note["text"] == NO_VALUE and "undefined" in note["text"] and "table" in note["text"]
        assert built["data"][-1]["y"] == [None, None, None]

    def test_a_single_undefined_value_says_so_too(self) -> None:
        assert chart((None, None, None))["layout"]["annotations"][0]["text"] == NO_VALUE
