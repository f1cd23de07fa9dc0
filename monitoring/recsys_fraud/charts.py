"""The recommendation and fraud dashboards' figures, laid out on the server from the curves the jobs stored
(`monitoring.recsys_fraud.curves`).

Each function returns plain JSON data (`evalplatform.charts.figure`) for `json_script`; the page
draws it with the vendored plotly.js. Nothing is computed here beyond placing stored numbers (and the
shares of a histogram's counts).
"""

from __future__ import annotations

from typing import Any

from evalcore.metrics import MetricSpec
from evalplatform.charts import bar, figure, layout, no_value_note, scatter, time_axis, vline, vline_label

LINE_COLOUR = "#2457c5"
SECOND_COLOUR = "#e07b00"
POINT_COLOUR = "#b3261e"
REFERENCE_COLOUR = "#9aa3b2"


#: Every figure's height, margins and font.
LAYOUT: dict[str, Any] = {
    "height": 420,
    "margin": {"l": 70, "r": 20, "t": 50, "b": 110},
    "font": {"family": "system-ui, sans-serif", "size": 13},
    "legend": {"orientation": "h", "y": -0.32, "x": 0},
}


def _layout(**extra: Any) -> dict[str, Any]:
    return layout(LAYOUT, **extra)


def _unit_axis(title: str) -> dict[str, Any]:
    return {"title": {"text": title}, "range": [-0.02, 1.02], "zeroline": False}


def _reference(x: list[float], y: list[float], name: str) -> dict[str, Any]:
    return scatter(x=x, y=y, mode="lines", name=name, line={"color": REFERENCE_COLOUR, "dash": "dash"},
                   hoverinfo="skip")  # fmt: skip


def _marker(x: float | None, y: float | None, name: str, text: str) -> dict[str, Any]:
    return scatter(
        x=[x], y=[y], mode="markers", name=name, hovertemplate=text + "<extra></extra>",
        marker={"color": POINT_COLOUR, "size": 12, "symbol": "diamond", "line": {"color": "#ffffff", "width": 1}},
    )  # fmt: skip


def _share(counts: list[int]) -> list[float]:
    total = sum(counts)
    return [count / total if total else 0.0 for count in counts]


def popularity_label(low: float, high: float) -> str:
    """A doubling popularity bin as people read it: 0, 1, 2-3, 4-7 interactions."""
    low_i, high_i = int(low), int(high) - 1
    return str(low_i) if high_i <= low_i else f"{low_i}–{high_i}"


# --- recommendations ----------------------------------------------------------------------------------


def lorenz_figure(lorenz: dict[str, Any], *, gini: float | None) -> dict[str, Any]:
    """The Lorenz curve of exposure (items from the least to the most recommended) against equality."""
    title = "Lorenz curve of exposure" + (f" (Gini {gini:.3f})" if gini is not None else "")
    return figure(
        [
            _reference([0, 1], [0, 1], "equal exposure"),
            scatter(
                x=lorenz["items"], y=lorenz["exposure"], mode="lines", name="recommendations",
                line={"color": LINE_COLOUR, "width": 2.5}, fill="tonexty", fillcolor="rgba(36, 87, 197, 0.12)",
                hovertemplate="the least recommended %{x:.1%} of the catalog<br>get %{y:.2%} of the slots"
                "<extra></extra>",
            ),
        ],
        _layout(
            title={"text": title},
            xaxis=_unit_axis("share of catalog items, least recommended first"),
            yaxis=_unit_axis("share of recommended slots"),
        ),
    )  # fmt: skip


