"""The charts toolkit: figures as plain JSON data (no NaN, no numpy, no datetime reaches JSON), the
template named by each figure and held once by the page, and times written as the templates write them."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import numpy as np
from django.template import Context, Template
from django.utils import timezone

from evalplatform.charts import TEMPLATE, TimeLabels, bar, figure, layout, plain, plotly_template, scatter


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
