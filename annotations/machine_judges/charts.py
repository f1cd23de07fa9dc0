"""A machine judge's calibration as plain-dict figures and the tables of numbers beside them (and CSV).

Each figure has a table of the same numbers (`TABLES`), shown beside the chart and downloadable as CSV.
"""

from __future__ import annotations

from typing import Any

from evalplatform.charts import bar, figure, heatmap, layout

LAYOUT: dict[str, Any] = {
    "height": 340,
    "margin": {"l": 70, "r": 20, "t": 40, "b": 60},
    "font": {"family": "system-ui, sans-serif", "size": 13},
}

#: The tables of a calibration block: their header and how to read their rows.
TABLES = ("confusion", "grades", "topics")


def table(block: dict[str, Any], name: str) -> tuple[list[str], list[list[Any]]]:
    """One table of a calibration block (`services.calibration_json`): its header and rows."""
    if name == "confusion":
        grades = block["grades"]
        header = ["human grade", *(f"machine {g}" for g in grades)]
        return header, [[g, *row] for g, row in zip(grades, block["confusion"], strict=True)]
    if name == "grades":
        header = ["human grade", "pairs", "mean machine grade", "bias", "stricter", "agreeing", "lenient"]
        keys = ["grade", "pairs", "mean_machine", "bias", "stricter", "agreeing", "lenient"]
        return header, [[row[k] for k in keys] for row in block["per_grade"]]
    if name == "topics":
        header = ["topic", "pairs", "exact agreement", "kappa", "quadratic kappa", "bias"]
        keys = ["topic", "pairs", "exact_agreement", "cohen_kappa", "cohen_kappa_quadratic", "bias"]
        return header, [[row[k] for k in keys] for row in block["per_topic"]]
    raise KeyError(name)


def confusion_figure(block: dict[str, Any]) -> dict[str, Any]:
    grades = [str(g) for g in block["grades"]]
    cells = heatmap(
        z=block["confusion"], x=grades, y=grades, colorscale="Blues", texttemplate="%{z}",
        hovertemplate="people %{y}, machine %{x}: %{z} pairs<extra></extra>",
    )  # fmt: skip
    return figure(
        [cells],
        layout(
            LAYOUT,
            xaxis={"title": {"text": "machine grade"}, "type": "category"},
            yaxis={"title": {"text": "human grade"}, "type": "category", "autorange": "reversed"},
        ),  # fmt: skip
    )


def bias_figure(block: dict[str, Any]) -> dict[str, Any]:
    rows = block["per_grade"]
    trace = bar(
        x=[str(row["grade"]) for row in rows], y=[row["bias"] for row in rows],
        customdata=[row["pairs"] for row in rows],
        hovertemplate="human grade %{x}: bias %{y:.2f} over %{customdata} pairs<extra></extra>",
    )  # fmt: skip
    return figure(
        [trace],
        layout(
            LAYOUT,
            xaxis={"title": {"text": "human grade"}, "type": "category"},
            yaxis={"title": {"text": "mean machine − human grade"}, "zeroline": True},
        ),  # fmt: skip
    )


def topic_figure(block: dict[str, Any]) -> dict[str, Any]:
    rows = block["per_topic"]
    trace = bar(
        x=[row["topic"] for row in rows], y=[row["exact_agreement"] for row in rows],
        customdata=[row["pairs"] for row in rows],
        hovertemplate="%{x}: %{y:.0%} exact agreement over %{customdata} pairs<extra></extra>",
    )  # fmt: skip
    return figure(
        [trace],
        layout(
            LAYOUT,
            xaxis={"title": {"text": "topic"}, "type": "category"},
            yaxis={"title": {"text": "exact agreement"}, "range": [0, 1], "tickformat": ".0%"},
        ),  # fmt: skip
    )


def figures(block: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The three figures of one calibration block, each with its table's name."""
    return [
        {"id": f"{prefix}-confusion", "table": "confusion", "label": "Confusion matrix: human grade by machine grade",
         "data": confusion_figure(block)},
        {"id": f"{prefix}-bias", "table": "grades", "label": "Bias per human grade (below 0: stricter)",
         "data": bias_figure(block)},
        {"id": f"{prefix}-topics", "table": "topics", "label": "Exact agreement per topic",
         "data": topic_figure(block)},
    ]  # fmt: skip
