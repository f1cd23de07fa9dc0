"""The charts toolkit: figures as plain JSON data (no NaN, no numpy, no datetime reaches JSON), the
template named by each figure and held once by the page, and times written as the templates write them."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import numpy as np
from django.template import Context, Template
from django.utils import timezone

from evalplatform.charts import (
    INSTANT_SPAN,
    TEMPLATE,
    TimeLabels,
    bar,
    figure,
    layout,
    no_value_note,
    plain,
    plotly_template,
    scatter,
    time_axis,
)


class TestPlain:
    def test_it_turns_numpy_and_datetimes_into_json_values(self) -> None:
        at = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
        data = {
            "x": np.array([1.0, np.nan, np.inf]), "n": np.arange(3), "s": np.float32(0.5), "i": np.int64(7),
            "t": (at, date(2026, 3, 2)), "nested": [[float("nan"), 2.0], {"b": np.bool_(True)}],
        }  # fmt: skip
        assert plain(data) == {
            "x": [1.0, None, None], "n": [0, 1, 2], "s": 0.5, "i": 7,
            "t": ["2026-03-02T09:30:00+00:00", "2026-03-02"], "nested": [[None, 2.0], {"b": True}],
        }  # fmt: skip
        json.dumps(plain(data), allow_nan=False)

    def test_it_leaves_finite_values_and_text_as_they_are(self) -> None:
        assert plain({"y": [0.25, -3, None, "a"], "z": np.array([[1.5, 2.5]])}) == {
            "y": [0.25, -3, None, "a"],
            "z": [[1.5, 2.5]],
        }


class TestFigure:
    def test_it_builds_plain_traces_and_a_layout_naming_the_template(self) -> None:
        built = figure(
            [scatter(x=np.array([1, 2]), y=[0.5, float("nan")], mode="lines"), bar(x=["a"], y=[1])],
            layout({"height": 300, "margin": {"l": 1}}, height=200, title={"text": "t"}),
        )
        assert built == {
            "data": [
                {"type": "scatter", "x": [1, 2], "y": [0.5, None], "mode": "lines"},
                {"type": "bar", "x": ["a"], "y": [1]},
            ],
            "layout": {"template": TEMPLATE, "height": 200, "margin": {"l": 1}, "title": {"text": "t"}},
        }
        json.dumps(built, allow_nan=False)

    def test_it_copies_the_shared_layout_defaults(self) -> None:
        defaults = {"margin": {"l": 1}}
        built = figure([], layout(defaults))
        built["layout"]["margin"]["l"] = 99
        assert defaults == {"margin": {"l": 1}}


class TestTimeAxis:
    def test_it_spreads_a_single_instant_over_a_day_either_side(self) -> None:
        at = datetime(2026, 11, 28, 13, 37, 30, 562000, tzinfo=UTC)
        for times in ([at], [at, at, at]):
            axis = figure([], {"xaxis": time_axis(times, title={"text": "t"})})["layout"]["xaxis"]
            assert axis == {
                "type": "date", "title": {"text": "t"},
                "range": ["2026-11-27T13:37:30.562000+00:00", "2026-11-29T13:37:30.562000+00:00"],
            }  # fmt: skip
        assert timedelta(days=1) == INSTANT_SPAN

    def test_it_leaves_plotly_its_own_range_over_several_instants_or_none(self) -> None:
        at = datetime(2026, 11, 28, 13, 37, tzinfo=UTC)
        assert time_axis([at, at + timedelta(seconds=20)]) == {"type": "date"}
        assert time_axis([]) == {"type": "date"}
        assert time_axis([at], range=["a", "b"]) == {"type": "date", "range": ["a", "b"]}


class TestNoValueNote:
    def test_it_hides_every_axis_and_says_why_in_their_place(self) -> None:
        chart = {"height": 260, "xaxis": {"type": "date"}, "yaxis": {"range": [0, 1]}, "yaxis2": {"side": "right"},
                 "annotations": [{"text": "kept"}]}  # fmt: skip
        noted = no_value_note(chart, "No value to plot yet")
        assert noted["xaxis"] == {"type": "date", "visible": False}
        assert noted["yaxis"] == {"range": [0, 1], "visible": False}
        assert noted["yaxis2"] == {"side": "right", "visible": False}
        assert noted["height"] == 260 and noted["annotations"][0] == {"text": "kept"}
        note = noted["annotations"][1]
        assert note["text"] == "No value to plot yet" and (note["xref"], note["yref"], note["x"], note["y"]) == (
            "paper", "paper", 0.5, 0.5,
        )  # fmt: skip
        assert chart["xaxis"] == {"type": "date"}  # the layout given is left as it was

    def test_it_hides_axes_a_layout_leaves_to_plotly(self) -> None:
        noted = no_value_note({}, "none")
        assert noted["xaxis"] == noted["yaxis"] == {"visible": False}


class TestPage:
    def test_it_puts_the_template_in_the_page_once(self) -> None:
        page = Template("{% load charts %}{% plotly_script %}").render(Context())
        assert page.count('<script id="plotly-templates" type="application/json">') == 1
        block = page.split('type="application/json">')[1].split("</script>")[0]
        assert json.loads(block) == {TEMPLATE: plotly_template()}
        assert "/static/evalplatform/charts.js" in page

    def test_it_leaves_the_template_out_for_figures_naming_none(self) -> None:
        page = Template("{% load charts %}{% plotly_script templates=False %}").render(Context())
        assert "plotly-templates" not in page and "/static/evalplatform/charts.js" in page


class TestTimeLabels:
    def test_it_writes_times_as_the_date_filter_does_in_the_current_time_zone(self) -> None:
        times = [datetime(2026, 3, 2, 23, 30, tzinfo=UTC), datetime(2026, 7, 1, 0, 5, tzinfo=UTC)]
        for zone in ("UTC", "Europe/Paris", "America/New_York"):
            with timezone.override(zone):
                labels = TimeLabels()
                expected = [Template('{{ at|date:"Y-m-d H:i" }}').render(Context({"at": at})) for at in times]
                assert [labels(at) for at in times + times] == expected + expected
