"""The quality dashboard's figures, built on the server from a `QualitySnapshot`'s stored figures.

Each function returns plain JSON data (`evalplatform.charts.figure`) for `json_script`; nothing is
computed here beyond laying out numbers already in the snapshot.
"""

from __future__ import annotations

from typing import Any

from evalplatform.charts import bar, figure, heatmap, hline, layout, scatter, vline

INCLUDED_COLOUR = "#1b7f3b"
EXCLUDED_COLOUR = "#b3261e"
GRADE_COLOURS = ["#d9d9d9", "#c6dbef", "#6baed6", "#2171b5", "#08306b", "#54278f", "#756bb1", "#9e9ac8",
                 "#cbc9e2", "#f2f0f7"]  # fmt: skip


#: The kappa heatmap's diverging scale from -1 to 1: ColorBrewer's 11-class red-blue ("RdBu"), red for
#: disagreement, blue for agreement, evenly spaced.
KAPPA_COLOURS = ("rgb(103,0,31)", "rgb(178,24,43)", "rgb(214,96,77)", "rgb(244,165,130)", "rgb(253,219,199)",
                 "rgb(247,247,247)", "rgb(209,229,240)", "rgb(146,197,222)", "rgb(67,147,195)", "rgb(33,102,172)",
                 "rgb(5,48,97)")  # fmt: skip
KAPPA_SCALE = [[i / (len(KAPPA_COLOURS) - 1), colour] for i, colour in enumerate(KAPPA_COLOURS)]


#: Every figure's height, margins and font.
LAYOUT: dict[str, Any] = {
    "height": 380,
    "margin": {"l": 60, "r": 20, "t": 40, "b": 60},
    "font": {"family": "system-ui, sans-serif", "size": 13},
}


def _layout(**extra: Any) -> dict[str, Any]:
    return layout(LAYOUT, **extra)


#: The accuracy-against-speed chart's margins; threshold labels sit in the right and top margins, beside
#: the axes, so they never cover a point.
ACCURACY_SPEED_MARGIN = {"l": 60, "r": 110, "t": 70, "b": 60}
#: The narrowest plot area the chart gets (a `.chart` is at least 420 px wide, less the margins); labels
#: placed apart at this width stay apart at any wider one, since their offsets are in pixels.
PLOT_WIDTH_PX = 420 - ACCURACY_SPEED_MARGIN["l"] - ACCURACY_SPEED_MARGIN["r"]
PLOT_HEIGHT_PX = 380 - ACCURACY_SPEED_MARGIN["t"] - ACCURACY_SPEED_MARGIN["b"]
LABEL_FONT_SIZE = 12
#: A generous estimate of a label's size in pixels (system-ui at 12 px).
LABEL_CHAR_PX = 7.5
LABEL_HEIGHT_PX = 16
ACCURACY_RANGE = (-0.05, 1.1)

Box = tuple[float, float, float, float]  # left, top, right, bottom, in pixels from the plot's top left


def marker_size(gold_seen: int) -> float:
    return 8 + min(gold_seen, 40) / 2


def label_box(x_px: float, y_px: float, offset: tuple[float, float], text: str) -> Box:
    """The pixel box of a label whose centre is `offset` (dx, dy; y down) from its point."""
    half_width, half_height = (len(text) * LABEL_CHAR_PX + 6) / 2, LABEL_HEIGHT_PX / 2
    cx, cy = x_px + offset[0], y_px + offset[1]
    return cx - half_width, cy - half_height, cx + half_width, cy + half_height


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _candidates(text: str) -> list[tuple[float, float]]:
    """Offsets to try, nearest first: above, below, right, left, then the diagonals, farther each ring."""
    half = (len(text) * LABEL_CHAR_PX + 6) / 2
    offsets: list[tuple[float, float]] = []
    for ring in (16.0, 30.0, 44.0, 58.0):
        side = half + ring - 8
        offsets += [(0, -ring), (0, ring), (side, 0), (-side, 0)]
        offsets += [(side, -ring), (-side, -ring), (side, ring), (-side, ring)]
    return offsets


