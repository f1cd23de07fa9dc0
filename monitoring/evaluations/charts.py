"""The evaluation dashboards' figures, laid out on the server from stored rows (`monitoring.evaluations.selectors`).

Each function returns plain JSON data (`evalplatform.charts.figure`) for `json_script`; the page
draws it with the vendored plotly.js. Axis titles and ranges come from the metric registry (through
`MeasureColumn`); nothing is computed here beyond placing numbers already stored.
"""

from __future__ import annotations

from typing import Any

from evalplatform.charts import bar, figure, layout
from monitoring.evaluations.selectors import HistogramBin, LeaderboardRow, MeasureColumn, QueryDifference
from monitoring.models import ComparisonPair, Run

BAR_COLOUR = "#2457c5"
WIN_COLOUR = "#1b7f3b"
LOSS_COLOUR = "#b3261e"
TIE_COLOUR = "#9aa3b2"


#: Every figure's height, margins and font.
LAYOUT: dict[str, Any] = {
    "height": 400,
    "margin": {"l": 60, "r": 20, "t": 50, "b": 80},
    "font": {"family": "system-ui, sans-serif", "size": 13},
}


def _layout(**extra: Any) -> dict[str, Any]:
    return layout(LAYOUT, **extra)


def _value_axis(column: MeasureColumn, **extra: Any) -> dict[str, Any]:
    """An axis of the measure's values: its registry range where both ends are known."""
    axis: dict[str, Any] = {"title": {"text": column.title}, **extra}
    if column.range is not None and None not in column.range:
        low, high = column.range
        pad = 0.04 * (float(high) - float(low))  # type: ignore[arg-type]
        axis["range"] = [float(low) - pad, float(high) + pad]  # type: ignore[arg-type]
    return axis


def leaderboard_figure(rows: list[LeaderboardRow], *, column: MeasureColumn) -> dict[str, Any]:
    """One bar per run (in the leaderboard's order) of the measure, with its bootstrap CI as error bars."""
    results = [row.results.get(column.key) for row in rows]
    values = [r.value if r else None for r in results]
    return figure(
        [
            bar(
                x=[row.run.label for row in rows],
                y=values,
                marker={"color": BAR_COLOUR},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [_above(r) for r in results],
                    "arrayminus": [_below(r) for r in results],
                    "color": "#1d2330",
                    "thickness": 1.5,
                },
                customdata=[[r.ci_low if r else None, r.ci_high if r else None] for r in results],
                hovertemplate="<b>%{x}</b><br>" + column.key + " %{y:.4f}"
                "<br>CI [%{customdata[0]:.4f}, %{customdata[1]:.4f}]<extra></extra>",
            )
        ],
        _layout(
            title={"text": f"{column.title} per run, with bootstrap CIs"},
            yaxis=_value_axis(column),
            xaxis={"title": {"text": "run"}, "type": "category"},
        ),
    )


def _above(result: Any) -> float | None:
    if result is None or result.value is None or result.ci_high is None:
        return None
    return max(0.0, result.ci_high - result.value)


def _below(result: Any) -> float | None:
    if result is None or result.value is None or result.ci_low is None:
        return None
    return max(0.0, result.value - result.ci_low)


#: An axis of whole numbers spanning at most this many units ticks every unit (plotly would tick every
#: half unit, or finer, on a short one); a longer one keeps plotly's ticks, which are then whole numbers.
UNIT_TICKS_UP_TO = 10


def _whole_number_ticks(span: float) -> dict[str, Any]:
    """Tick settings of an axis whose values are whole numbers: labels without decimals, and one tick per
    unit where plotly's own choice could fall between them."""
    return {"tickformat": "d", **({"tick0": 0, "dtick": 1} if span <= UNIT_TICKS_UP_TO else {})}


