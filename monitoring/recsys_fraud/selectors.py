"""Read-side queries of recommendation and fraud evaluations, for the views and the API.

Every lookup takes the team a `get_team_for_member` check returned, so another team's set is a 404.
Results are read from the metric table the jobs wrote (`series`): an evaluation's from its rows, a list's
in one query (`with_results`), a set name's history from its series; nothing here computes a metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import Q, QuerySet
from django.http import Http404

from evalcore.fraud import METRIC_SPECS as FRAUD_SPECS
from evalcore.metrics import MetricSpec
from evalcore.recsys import METRIC_SPECS as RECSYS_SPECS
from evalplatform.models import Team
from monitoring.evaluations.selectors import get_one
from monitoring.models import (
    FraudComparison,
    FraudScoreEvaluation,
    FraudScoreSet,
    RecommendationComparison,
    RecommendationEvaluation,
    RecommendationSet,
)
from series.models import Series
from series.selectors import jobs_values, series_history
from series.services import series_key


def get_recommendation_set(*, team: Team, pk: Any) -> RecommendationSet:
    return get_one(
        RecommendationSet.objects.filter(team=team).select_related("team", "uploaded_by"),
        pk,
        "recommendation set",
    )  # type: ignore[no-any-return]


def get_fraud_score_set(*, team: Team, pk: Any) -> FraudScoreSet:
    return get_one(
        FraudScoreSet.objects.filter(team=team).select_related("team", "uploaded_by"), pk, "fraud score set"
    )  # type: ignore[no-any-return]


def get_recommendation_evaluation(*, team: Team, pk: Any) -> RecommendationEvaluation:
    queryset = RecommendationEvaluation.objects.filter(team=team).select_related(
        "team", "recommendation_set", "created_by"
    )
    return get_one(queryset, pk, "recommendation evaluation")  # type: ignore[no-any-return]


def get_fraud_evaluation(*, team: Team, pk: Any) -> FraudScoreEvaluation:
    queryset = FraudScoreEvaluation.objects.filter(team=team).select_related(
        "team", "score_set", "created_by"
    )
    return get_one(queryset, pk, "fraud evaluation")  # type: ignore[no-any-return]


def team_recommendation_sets(*, team: Team, archived: bool = True) -> QuerySet[RecommendationSet]:
    """The team's sets, newest first; without the archived ones unless `archived`."""
    found = RecommendationSet.objects.filter(team=team)
    return (
        (found if archived else found.filter(archived=False))
        .select_related("team", "uploaded_by")
        .order_by("-created_at", "-pk")
    )


def team_fraud_score_sets(*, team: Team, archived: bool = True) -> QuerySet[FraudScoreSet]:
    """The team's sets, newest first; without the archived ones unless `archived`."""
    found = FraudScoreSet.objects.filter(team=team)
    return (
        (found if archived else found.filter(archived=False))
        .select_related("team", "uploaded_by")
        .order_by("-created_at", "-pk")
    )


def team_recommendation_evaluations(*, team: Team) -> QuerySet[RecommendationEvaluation]:
    """The team's evaluations, newest first, without their curves (`with_results` reads a page's
    metrics in one query)."""
    return (
        RecommendationEvaluation.objects.filter(team=team)
        .defer("curves")
        .select_related("team", "recommendation_set", "created_by")
        .order_by("-created_at", "-pk")
    )


def team_fraud_evaluations(*, team: Team) -> QuerySet[FraudScoreEvaluation]:
    """The team's evaluations, newest first, without their curves (`with_results` reads a page's
    metrics in one query)."""
    return (
        FraudScoreEvaluation.objects.filter(team=team)
        .defer("curves")
        .select_related("team", "score_set", "created_by")
        .order_by("-created_at", "-pk")
    )


def with_results(evaluations: Any) -> list[Any]:
    """The evaluations (of one kind) as a list, each with its metric rows attached, read in one query:
    `metric_results()` then reads no more."""
    rows = list(evaluations)
    if rows:
        found = jobs_values(type(rows[0]), [evaluation.pk for evaluation in rows])
        for evaluation in rows:
            evaluation._metric_results = list(found.get(evaluation.pk, {}).values())
    return rows


def set_evaluations(owner: RecommendationSet | FraudScoreSet) -> list[Any]:
    """A set's evaluations, newest first, with their results (no curves)."""
    if isinstance(owner, RecommendationSet):
        return with_results(team_recommendation_evaluations(team=owner.team).filter(recommendation_set=owner))
    return with_results(team_fraud_evaluations(team=owner.team).filter(score_set=owner))


# --- a set name over time -----------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryPoint:
    """One evaluation of a set of the name: when it finished, and its headline values."""

    observed_at: Any
    values: list[float | None]