def label_offsets(
    points: list[tuple[float, float, str, float]],
    *,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    width: float = PLOT_WIDTH_PX,
    height: float = PLOT_HEIGHT_PX,
) -> list[tuple[float, float] | None]:
    """Where each point's label goes, as a pixel offset from the point, or None when no place is free.

    `points` are (x, y, label, marker diameter in px). Greedy: each label takes the nearest candidate spot
    that stays inside the plot and covers neither a marker nor a label already placed. An annotator left
    without a label is still named by the hover text and in the table below the charts.
    """

    def to_px(x: float, y: float) -> tuple[float, float]:
        return (
            (x - x_range[0]) / (x_range[1] - x_range[0]) * width,
            (y_range[1] - y) / (y_range[1] - y_range[0]) * height,
        )

    centres = [to_px(x, y) for x, y, _, _ in points]
    taken: list[Box] = [
        (cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2)
        for (cx, cy), (_, _, _, size) in zip(centres, points, strict=True)
    ]
    placed: list[tuple[float, float] | None] = []
    for (cx, cy), (_, _, text, _) in zip(centres, points, strict=True):
        choice = None
        for offset in _candidates(text):
            box = label_box(cx, cy, offset, text)
            inside = box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height
            if inside and not any(_overlaps(box, other) for other in taken):
                choice = offset
                taken.append(box)
                break
        placed.append(choice)
    return placed


def accuracy_speed_figure(
    rows: list[dict[str, Any]], *, min_accuracy: float, min_seconds: float
) -> dict[str, Any]:
    """Accuracy on gold against median seconds per task, one point per annotator, coloured by inclusion.

    Names are placed beside their points where they fit without covering another name or point
    (`label_offsets`); the threshold lines' labels sit outside the plot, beside the axes.
    """
    plotted = [r for r in rows if r["gold_accuracy"] is not None]
    x_max = max([r["median_seconds"] or 0 for r in plotted] + [min_seconds or 0, 1]) * 1.15
    x_range = (0.0, float(x_max))
    traces = []
    for included, name, colour in ((True, "included", INCLUDED_COLOUR), (False, "excluded", EXCLUDED_COLOUR)):
        points = [r for r in plotted if r["included"] == included]
        traces.append(
            scatter(
                x=[r["median_seconds"] for r in points],
                y=[r["gold_accuracy"] for r in points],
                mode="markers",
                name=name,
                text=[r["username"] for r in points],
                marker={"color": colour, "size": [marker_size(r["gold_seen"]) for r in points]},
                customdata=[
                    [r["gold_seen"], r["gold_accuracy_within"], r["too_fast_share"] or 0.0] for r in points
                ],
                hovertemplate="<b>%{text}</b><br>accuracy on gold %{y:.0%} (within ±1 %{customdata[1]:.0%})"
                "<br>%{customdata[0]} gold items<br>median %{x:.1f} s per task"
                "<br>too fast %{customdata[2]:.0%}<extra></extra>",
            )
        )
    ordered = sorted(plotted, key=lambda r: (-r["gold_accuracy"], r["median_seconds"] or 0, r["username"]))
    offsets = label_offsets(
        [
            (r["median_seconds"] or 0, r["gold_accuracy"], r["username"], marker_size(r["gold_seen"]))
            for r in ordered
        ],
        x_range=x_range,
        y_range=ACCURACY_RANGE,
    )
    notes = [
        {"x": row["median_seconds"] or 0, "y": row["gold_accuracy"], "text": row["username"], "name": "annotator",
         "ax": offset[0], "ay": offset[1], "showarrow": True, "arrowhead": 0, "arrowwidth": 1, "arrowcolor": "#bbb",
         "font": {"size": LABEL_FONT_SIZE}, "standoff": marker_size(row["gold_seen"]) / 2}
        for row, offset in zip(ordered, offsets, strict=True)
        if offset is not None
    ]  # fmt: skip
    shapes = [hline(min_accuracy, line={"dash": "dash", "color": "#555"})]
    notes.append(
        {"xref": "paper", "x": 1.01, "xanchor": "left", "y": min_accuracy, "yref": "y",
         "text": f"reliable ≥ {min_accuracy:.0%}", "showarrow": False, "name": "threshold",
         "font": {"size": 11, "color": "#555"}}
    )  # fmt: skip
    if min_seconds:
        shapes.append(vline(min_seconds, line={"dash": "dot", "color": "#999"}))
        notes.append(
            {"x": min_seconds, "xref": "x", "yref": "paper", "y": 1.0, "yanchor": "bottom",
             "text": f"minimum {min_seconds:g} s", "showarrow": False, "name": "threshold",
             "font": {"size": 11, "color": "#777"}}
        )  # fmt: skip
    return figure(
        traces,
        _layout(
            title={"text": "Accuracy on gold against speed", "y": 0.97},
            margin=ACCURACY_SPEED_MARGIN,
            xaxis={"title": {"text": "median seconds per task"}, "range": list(x_range)},
            yaxis={
                "title": {"text": "accuracy on gold (exact)"},
                "range": list(ACCURACY_RANGE),
                "tickformat": ".0%",
            },
            legend={"orientation": "h", "y": -0.2},
            shapes=shapes,
            annotations=notes,
        ),
    )


