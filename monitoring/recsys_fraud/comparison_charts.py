"""The comparison pages' figures: two evaluations' stored curves overlaid on one chart each.

As `monitoring.recsys_fraud.charts`: plain JSON figures (`evalplatform.charts.figure`) laid out from the
curves the evaluation jobs stored, drawn by the vendored plotly.js from `json_script`; model A in blue,
model B in orange, each model's operating point a marker of its colour.
"""

from __future__ import annotations

from typing import Any

from evalplatform.charts import bar, figure, scatter
from monitoring.recsys_fraud.charts import (
    LINE_COLOUR,
    REFERENCE_COLOUR,
    SECOND_COLOUR,
    _layout,
    _reference,
    _unit_axis,
    popularity_label,
)

COLOURS = (LINE_COLOUR, SECOND_COLOUR)


def _line(x: list[Any], y: list[Any], name: str, colour: str, hover: str, **extra: Any) -> dict[str, Any]:
    return scatter(x=x, y=y, mode="lines", name=name, line={"color": colour, "width": 2.5, **extra.pop("line", {})},
                   hovertemplate=f"{name}: {hover}<extra></extra>", **extra)  # fmt: skip


def _point(x: Any, y: Any, name: str, colour: str) -> dict[str, Any]:
    return scatter(x=[x], y=[y], mode="markers", name=f"{name}: operating point", hovertemplate=f"{name}: "
                   "(%{x:.4f}, %{y:.4f})<extra></extra>",
                   marker={"color": colour, "size": 11, "symbol": "diamond", "line": {"color": "#ffffff", "width": 1}})  # fmt: skip


