"""Read-side queries of the evaluation service, for the views, the API and the commands.

Every lookup of team-owned data takes the team a `get_team_for_member` check returned, so an object of
another team is a 404, never a leak. Results are read from the rows the jobs wrote; nothing here computes
a metric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.http import Http404

from evalcore.metrics import MetricSpec, metric_registry
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.models import Comparison, Evaluation, EvaluationResult, QrelsSource, Run


def _one(queryset: QuerySet[Any], pk: Any, what: str) -> Any:
    try:
        found = queryset.filter(pk=int(pk)).first()
    except (TypeError, ValueError):
        found = None
    if found is None:
        raise Http404(f"No such {what}.")
    return found


def get_run(*, team: Team, pk: Any) -> Run:
    return _one(Run.objects.filter(team=team).select_related("team", "uploaded_by"), pk, "run")  # type: ignore[no-any-return]


def get_qrels_source(*, team: Team, pk: Any) -> QrelsSource:
    return _one(  # type: ignore[no-any-return]
        QrelsSource.objects.filter(team=team).select_related("team", "build__project"), pk, "qrels source"
    )


def get_evaluation(*, team: Team, pk: Any) -> Evaluation:
    queryset = Evaluation.objects.filter(team=team).select_related("team", "run", "qrels", "created_by")
    return _one(queryset.prefetch_related("results"), pk, "evaluation")  # type: ignore[no-any-return]


def get_comparison(*, team: Team, pk: Any) -> Comparison:
    queryset = Comparison.objects.filter(team=team).select_related("team", "qrels", "created_by")
    return _one(queryset.prefetch_related("runs", "summaries", "pairs"), pk, "comparison")  # type: ignore[no-any-return]


def team_runs(*, team: Team) -> QuerySet[Run]:
    return Run.objects.filter(team=team).select_related("uploaded_by").order_by("-created_at", "-pk")


def team_qrels_sources(*, team: Team) -> QuerySet[QrelsSource]:
    return (
        QrelsSource.objects.filter(team=team).select_related("build__project").order_by("-created_at", "-pk")
    )


def team_evaluations(*, team: Team) -> QuerySet[Evaluation]:
    return (
        Evaluation.objects.filter(team=team)
        .select_related("run", "qrels", "created_by")
        .prefetch_related(Prefetch("results", queryset=EvaluationResult.objects.only(
            "evaluation_id", "measure", "position", "value", "ci_low", "ci_high")))
        .order_by("-created_at", "-pk")
    )  # fmt: skip


def team_comparisons(*, team: Team) -> QuerySet[Comparison]:
    return (
        Comparison.objects.filter(team=team)
        .select_related("qrels", "created_by")
        .prefetch_related("runs")
        .order_by("-created_at", "-pk")
    )


def latest_evaluations(*, teams: QuerySet[Team] | list[Team], limit: int = 10) -> list[Evaluation]:
    """The newest evaluations of these teams (a team member's home page)."""
    return list(
        Evaluation.objects.filter(team__in=teams)
        .select_related("team", "run", "qrels")
        .order_by("-created_at", "-pk")[:limit]
    )


def metric_spec(name: str) -> MetricSpec | None:
    """The registry's spec of a measure key (`ndcg_cut_10`, `P@10`), or None."""
    return metric_registry().find(name)


# --- the leaderboard ----------------------------------------------------------------------------------


@dataclass
class LeaderboardRow:
    run: Run
    evaluation: Evaluation
    results: dict[str, EvaluationResult] = field(default_factory=dict)


@dataclass
class Leaderboard:
    """Runs x measures on one qrels source: each run's newest finished evaluation there."""

    qrels: QrelsSource
    measures: list[str]
    rows: list[LeaderboardRow]

    def sorted_by(self, measure: str) -> list[LeaderboardRow]:
        """Best first, by the measure's direction in the registry; runs without the measure last."""
        spec = metric_spec(measure)
        descending = spec.sort_descending() if spec else True

        def key(row: LeaderboardRow) -> tuple[int, float]:
            result = row.results.get(measure)
            if result is None or result.value is None:
                return (1, 0.0)
            return (0, -result.value if descending else result.value)

        return sorted(self.rows, key=key)


def leaderboard(*, qrels: QrelsSource) -> Leaderboard:
    """The runs evaluated on `qrels`, one row each (their newest done evaluation), two queries in all."""
    evaluations = (
        Evaluation.objects.filter(qrels=qrels, status=JobStatus.DONE)
        .select_related("run")
        .prefetch_related("results")
        .order_by("run_id", "-finished_at", "-pk")
    )
    rows: dict[int, LeaderboardRow] = {}
    for evaluation in evaluations:
        if evaluation.run_id in rows:
            continue
        results = {result.measure: result for result in evaluation.results.all()}
        rows[evaluation.run_id] = LeaderboardRow(evaluation.run, evaluation, results)
    measures: list[str] = []
    for row in rows.values():
        for result in sorted(row.results.values(), key=lambda r: r.position):
            if result.measure not in measures:
                measures.append(result.measure)
    return Leaderboard(qrels=qrels, measures=measures, rows=list(rows.values()))