KAPPA_WEIGHTS = (
    ("unweighted", "Unweighted"),
    ("linear", "Linear weights"),
    ("quadratic", "Quadratic weights"),
)


def kappa_figure(kappa: dict[str, Any]) -> dict[str, Any]:
    """Cohen's kappa of every annotator pair as a heatmap, with buttons for the three weightings."""
    names = kappa.get("annotators", [])
    cells = heatmap(
        z=kappa.get("unweighted", []),
        x=names,
        y=names,
        zmin=-1,
        zmax=1,
        colorscale=KAPPA_SCALE,
        texttemplate="%{z:.2f}",
        customdata=kappa.get("shared_items", []),
        hovertemplate="%{y} × %{x}<br>kappa %{z:.3f}<br>%{customdata} shared items<extra></extra>",
        colorbar={"title": {"text": "κ"}},
    )
    buttons = [
        {"label": label, "method": "restyle", "args": [{"z": [kappa.get(key, [])]}]}
        for key, label in KAPPA_WEIGHTS
    ]
    return figure(
        [cells],
        _layout(
            yaxis={"autorange": "reversed"},
            updatemenus=[
                {
                    "type": "buttons",
                    "direction": "right",
                    "x": 1,
                    "y": 1.02,
                    "xanchor": "right",
                    "yanchor": "bottom",
                    "buttons": buttons,
                    "showactive": True,
                }
            ],  # fmt: skip
            margin={"l": 80, "r": 20, "t": 90, "b": 60},
            title={"text": "Cohen's kappa per annotator pair", "y": 0.97},
        ),
    )


def label_distribution_figure(distribution: dict[str, Any], *, labels: dict[int, str]) -> dict[str, Any]:
    """Each annotator's answers by grade, stacked."""
    answered = [i for i, row in enumerate(distribution.get("counts", [])) if sum(row)]
    names = [distribution["annotators"][i] for i in answered]
    counts = [distribution["counts"][i] for i in answered]
    return figure(
        [
            bar(
                x=names,
                y=[row[column] for row in counts],
                name=f"{grade} {labels.get(grade, '')}".strip(),
                marker={"color": GRADE_COLOURS[grade % len(GRADE_COLOURS)]},
                hovertemplate="%{x}: %{y} answers graded " + str(grade) + "<extra></extra>",
            )
            for column, grade in enumerate(distribution.get("grades", []))
        ],
        _layout(
            title={"text": "Grades given, per annotator"},
            barmode="stack",
            yaxis={"title": {"text": "answers"}},
            legend={"orientation": "h", "y": -0.2},
        ),
    )