def roc_overlay(curves: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Both ROC curves with their operating points, against random scores."""
    traces = [_reference([0, 1], [0, 1], "random scores")]
    for curve, name, colour in zip(curves, names, COLOURS, strict=False):
        traces.append(
            _line(curve["roc"]["fpr"], curve["roc"]["tpr"], name, colour, "FPR %{x:.4f}, TPR %{y:.4f}")
        )
        operating = curve["operating"]
        if not operating["flags_nothing"]:
            traces.append(_point(operating["fpr"], operating["tpr"], name, colour))
    return figure(traces, _layout(title={"text": "ROC curves"}, xaxis=_unit_axis("false positive rate"),
                                  yaxis=_unit_axis("true positive rate (detection rate)")))  # fmt: skip


def pr_overlay(curves: list[dict[str, Any]], names: list[str], *, fraud_rate: float | None) -> dict[str, Any]:
    """Both precision-recall curves with their operating points, and the fraud rate."""
    traces = []
    if fraud_rate is not None:
        traces.append(_reference([0, 1], [fraud_rate, fraud_rate], f"fraud rate {fraud_rate:.2%}"))
    for curve, name, colour in zip(curves, names, COLOURS, strict=False):
        traces.append(_line(curve["pr"]["recall"], curve["pr"]["precision"], name, colour,
                            "recall %{x:.4f}, precision %{y:.4f}", line={"shape": "vh"}))  # fmt: skip
        operating = curve["operating"]
        if not operating["flags_nothing"]:
            traces.append(_point(operating["tpr"], operating["precision"], name, colour))
    return figure(traces, _layout(title={"text": "Precision-recall curves"}, xaxis=_unit_axis("recall"),
                                  yaxis=_unit_axis("precision")))  # fmt: skip


def cost_overlay(curves: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Both models' total cost against the threshold (each with its own costs)."""
    traces = []
    for curve, name, colour in zip(curves, names, COLOURS, strict=False):
        pairs = sorted(zip(curve["cost"]["threshold"], curve["cost"]["total_cost"], strict=True))
        traces.append(_line([p[0] for p in pairs], [p[1] for p in pairs], name, colour,
                            "flag score ≥ %{x:.4g}: cost %{y:,.2f}", line={"shape": "vh"}))  # fmt: skip
        operating = curve["operating"]
        if not operating["flags_nothing"]:
            traces.append(_point(operating["threshold"], operating["total_cost"], name, colour))
    return figure(traces, _layout(title={"text": "Total cost against the threshold"},
                                  xaxis={"title": {"text": "threshold (flag score ≥ it)"}},
                                  yaxis={"title": {"text": "total cost"}, "rangemode": "tozero"}))  # fmt: skip


def lorenz_overlay(curves: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Both sets' Lorenz curves of exposure against equal exposure."""
    traces = [_reference([0, 1], [0, 1], "equal exposure")]
    for curve, name, colour in zip(curves, names, COLOURS, strict=False):
        traces.append(_line(curve["lorenz"]["items"], curve["lorenz"]["exposure"], name, colour,
                            "the least recommended %{x:.1%} of the catalog get %{y:.2%} of the slots"))  # fmt: skip
    return figure(traces, _layout(title={"text": "Lorenz curves of exposure"},
                                  xaxis=_unit_axis("share of catalog items, least recommended first"),
                                  yaxis=_unit_axis("share of recommended slots")))  # fmt: skip


def popularity_rows(histograms: list[dict[str, Any] | None]) -> list[list[Any]]:
    """Per doubling popularity bin: its bounds, then per set the catalog items and the slots (0 past a
    set's last bin: the bins are the same doublings, so one set's edges begin the other's)."""
    present = [h for h in histograms if h]
    if not present:
        return []
    edges = max((h["edges"] for h in present), key=len)
    rows = []
    for i in range(len(edges) - 1):
        row: list[Any] = [edges[i], edges[i + 1]]
        for histogram in histograms:
            inside = histogram is not None and i < len(histogram["slots"])
            row += [histogram["catalog_items"][i], histogram["slots"][i]] if inside else [0, 0]  # type: ignore[index]
        rows.append(row)
    return rows


def _shares(values: list[int]) -> list[float]:
    total = sum(values)
    return [value / total if total else 0.0 for value in values]


def popularity_overlay(rows: list[list[Any]], names: list[str]) -> dict[str, Any]:
    """The first set's catalog by popularity, and each set's share of recommended slots per bin."""
    labels = [popularity_label(row[0], row[1]) for row in rows]
    traces = [bar(x=labels, y=_shares([row[2] for row in rows]), name=f"catalog items ({names[0]})",
                  marker={"color": REFERENCE_COLOUR},
                  hovertemplate="%{x} interactions: %{y:.1%} of the catalog<extra></extra>")]  # fmt: skip
    for index, (name, colour) in enumerate(zip(names, COLOURS, strict=False)):
        traces.append(bar(x=labels, y=_shares([row[3 + 2 * index] for row in rows]), name=f"slots: {name}",
                          marker={"color": colour},
                          hovertemplate=f"{name}: %{{x}} interactions, %{{y:.1%}} of the slots<extra></extra>"))  # fmt: skip
    return figure(traces, _layout(title={"text": "Popularity of the recommended items"},
                                  xaxis={"title": {"text": "item popularity (interactions)"}, "type": "category"},
                                  yaxis={"title": {"text": "share"}, "tickformat": ".0%", "rangemode": "tozero"},
                                  barmode="group"))  # fmt: skip


def coverage_rows(tables: list[dict[str, Any] | None]) -> list[list[Any]]:
    """Per category (the whole catalog first, then the categories either set lists, by the first set's
    order): items, coverage and slot share in each set (None where a set does not list it)."""
    by_set = []
    for table in tables:
        rows = {} if not table else {row["category"]: row for row in table["categories"]}
        if table:
            rows["(all items)"] = table["total"]
        by_set.append(rows)
    names = ["(all items)", *dict.fromkeys(name for rows in by_set for name in rows if name != "(all items)")]
    result = []
    for name in names:
        row: list[Any] = [name]
        for rows in by_set:
            found = rows.get(name)
            row += [found["items"], found["coverage"], found["slot_share"]] if found else [None, None, None]
        result.append(row)
    return result


def coverage_overlay(rows: list[list[Any]], names: list[str]) -> dict[str, Any]:
    """Each set's coverage of each category (the share of its items recommended at least once)."""
    labels = [row[0] for row in rows]
    traces = [bar(x=labels, y=[row[2 + 3 * index] for row in rows], name=name, marker={"color": colour},
                  hovertemplate=f"{name}: %{{x}}, %{{y:.1%}} of its items recommended<extra></extra>")
              for index, (name, colour) in enumerate(zip(names, COLOURS, strict=False))]  # fmt: skip
    return figure(traces, _layout(title={"text": "Coverage by category"},
                                  xaxis={"title": {"text": "category"}, "type": "category"},
                                  yaxis={"title": {"text": "items recommended at least once"}, "tickformat": ".0%",
                                         "range": [0, 1.02]},
                                  barmode="group"))  # fmt: skip