def set_history(owner: RecommendationSet | FraudScoreSet, metrics: tuple[str, ...]) -> list[HistoryPoint]:
    """The headline metrics of every evaluation of the team's sets named like `owner`, oldest first: the
    series of the set's name (none before its first evaluation: no point), one point per observation
    time (each evaluation's finish)."""
    kind = Series.Kind.RECSYS if isinstance(owner, RecommendationSet) else Series.Kind.FRAUD
    series = Series.objects.filter(kind=kind, key=series_key(owner.team_id, owner.name)).first()
    if series is None:
        return []
    history = series_history(series, metrics)
    times = sorted({at for points in history.values() for at, _ in points})
    by_metric = {metric: dict(points) for metric, points in history.items()}
    return [HistoryPoint(at, [by_metric.get(metric, {}).get(at) for metric in metrics]) for at in times]


@dataclass(frozen=True)
class MetricLine:
    """A stored metric with its registry spec, as the pages and the API show it."""

    spec: MetricSpec
    value: float | None
    missing: str  # what the set lacks for it to be defined ("" when defined or not for want of input)

    @property
    def name(self) -> str:
        return self.spec.name


def specs(names: tuple[str, ...]) -> list[MetricSpec]:
    """The registry's specs of these metric names, in that order."""
    known = {spec.name: spec for spec in (*RECSYS_SPECS, *FRAUD_SPECS)}
    return [known[name] for name in names]


def metric_lines(evaluation: RecommendationEvaluation | FraudScoreEvaluation) -> list[MetricLine]:
    """The evaluation's metrics in the registry's order, each with its spec (label, direction, range)."""
    specs = {spec.name: spec for spec in (*RECSYS_SPECS, *FRAUD_SPECS)}
    lines = []
    for row in evaluation.metric_results():
        spec = specs.get(row.metric)
        if spec is not None:
            lines.append(MetricLine(spec, row.value, _missing(spec, row.value, evaluation)))
    return lines


_NEEDS = {
    "relevant": "held-out interactions", "history": "a history file", "popularity": "interactions",
    "categories": "an items file with categories", "similarity": "an items file with categories",
    "baseline": "interactions",
}  # fmt: skip


def _missing(spec: MetricSpec, value: float | None, evaluation: Any) -> str:
    """Why a metric has no value, when the reason is an input the set lacks or an option not set."""
    if value is not None:
        return ""
    if isinstance(evaluation, RecommendationEvaluation):
        chosen = evaluation.recommendation_set
        has = {
            "history": bool(chosen.history),
            "categories": bool(chosen.items),
            "similarity": bool(chosen.items),
        }
        lacking = [_NEEDS[need] for need in getattr(spec, "needs", ()) if not has.get(need, True)]
        return f"needs {' and '.join(dict.fromkeys(lacking))}" if lacking else ""
    if spec.name.endswith("_budget") and evaluation.budget is None:
        return "needs an alert budget"
    timed = spec.name.endswith("_ttd") or spec.name == "entity_detection_rate"
    if timed and not evaluation.score_set.has_entities:
        return "needs entity and timestamp columns"
    return ""


# --- the dashboards' tables ---------------------------------------------------------------------------
# Each chart's numbers as a header and rows, read from the stored curves: the page shows them beside the
# chart and the CSV download holds the same rows.

RECSYS_TABLES: tuple[str, ...] = ("metrics", "lorenz", "popularity", "coverage")
FRAUD_TABLES: tuple[str, ...] = ("metrics", "roc", "pr", "cost", "ttd")


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[Any]]


def _columns(curve: dict[str, list[Any]] | None, names: list[str]) -> Table:
    if not curve:
        return Table(names, [])
    return Table(names, [list(row) for row in zip(*(curve[name] for name in names), strict=True)])


def _popularity(histogram: dict[str, Any] | None) -> Table:
    header = ["popularity_low", "popularity_high", "catalog_items", "recommended_items", "slots"]
    if not histogram:
        return Table(header, [])
    edges = histogram["edges"]
    counts = zip(histogram["catalog_items"], histogram["recommended_items"], histogram["slots"], strict=True)
    return Table(header, [[edges[i], edges[i + 1], *row] for i, row in enumerate(counts)])


def _coverage(coverage: dict[str, Any] | None) -> Table:
    header = ["category", "items", "recommended", "coverage", "slots", "slot_share"]
    if not coverage:
        return Table(header, [])
    rows = [{**coverage["total"], "category": "(all items)"}, *coverage["categories"]]
    if coverage["other"]:
        rows.append(coverage["other"])
    return Table(header, [[row[name] for name in header] for row in rows])


def _ttd(ttd: dict[str, Any] | None) -> Table:
    header = ["delay_low", "delay_high", "entities"]
    if not ttd or not ttd["counts"]:
        return Table(header, [])
    edges = ttd["edges"]
    return Table(header, [[edges[i], edges[i + 1], count] for i, count in enumerate(ttd["counts"])])


def _metrics(evaluation: RecommendationEvaluation | FraudScoreEvaluation) -> Table:
    header = ["metric", "label", "value", "direction", "unit"]
    return Table(
        header,
        [
            [line.name, line.spec.label, line.value, line.spec.direction, line.spec.unit]
            for line in metric_lines(evaluation)
        ],
    )