def popularity_figure(histogram: dict[str, Any]) -> dict[str, Any]:
    """Per popularity bin, the share of the catalog's items and the share of the recommended slots."""
    edges = histogram["edges"]
    labels = [popularity_label(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]
    return figure(
        [
            bar(x=labels, y=_share(histogram["catalog_items"]), name="catalog items", marker={"color": REFERENCE_COLOUR},
                customdata=histogram["catalog_items"],
                hovertemplate="%{x} interactions: %{y:.1%} of the catalog (%{customdata} items)<extra></extra>"),
            bar(x=labels, y=_share(histogram["slots"]), name="recommended slots", marker={"color": LINE_COLOUR},
                customdata=histogram["slots"],
                hovertemplate="%{x} interactions: %{y:.1%} of the slots (%{customdata})<extra></extra>"),
        ],
        _layout(
            title={"text": "Popularity of recommended versus catalog items"},
            xaxis={"title": {"text": "item popularity (interactions)"}, "type": "category"},
            yaxis={"title": {"text": "share"}, "tickformat": ".0%", "rangemode": "tozero"},
            barmode="group",
        ),
    )  # fmt: skip


# --- fraud --------------------------------------------------------------------------------------------


def _operating_text(operating: dict[str, Any]) -> str:
    if operating["flags_nothing"]:
        return "operating point: flags nothing"
    return f"operating point: score ≥ {operating['threshold']:.4g}"


def roc_figure(roc: dict[str, Any], *, operating: dict[str, Any], target_fpr: float) -> dict[str, Any]:
    """The ROC curve, the target FPR as a vertical line and the operating point marked."""
    return figure(
        [
            _reference([0, 1], [0, 1], "random scores"),
            scatter(
                x=roc["fpr"], y=roc["tpr"], mode="lines", name="ROC curve", line={"color": LINE_COLOUR, "width": 2.5},
                customdata=roc["threshold"],
                hovertemplate="FPR %{x:.4f}, TPR %{y:.4f}<br>score ≥ %{customdata:.4g}<extra></extra>",
            ),
            _marker(operating["fpr"], operating["tpr"], _operating_text(operating), "FPR %{x:.4f}, TPR %{y:.4f}"),
        ],
        _layout(
            title={"text": "ROC curve"},
            xaxis=_unit_axis("false positive rate"),
            yaxis=_unit_axis("true positive rate (detection rate)"),
            shapes=[vline(target_fpr, line={"color": SECOND_COLOUR, "dash": "dot"})],
            annotations=[vline_label(target_fpr, f"target FPR {target_fpr:g}")],
        ),
    )  # fmt: skip


def pr_figure(pr: dict[str, Any], *, operating: dict[str, Any], fraud_rate: float | None) -> dict[str, Any]:
    """The precision-recall curve, the fraud rate (a random model's precision) and the operating point."""
    traces = [
        scatter(
            x=pr["recall"], y=pr["precision"], mode="lines", name="PR curve",
            line={"color": LINE_COLOUR, "width": 2.5, "shape": "vh"}, customdata=pr["threshold"],
            hovertemplate="recall %{x:.4f}, precision %{y:.4f}<br>score ≥ %{customdata:.4g}<extra></extra>",
        ),
        _marker(operating["tpr"], operating["precision"], _operating_text(operating),
                "recall %{x:.4f}, precision %{y:.4f}"),
    ]  # fmt: skip
    if fraud_rate is not None:
        traces.insert(0, _reference([0, 1], [fraud_rate, fraud_rate], f"fraud rate {fraud_rate:.2%}"))
    return figure(
        traces,
        _layout(
            title={"text": "Precision-recall curve"},
            xaxis=_unit_axis("recall"),
            yaxis=_unit_axis("precision"),
        ),
    )


def cost_figure(
    cost: dict[str, Any], *, operating: dict[str, Any], flag_nothing_cost: float
) -> dict[str, Any]:
    """The total cost of flagging score >= t against t, the cost of flagging nothing, the operating point."""
    pairs = sorted(zip(cost["threshold"], cost["total_cost"], strict=True))
    thresholds, totals = [p[0] for p in pairs], [p[1] for p in pairs]
    traces = [
        scatter(
            x=thresholds, y=totals, mode="lines", name="total cost",
            line={"color": LINE_COLOUR, "width": 2.5, "shape": "vh"},
            hovertemplate="flag score ≥ %{x:.4g}: cost %{y:,.2f}<extra></extra>",
        ),
    ]  # fmt: skip
    if thresholds:
        traces.insert(0, _reference([thresholds[0], thresholds[-1]], [flag_nothing_cost] * 2, "flag nothing"))
    if not operating["flags_nothing"]:
        traces.append(
            _marker(operating["threshold"], operating["total_cost"], _operating_text(operating),
                    "score ≥ %{x:.4g}: cost %{y:,.2f}")
        )  # fmt: skip
    return figure(
        traces,
        _layout(
            title={"text": "Total cost against the threshold"},
            xaxis={"title": {"text": "threshold (flag score ≥ it)"}},
            yaxis={"title": {"text": "total cost"}, "rangemode": "tozero"},
        ),
    )


#: The units a delay in seconds is drawn in, largest first.
DELAY_UNITS: tuple[tuple[str, float], ...] = (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0), ("s", 1.0))