def histogram_figure(
    bins: list[HistogramBin], *, column: MeasureColumn, run: Run, integers: bool = False
) -> dict[str, Any]:
    """How many queries fall in each bin of the measure's range (bins as in the table beside).

    The count axis ticks whole numbers; so does the value axis where the values are (`integers`: a count
    measure, or one that is 0 or 1 per query), a continuous measure's keeping plotly's ticks.
    """
    span = bins[-1].high - bins[0].low if bins else 0.0
    top = max((b.count for b in bins), default=0)
    x_ticks = _whole_number_ticks(span) if integers else {}
    return figure(
        [
            bar(
                x=[(b.low + b.high) / 2 for b in bins],
                y=[b.count for b in bins],
                width=[(b.high - b.low) or 0.02 for b in bins],
                marker={"color": BAR_COLOUR, "line": {"color": "#ffffff", "width": 1}},
                customdata=[[b.low, b.high] for b in bins],
                hovertemplate="[%{customdata[0]:.3g}, %{customdata[1]:.3g}]: %{y} queries<extra></extra>",
            )
        ],
        _layout(
            title={"text": f"Per-query {column.title} of {run.label}"},
            xaxis=_value_axis(column, **x_ticks),
            yaxis={"title": {"text": "queries"}, "rangemode": "tozero", **_whole_number_ticks(top)},
            bargap=0,
        ),
    )


def differences_figure(
    differences: list[QueryDifference], *, column: MeasureColumn, a: Run, b: Run
) -> dict[str, Any]:
    """Per query, run a minus run b, sorted: wins of a in green, losses in red, ties in grey."""
    colours = [
        WIN_COLOUR if row.diff > 0 else LOSS_COLOUR if row.diff < 0 else TIE_COLOUR for row in differences
    ]
    return figure(
        [
            bar(
                x=[row.qid for row in differences],
                y=[row.diff for row in differences],
                marker={"color": colours},
                customdata=[[row.a, row.b] for row in differences],
                hovertemplate="query %{x}: %{y:+.4f}<br>"
                + f"{a.label} %{{customdata[0]:.4f}}, {b.label} %{{customdata[1]:.4f}}<extra></extra>",
            )
        ],
        _layout(
            title={"text": f"{column.key}: {a.label} minus {b.label}, per query"},
            xaxis={"title": {"text": "query (sorted by difference)"}, "type": "category", "showticklabels": len(differences) <= 60},
            yaxis={"title": {"text": f"difference in {column.key}"}, "zeroline": True},
            bargap=0.1,
        ),
    )  # fmt: skip


def pairs_figure(
    pairs: list[ComparisonPair], *, column: MeasureColumn, runs: dict[int, Run]
) -> dict[str, Any]:
    """The mean difference of every pair of runs on one measure, dark where significant after correction."""
    return figure(
        [
            bar(
                x=[f"{runs[pair.run_a_id].label} − {runs[pair.run_b_id].label}" for pair in pairs],
                y=[pair.diff for pair in pairs],
                marker={"color": [BAR_COLOUR if pair.significant else "#b8c7ea" for pair in pairs]},
                customdata=[
                    [pair.p_value, pair.p_adjusted, "yes" if pair.significant else "no"] for pair in pairs
                ],
                hovertemplate="%{x}: %{y:+.4f}<br>p %{customdata[0]:.3g}, corrected %{customdata[1]:.3g}"
                "<br>significant: %{customdata[2]}<extra></extra>",
            )
        ],
        _layout(
            title={"text": f"Mean difference in {column.key} per pair of runs"},
            xaxis={"title": {"text": "pair (a − b)"}, "type": "category"},
            yaxis={"title": {"text": f"difference in {column.key}"}, "zeroline": True},
        ),
    )


OLD_COLOUR = "#9aa3b2"


def leaderboard_diff_figure(diff: Any, *, column: MeasureColumn, old: str, new: str) -> dict[str, Any]:
    """Per run (in the diff's order: new rank first), its old and new value of the measure side by side,
    each with its bootstrap CI (`monitoring.evaluations.diffs.MeasureDiff`; the table beside has the
    numbers)."""
    names = [row.run.label for row in diff.rows]

    def trace(name: str, results: list[Any], colour: str) -> dict[str, Any]:
        return bar(
            name=name,
            x=names,
            y=[r.value if r else None for r in results],
            marker={"color": colour},
            error_y={"type": "data", "symmetric": False, "array": [_above(r) for r in results],
                     "arrayminus": [_below(r) for r in results], "color": "#1d2330", "thickness": 1.5},
            hovertemplate="<b>%{x}</b><br>" + name + ": " + column.key + " %{y:.4f}<extra></extra>",
        )  # fmt: skip

    return figure(
        [
            trace(old, [row.old for row in diff.rows], OLD_COLOUR),
            trace(new, [row.new for row in diff.rows], BAR_COLOUR),
        ],
        _layout(
            title={"text": f"{column.title}: {old} → {new}"},
            barmode="group",
            yaxis=_value_axis(column),
            xaxis={"title": {"text": "run (by new rank)"}, "type": "category"},
        ),
    )