def dashboard_table(evaluation: RecommendationEvaluation | FraudScoreEvaluation, name: str) -> Table:
    """One of the dashboard's tables (`RECSYS_TABLES`, `FRAUD_TABLES`) from the stored rows and curves;
    Http404 for a name the evaluation's kind does not have."""
    curves = evaluation.curves or {}
    recsys = isinstance(evaluation, RecommendationEvaluation)
    if name not in (RECSYS_TABLES if recsys else FRAUD_TABLES):
        raise Http404(f"No table {name!r} here.")
    builders: dict[str, Any] = {
        "metrics": lambda: _metrics(evaluation),
        "lorenz": lambda: _columns(curves.get("lorenz"), ["items", "exposure"]),
        "popularity": lambda: _popularity(curves.get("popularity")),
        "coverage": lambda: _coverage(curves.get("coverage")),
        "roc": lambda: _columns(curves.get("roc"), ["fpr", "tpr", "threshold"]),
        "pr": lambda: _columns(curves.get("pr"), ["recall", "precision", "threshold"]),
        "cost": lambda: _columns(curves.get("cost"), ["threshold", "total_cost"]),
        "ttd": lambda: _ttd(curves.get("ttd")),
    }
    return builders[name]()  # type: ignore[no-any-return]


def evenly(rows: list[Any], limit: int) -> list[Any]:
    """At most `limit` rows, evenly spaced, first and last kept (a long curve's table on the page)."""
    if len(rows) <= limit:
        return rows
    at = np.unique(np.round(np.linspace(0, len(rows) - 1, limit)).astype(int))
    return [rows[i] for i in at]


def duration(seconds: float | None) -> str:
    """A delay in seconds as people read it: 45 s, 12 min, 7.5 h, 3.2 days."""
    if seconds is None:
        return "—"
    for unit, size in (("days", 86_400.0), ("h", 3_600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


# --- comparisons of two evaluations -------------------------------------------------------------------

#: The other evaluations a "compare with…" picker offers, newest first, at most.
COMPARE_CHOICES = 100
#: The comparisons an evaluation's page lists, newest first, at most.
COMPARISONS_LISTED = 50


def get_fraud_comparison(*, team: Team, pk: Any) -> FraudComparison:
    queryset = FraudComparison.objects.filter(team=team).select_related(
        "team",
        "evaluation_a__score_set",
        "evaluation_b__score_set",
        "evaluation_a__team",
        "evaluation_b__team",
    )
    return get_one(queryset, pk, "fraud comparison")  # type: ignore[no-any-return]


def get_recommendation_comparison(*, team: Team, pk: Any) -> RecommendationComparison:
    queryset = RecommendationComparison.objects.filter(team=team).select_related(
        "team", "evaluation_a__recommendation_set", "evaluation_b__recommendation_set", "evaluation_a__team",
        "evaluation_b__team",
    )  # fmt: skip
    return get_one(queryset, pk, "recommendation comparison")  # type: ignore[no-any-return]


def team_fraud_comparisons(*, team: Team) -> QuerySet[FraudComparison]:
    return (
        FraudComparison.objects.filter(team=team)
        .select_related("team", "evaluation_a__score_set", "evaluation_b__score_set")
        .order_by("-created_at", "-pk")
    )


def team_recommendation_comparisons(*, team: Team) -> QuerySet[RecommendationComparison]:
    return (
        RecommendationComparison.objects.filter(team=team)
        .select_related("team", "evaluation_a__recommendation_set", "evaluation_b__recommendation_set")
        .order_by("-created_at", "-pk")
    )


def evaluation_comparisons(
    evaluation: RecommendationEvaluation | FraudScoreEvaluation,
) -> list[FraudComparison] | list[RecommendationComparison]:
    """The comparisons an evaluation takes part in, newest first (one query)."""
    if isinstance(evaluation, FraudScoreEvaluation):
        fraud = team_fraud_comparisons(team=evaluation.team)
        return list(
            fraud.filter(Q(evaluation_a=evaluation) | Q(evaluation_b=evaluation))[:COMPARISONS_LISTED]
        )
    recsys = team_recommendation_comparisons(team=evaluation.team)
    return list(recsys.filter(Q(evaluation_a=evaluation) | Q(evaluation_b=evaluation))[:COMPARISONS_LISTED])


def compare_choices(evaluation: RecommendationEvaluation | FraudScoreEvaluation) -> QuerySet[Any]:
    """The team's other evaluations of the kind, newest first, that a picker offers to compare with."""
    if isinstance(evaluation, FraudScoreEvaluation):
        rows: QuerySet[Any] = team_fraud_evaluations(team=evaluation.team)
    else:
        rows = team_recommendation_evaluations(team=evaluation.team)
    return rows.exclude(pk=evaluation.pk).defer("curves", "summary")


def compare_sets(evaluation: RecommendationEvaluation | FraudScoreEvaluation) -> QuerySet[Any]:
    """The team's other sets of the kind, newest first, that a picker offers to evaluate with the same
    options and compare."""
    if isinstance(evaluation, FraudScoreEvaluation):
        return team_fraud_score_sets(team=evaluation.team).exclude(pk=evaluation.score_set_id)
    return team_recommendation_sets(team=evaluation.team).exclude(pk=evaluation.recommendation_set_id)
