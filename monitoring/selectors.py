"""Read-side queries of the evaluation service, for the views, the API and the commands.

Every lookup of team-owned data takes the team a `get_team_for_member` check returned, so an object of
another team is a 404, never a leak. Results are read from the rows the jobs wrote; nothing here computes
a metric.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.utils import timezone

from annotations.models import QrelsBuild
from evalcore.metrics import MetricSpec, metric_registry
from evalplatform.jobs import JobStatus
from evalplatform.models import Team, TeamMembership
from monitoring.models import (
    Comparison,
    ComparisonPair,
    ComparisonSummary,
    Evaluation,
    EvaluationResult,
    FraudScoreEvaluation,
    QrelsSource,
    RecommendationEvaluation,
    Run,
)


def get_one(queryset: QuerySet[Any], pk: Any, what: str) -> Any:
    """The row of `queryset` with primary key `pk` (any type), or a 404 naming `what`."""
    try:
        found = queryset.filter(pk=int(pk)).first()
    except (TypeError, ValueError):
        found = None
    if found is None:
        raise Http404(f"No such {what}.")
    return found


def get_run(*, team: Team, pk: Any) -> Run:
    return get_one(Run.objects.filter(team=team).select_related("team", "uploaded_by"), pk, "run")  # type: ignore[no-any-return]


def get_qrels_source(*, team: Team, pk: Any) -> QrelsSource:
    return get_one(  # type: ignore[no-any-return]
        QrelsSource.objects.filter(team=team).select_related("team", "build__project"), pk, "qrels source"
    )


def get_evaluation(*, team: Team, pk: Any, per_query: bool = False) -> Evaluation:
    """An evaluation with its run, qrels and results; the results' per-query arrays only with `per_query`
    (the pages that draw or download them; the API reads a few measures' arrays apart, `per_query_values`)."""
    return get_one(team_evaluations(team=team, per_query=per_query), pk, "evaluation")  # type: ignore[no-any-return]


def get_comparison(*, team: Team, pk: Any, per_query: bool = False) -> Comparison:
    """A comparison with its runs, summaries and pairs (each pair with its two runs); the summaries'
    per-query arrays only with `per_query` (the page's differences between two runs)."""
    summaries = ComparisonSummary.objects.select_related("run")
    if not per_query:
        summaries = summaries.defer("per_query")
    pairs = ComparisonPair.objects.select_related("run_a", "run_b")
    queryset = team_comparisons(team=team).prefetch_related(
        Prefetch("summaries", queryset=summaries), Prefetch("pairs", queryset=pairs)
    )
    return get_one(queryset, pk, "comparison")  # type: ignore[no-any-return]


TeamJob = Evaluation | Comparison | RecommendationEvaluation | FraudScoreEvaluation

#: The team's jobs a page can poll (`monitoring/_job.html`, `jobs.js`), by the name in their URL.
JOB_MODELS: dict[str, type[TeamJob]] = {
    "evaluation": Evaluation,
    "comparison": Comparison,
    "recommendation": RecommendationEvaluation,
    "fraud": FraudScoreEvaluation,
}
# What `Job.state()` reads: the rows' results and parameters are not loaded.
_STATE_FIELDS = ("id", "team_id", "status", "error", "progress", "progress_note", "attempts", "created_at",
                 "started_at", "finished_at")  # fmt: skip


def get_job(*, team: Team, kind: str, pk: Any) -> TeamJob:
    """One of the team's jobs, for its state only."""
    model = JOB_MODELS.get(kind)
    if model is None:
        raise Http404(f"Jobs are {', '.join(JOB_MODELS)}.")
    return get_one(model.objects.filter(team=team).only(*_STATE_FIELDS), pk, kind)  # type: ignore[no-any-return]


def team_runs(*, team: Team) -> QuerySet[Run]:
    return Run.objects.filter(team=team).select_related("uploaded_by").order_by("-created_at", "-pk")


def team_qrels_sources(*, team: Team) -> QuerySet[QrelsSource]:
    return (
        QrelsSource.objects.filter(team=team).select_related("build__project").order_by("-created_at", "-pk")
    )


#: The fields of a result that its aggregate needs: all but the per-query array.
_RESULT_AGGREGATE = ("evaluation_id", "measure", "position", "value", "ci_low", "ci_high")


def team_evaluations(*, team: Team, per_query: bool = False) -> QuerySet[Evaluation]:
    """The team's evaluations, newest first, with their results (per-query arrays only with `per_query`)."""
    results = (
        EvaluationResult.objects.all() if per_query else EvaluationResult.objects.only(*_RESULT_AGGREGATE)
    )
    return (
        Evaluation.objects.filter(team=team)
        .select_related("team", "run", "qrels", "created_by")
        .prefetch_related(Prefetch("results", queryset=results))
        .order_by("-created_at", "-pk")
    )


def team_comparisons(*, team: Team) -> QuerySet[Comparison]:
    """The team's comparisons, newest first, with their runs."""
    return (
        Comparison.objects.filter(team=team)
        .select_related("team", "qrels", "created_by")
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


def label_runs(runs: Iterable[Run]) -> None:
    """Name each run so that no two of those shown together read the same (`Run.label`): the name alone
    where no other run shown has it, else with its upload time, and its id too where that is shared.

    A chart keys its bars by these labels: two runs of one name keyed by the name are stacked into one bar
    (plotly adds the bars of a repeated category), and their table rows cannot be told apart."""
    runs = list(runs)
    names = Counter(run.name for run in runs)
    for run in runs:
        run.label = run.name
        if names[run.name] > 1:
            run.label = f"{run.name} ({timezone.localtime(run.created_at):%Y-%m-%d %H:%M})"
    labels = Counter(run.label for run in runs)
    for run in runs:
        if labels[run.label] > 1:
            run.label = f"{run.label[:-1]}, #{run.pk})"


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
        .prefetch_related(Prefetch("results", queryset=EvaluationResult.objects.defer("per_query")))
        .order_by("run_id", "-finished_at", "-pk")
    )
    rows: dict[int, LeaderboardRow] = {}
    for evaluation in evaluations:
        if evaluation.run_id in rows:
            continue
        results = {result.measure: result for result in evaluation.results.all()}
        rows[evaluation.run_id] = LeaderboardRow(evaluation.run, evaluation, results)
    label_runs(row.run for row in rows.values())
    measures: list[str] = []
    for row in rows.values():
        for result in sorted(row.results.values(), key=lambda r: r.position):
            if result.measure not in measures:
                measures.append(result.measure)
    return Leaderboard(qrels=qrels, measures=measures, rows=list(rows.values()))


# --- the pages' read side -----------------------------------------------------------------------------
# What the HTML pages show beyond the lookups above: measure columns labelled from the registry, a run's
# evaluations, per-query distributions and differences. Everything is laid out from stored rows (binned,
# sorted, subtracted per query); no measure is computed here.


@dataclass(frozen=True)
class MeasureColumn:
    """A measure key as a column: its registry label, direction and definition (blank when unknown)."""

    key: str
    label: str
    direction: str
    definition: str
    range: tuple[float | None, float | None] | None

    @property
    def descending(self) -> bool:
        """Best first: descending unless lower is better."""
        return self.direction != "lower"

    @property
    def title(self) -> str:
        """The column's name on a chart axis: the registry label and the key as given."""
        return self.key if self.label in ("", self.key) else f"{self.label} ({self.key})"


def measure_column(key: str) -> MeasureColumn:
    spec = metric_spec(key)
    if spec is None:
        return MeasureColumn(key, key, "neutral", "", None)
    return MeasureColumn(key, spec.label, spec.direction, spec.definition, spec.range)


def team_memberships(*, user: Any) -> list[TeamMembership]:
    """The user's memberships with their teams; a superuser stands as an editor of every team."""
    if not user.is_authenticated:
        return []
    mine = list(TeamMembership.objects.filter(user=user).select_related("team").order_by("team__name"))
    if not getattr(user, "is_superuser", False):
        return mine
    known = {membership.team_id for membership in mine}
    extra = [
        TeamMembership(team=team, user=user, role=TeamMembership.Role.EDITOR)
        for team in Team.objects.exclude(pk__in=known)
    ]
    return sorted(mine + extra, key=lambda membership: membership.team.name)


def linked_qrels_builds(*, team: Team) -> QuerySet[QrelsBuild]:
    """The finished qrels builds of the judging projects linked to the team (`Project.team`)."""
    return (
        QrelsBuild.objects.filter(project__team=team, status=JobStatus.DONE)
        .select_related("project")
        .order_by("project__name", "-version")
    )


def run_evaluations(*, run: Run) -> list[Evaluation]:
    """The run's evaluations, newest first, with their qrels and their results' aggregates only."""
    return list(
        Evaluation.objects.filter(run=run)
        .select_related("qrels")
        .prefetch_related(Prefetch("results", queryset=EvaluationResult.objects.defer("per_query")))
        .order_by("-created_at", "-pk")
    )


def chosen_evaluation(*, run: Run, evaluations: list[Evaluation], pk: Any) -> Evaluation | None:
    """The evaluation asked for (`?evaluation=`), with its per-query values; else the newest done one, else
    the newest of any status (so a running or failed job shows at the top); None without evaluations."""
    if pk not in (None, ""):
        if not _is_of_run(evaluations, pk):
            return _missing("evaluation")
        return get_evaluation(team=run.team, pk=pk, per_query=True)
    done = [evaluation for evaluation in evaluations if evaluation.status == JobStatus.DONE]
    newest = (done or evaluations)[0] if (done or evaluations) else None
    return None if newest is None else get_evaluation(team=run.team, pk=newest.pk, per_query=True)


def _is_of_run(evaluations: list[Evaluation], pk: Any) -> bool:
    return any(str(evaluation.pk) == str(pk) for evaluation in evaluations)


def _missing(what: str) -> Any:
    raise Http404(f"No such {what}.")


@dataclass(frozen=True)
class HistogramBin:
    low: float
    high: float
    count: int


def histogram(values: list[float | None], *, column: MeasureColumn, bins: int = 10) -> list[HistogramBin]:
    """Per-query values counted in equal bins over the measure's range (the data's, where it is open)."""
    finite = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if finite.size == 0:
        return []
    low, high = column.range if column.range is not None else (None, None)
    low = float(finite.min()) if low is None else float(low)
    high = float(finite.max()) if high is None else float(high)
    if high <= low:
        return [HistogramBin(low, low, int(finite.size))]
    counts, edges = np.histogram(finite, bins=bins, range=(low, high))
    return [HistogramBin(float(edges[i]), float(edges[i + 1]), int(counts[i])) for i in range(bins)]


@dataclass(frozen=True)
class QueryValue:
    qid: str
    value: float


def worst_queries(
    qids: list[str], values: list[float | None], *, column: MeasureColumn, limit: int = 20
) -> list[QueryValue]:
    """The queries where the run did worst on the measure (lowest first unless lower is better)."""
    rows = [QueryValue(str(qid), v) for qid, v in zip(qids, values, strict=False) if v is not None]
    sign = -1.0 if column.direction == "lower" else 1.0
    return sorted(rows, key=lambda row: (sign * row.value, row.qid))[:limit]


def per_query_rows(evaluation: Evaluation) -> tuple[list[str], list[list[Any]]]:
    """The evaluation's per-query values as (measures, rows of [qid, value per measure])."""
    results = sorted(evaluation.results.all(), key=lambda result: result.position)
    measures = [result.measure for result in results]
    rows = [
        [qid, *(result.per_query[i] if i < len(result.per_query) else None for result in results)]
        for i, qid in enumerate(evaluation.qids)
    ]
    return measures, rows


# --- comparisons --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryDifference:
    qid: str
    a: float
    b: float

    @property
    def diff(self) -> float:
        return self.a - self.b


@dataclass
class ComparisonView:
    """A finished comparison laid out for its page: runs by id, measures, summaries and pairs."""

    comparison: Comparison
    runs: dict[int, Run]
    measures: list[str]
    summaries: dict[tuple[int, str], ComparisonSummary]
    pairs: list[ComparisonPair]

    def pairs_of(self, measure: str) -> list[ComparisonPair]:
        return [pair for pair in self.pairs if pair.measure == measure]

    def pair(self, pk: Any) -> ComparisonPair:
        """The pair asked for (`?pair=`), else the first pair of the first measure."""
        if pk in (None, ""):
            first = self.pairs_of(self.measures[0]) if self.measures else []
            return first[0] if first else _missing("pair")
        found = next((pair for pair in self.pairs if str(pair.pk) == str(pk)), None)
        return found if found is not None else _missing("pair")

    def differences(self, pair: ComparisonPair) -> list[QueryDifference]:
        """Per query, run a's and run b's value of the pair's measure, largest gain of a first."""
        a = self.summaries[(pair.run_a_id, pair.measure)].per_query
        b = self.summaries[(pair.run_b_id, pair.measure)].per_query
        rows = [
            QueryDifference(str(qid), x, y)
            for qid, x, y in zip(self.comparison.qids, a, b, strict=False)
            if x is not None and y is not None
        ]
        return sorted(rows, key=lambda row: (-row.diff, row.qid))


def comparison_view(*, comparison: Comparison) -> ComparisonView:
    """The comparison's rows from its prefetched runs, summaries and pairs (no further query)."""
    summaries = {(summary.run_id, summary.measure): summary for summary in comparison.summaries.all()}
    measures = [m for m in comparison.measures if any(key[1] == m for key in summaries)]
    measures += sorted({key[1] for key in summaries} - set(measures))
    order = {measure: i for i, measure in enumerate(measures)}
    pairs = sorted(
        comparison.pairs.all(), key=lambda pair: (order.get(pair.measure, 0), pair.p_adjusted, pair.pk)
    )
    runs = {run.pk: run for run in comparison.runs.all()}
    label_runs(runs.values())
    for pair in pairs:  # the runs are loaded already: no query per pair
        pair.run_a, pair.run_b = runs[pair.run_a_id], runs[pair.run_b_id]
    return ComparisonView(
        comparison=comparison,
        runs=runs,
        measures=measures,
        summaries=summaries,
        pairs=pairs,
    )
