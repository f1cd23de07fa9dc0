"""The quality dashboard's figures, built on the server from a `QualitySnapshot`'s stored figures.

Each function returns plain JSON data (`evalplatform.charts.figure_data`) for `json_script`; nothing is
computed here beyond laying out numbers already in the snapshot.
"""

from __future__ import annotations

from typing import Any

from evalplatform.charts import figure_data

INCLUDED_COLOUR = "#1b7f3b"
EXCLUDED_COLOUR = "#b3261e"
GRADE_COLOURS = ["#d9d9d9", "#c6dbef", "#6baed6", "#2171b5", "#08306b", "#54278f", "#756bb1", "#9e9ac8",
                 "#cbc9e2", "#f2f0f7"]  # fmt: skip


def _layout(**extra: Any) -> dict[str, Any]:
    return {
        "template": "plotly_white",
        "height": 380,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 60},
        "font": {"family": "system-ui, sans-serif", "size": 13},
        **extra,
    }


def accuracy_speed_figure(
    rows: list[dict[str, Any]], *, min_accuracy: float, min_seconds: float
) -> dict[str, Any]:
    """Accuracy on gold against median seconds per task, one point per annotator, coloured by inclusion."""
    import plotly.graph_objects as go

    figure = go.Figure()
    for included, name, colour in ((True, "included", INCLUDED_COLOUR), (False, "excluded", EXCLUDED_COLOUR)):
        points = [r for r in rows if r["included"] == included and r["gold_accuracy"] is not None]
        figure.add_trace(
            go.Scatter(
                x=[r["median_seconds"] for r in points],
                y=[r["gold_accuracy"] for r in points],
                mode="markers+text",
                name=name,
                text=[r["username"] for r in points],
                # Alternate the labels above and below, so annotators at the same spot stay readable.
                textposition=["top center" if i % 2 == 0 else "bottom center" for i in range(len(points))],
                marker={"color": colour, "size": [8 + min(r["gold_seen"], 40) / 2 for r in points]},
                customdata=[
                    [r["gold_seen"], r["gold_accuracy_within"], r["too_fast_share"] or 0.0] for r in points
                ],
                hovertemplate="<b>%{text}</b><br>accuracy on gold %{y:.0%} (within ±1 %{customdata[1]:.0%})"
                "<br>%{customdata[0]} gold items<br>median %{x:.1f} s per task"
                "<br>too fast %{customdata[2]:.0%}<extra></extra>",
            )
        )
    figure.add_hline(
        y=min_accuracy, line_dash="dash", line_color="#555", annotation_text=f"reliable ≥ {min_accuracy:.0%}"
    )
    if min_seconds:
        figure.add_vline(
            x=min_seconds, line_dash="dot", line_color="#999", annotation_text=f"minimum {min_seconds:g} s"
        )
    figure.update_layout(
        _layout(
            title={"text": "Accuracy on gold against speed"},
            xaxis={"title": {"text": "median seconds per task"}, "rangemode": "tozero"},
            yaxis={"title": {"text": "accuracy on gold (exact)"}, "range": [-0.05, 1.1], "tickformat": ".0%"},
            legend={"orientation": "h", "y": -0.2},
        )
    )
    return figure_data(figure)


KAPPA_WEIGHTS = (
    ("unweighted", "Unweighted"),
    ("linear", "Linear weights"),
    ("quadratic", "Quadratic weights"),
)


def kappa_figure(kappa: dict[str, Any]) -> dict[str, Any]:
    """Cohen's kappa of every annotator pair as a heatmap, with buttons for the three weightings."""
    import plotly.graph_objects as go

    names = kappa.get("annotators", [])
    figure = go.Figure(
        go.Heatmap(
            z=kappa.get("unweighted", []),
            x=names,
            y=names,
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            texttemplate="%{z:.2f}",
            customdata=kappa.get("shared_items", []),
            hovertemplate="%{y} × %{x}<br>kappa %{z:.3f}<br>%{customdata} shared items<extra></extra>",
            colorbar={"title": {"text": "κ"}},
        )
    )
    buttons = [
        {"label": label, "method": "restyle", "args": [{"z": [kappa.get(key, [])]}]}
        for key, label in KAPPA_WEIGHTS
    ]
    figure.update_layout(
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
        )
    )
    return figure_data(figure)


def label_distribution_figure(distribution: dict[str, Any], *, labels: dict[int, str]) -> dict[str, Any]:
    """Each annotator's answers by grade, stacked."""
    import plotly.graph_objects as go

    answered = [i for i, row in enumerate(distribution.get("counts", [])) if sum(row)]
    names = [distribution["annotators"][i] for i in answered]
    counts = [distribution["counts"][i] for i in answered]
    figure = go.Figure()
    for column, grade in enumerate(distribution.get("grades", [])):
        figure.add_trace(
            go.Bar(
                x=names,
                y=[row[column] for row in counts],
                name=f"{grade} {labels.get(grade, '')}".strip(),
                marker_color=GRADE_COLOURS[grade % len(GRADE_COLOURS)],
                hovertemplate="%{x}: %{y} answers graded " + str(grade) + "<extra></extra>",
            )
        )
    figure.update_layout(
        _layout(
            title={"text": "Grades given, per annotator"},
            barmode="stack",
            yaxis={"title": {"text": "answers"}},
            legend={"orientation": "h", "y": -0.2},
        )
    )
    return figure_data(figure)
