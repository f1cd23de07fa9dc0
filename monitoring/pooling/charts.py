"""The pool page's figure: relevant documents found against judgments made (`evalplatform.charts`)."""

from __future__ import annotations

from typing import Any

from evalplatform.charts import figure, layout, scatter
from monitoring.pooling.models import JudgingPool
from monitoring.pooling.selectors import yield_points

LINE_COLOUR = "#2457c5"
LAYOUT: dict[str, Any] = {
    "height": 380,
    "margin": {"l": 70, "r": 20, "t": 30, "b": 60},
    "font": {"family": "system-ui, sans-serif", "size": 13},
    "showlegend": False,
}


def yield_figure(pool: JudgingPool) -> dict[str, Any] | None:
    """The yield curve from the origin (None before the first judgment), the budget at the x axis' end."""
    points = yield_points(pool)
    if not points:
        return None
    end = max(pool.budget or 0, points[-1].judged)
    trace = scatter(
        x=[0] + [point.judged for point in points], y=[0] + [point.relevant for point in points], mode="lines",
        name="Relevant found", line={"color": LINE_COLOUR, "shape": "hv"},
        hovertemplate="%{x} judged: %{y} relevant<extra></extra>",
    )  # fmt: skip
    return figure(
        [trace],
        layout(
            LAYOUT,
            xaxis={"title": {"text": "Pairs judged"}, "range": [0, end], "rangemode": "tozero"},
            yaxis={"title": {"text": "Relevant found"}, "rangemode": "tozero"},
        ),
    )


#: One colour per strategy of the simulation (in `evalcore.pooling.STRATEGIES` order).
STRATEGY_COLOURS = ("#6b7280", "#2457c5", "#0f9d58", "#d97706", "#b3261e", "#7c3aed")


def simulation_figure(simulation: dict[str, Any]) -> dict[str, Any] | None:
    """Relevant found (left) and Kendall's tau of the runs' ranking by the simulation's measure (right,
    dotted; its axis names the measure) against judgments, one colour per strategy (None without a stored
    simulation)."""
    curves = simulation.get("strategies") or []
    if not curves:
        return None
    measure = str(simulation.get("measure") or "map")
    traces = []
    for number, curve in enumerate(curves):
        strategy, steps = curve["strategy"], curve["steps"]
        colour = STRATEGY_COLOURS[number % len(STRATEGY_COLOURS)]
        judged = [0] + [step["judged"] for step in steps]
        traces.append(
            scatter(
                x=judged,
                y=[0] + [step["relevant_found"] for step in steps],
                mode="lines",
                name=strategy,
                legendgroup=strategy,
                line={"color": colour},
                hovertemplate=f"{strategy}: %{{x}} judged, %{{y}} relevant<extra></extra>",
            )  # fmt: skip
        )
        traces.append(
            scatter(
                x=judged[1:],
                y=[step["kendall_tau"] for step in steps],
                mode="lines",
                name=f"{strategy} τ",
                legendgroup=strategy,
                showlegend=False,
                yaxis="y2",
                line={"color": colour, "dash": "dot"},
                hovertemplate=f"{strategy}: %{{x}} judged, τ ({measure}) = %{{y:.3f}}<extra></extra>",
            )  # fmt: skip
        )
    return figure(
        traces,
        layout(
            LAYOUT,
            showlegend=True,
            height=460,
            margin={"l": 70, "r": 70, "t": 30, "b": 100},
            # Below the plot: at the right it covered the tau axis and its title.
            legend={"orientation": "h", "x": 0, "y": -0.22, "xanchor": "left", "yanchor": "top"},
            xaxis={"title": {"text": "Pairs judged (simulated)"}, "rangemode": "tozero"},
            yaxis={"title": {"text": "Relevant found (solid)"}, "rangemode": "tozero"},
            yaxis2={
                "title": {"text": f"Kendall's τ by {measure} vs the oracle (dotted)"},
                "overlaying": "y",
                "side": "right",
                "range": [-1.05, 1.05],
                "tickvals": [-1, -0.5, 0, 0.5, 1],
                "showgrid": False,
            },  # fmt: skip
        ),
    )