def delay_unit(ttd: dict[str, Any], *, unit: str) -> tuple[str, float]:
    """The unit to draw the delays in and its size in the file's unit: for timestamps in seconds, the
    largest of d, h, min and s in which the longest delay is at least 2 (a week of delays reads in
    days, not as 604800); numeric timestamps keep the file's own unit."""
    if unit != "seconds":
        return unit, 1.0
    longest = max(ttd["edges"], default=0.0)
    return next(((name, size) for name, size in DELAY_UNITS if longest >= 2 * size), ("s", 1.0))


def ttd_figure(ttd: dict[str, Any], *, unit: str) -> dict[str, Any]:
    """How many detected entities were flagged within each delay after their first fraud, in the
    readable unit of `delay_unit` (the axis title names it)."""
    unit, size = delay_unit(ttd, unit=unit)
    edges, counts = [edge / size for edge in ttd["edges"]], ttd["counts"]
    bars = bar(
        x=[(edges[i] + edges[i + 1]) / 2 for i in range(len(counts))], y=counts,
        width=[(edges[i + 1] - edges[i]) or 1.0 for i in range(len(counts))],
        marker={"color": LINE_COLOUR, "line": {"color": "#ffffff", "width": 1}},
        customdata=[[edges[i], edges[i + 1]] for i in range(len(counts))],
        hovertemplate="[%{customdata[0]:.4g}, %{customdata[1]:.4g}]: %{y} entities<extra></extra>",
    )  # fmt: skip
    return figure(
        [bars],
        _layout(
            title={
                "text": f"Time to detection of {ttd['n_detected']} of {ttd['n_anomalous']} entities with fraud"
            },
            xaxis={
                "title": {"text": f"delay from the first fraud to the first flag ({unit})"},
                "rangemode": "tozero",
            },
            yaxis={"title": {"text": "entities"}, "rangemode": "tozero"},
            bargap=0,
        ),
    )


# --- a set name over time -----------------------------------------------------------------------------

#: What the over-time chart says when every headline value is undefined.
NO_VALUE = "No value to plot yet: every headline metric is undefined<br>(each is listed in the table)."

#: One colour per headline metric of the over-time chart.
HISTORY_COLOURS = ("#2457c5", "#e07b00", "#1b8a5a", "#8e44ad", "#b3261e")


def history_figure(specs: list[MetricSpec], points: list[Any]) -> dict[str, Any]:
    """The headline metrics of each evaluation of the sets of one name over their finish times: scores
    in [0, 1] on the left axis, the others (costs, ratios) dashed on the right one. `points` are
    `selectors.HistoryPoint`s, oldest first; an undefined value is a gap, and a chart with no defined
    value says so instead of drawing empty axes. One evaluation reads on a two-day time axis (`time_axis`)."""
    times = [point.observed_at for point in points]
    traces = []
    has_right = False
    for i, spec in enumerate(specs):
        unit_range = spec.range == (0.0, 1.0)
        has_right = has_right or not unit_range
        traces.append(
            scatter(
                x=times, y=[point.values[i] for point in points], mode="lines+markers", name=spec.label,
                yaxis="y" if unit_range else "y2",
                line={"color": HISTORY_COLOURS[i % len(HISTORY_COLOURS)], "dash": "solid" if unit_range else "dash"},
                hovertemplate=f"%{{x|%Y-%m-%d %H:%M}}: {spec.label} %{{y:.4g}}<extra></extra>",
            )
        )  # fmt: skip
    chart = _layout(
        title={"text": "Headline metrics over time"},
        xaxis=time_axis(times, title={"text": "evaluated at"}),
        yaxis={"title": {"text": "score"}, "range": [-0.02, 1.02], "zeroline": False},
    )
    if has_right:
        chart["yaxis2"] = {"title": {"text": "cost or ratio (dashed)"}, "overlaying": "y", "side": "right"}
        chart["margin"] = {**chart["margin"], "r": 70}
    if all(value is None for point in points for value in point.values):
        chart = no_value_note(chart, NO_VALUE)
    return figure(traces, chart)
