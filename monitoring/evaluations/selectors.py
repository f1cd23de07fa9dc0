"""Read-side queries of the evaluation service, for the views, the API and the commands.

Every lookup of team-owned data takes the team a `get_team_for_member` check returned, so an object of
another team is a 404, never a leak. Results are read from the rows the jobs wrote; nothing here computes
a metric.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.utils import timezone

from annotations.models import QrelsBuild
from evalcore.coverage import COVERAGE_MEASURES, WARNING_MEASURE, coverage_warning, unjudged_share
from evalcore.metrics import MetricSpec, metric_registry
from evalcore.retrieval import canonical_measure
from evalplatform.jobs import JobStatus
from evalplatform.models import Team, TeamMembership
from monitoring.models import (
    Comparison,
    ComparisonPair,
    Evaluation,
    FraudComparison,
    FraudScoreEvaluation,
    Fusion,
    MachineJudgeEvaluation,
    QrelsSource,
    RecommendationComparison,
    RecommendationEvaluation,
    Run,
)
from series.selectors import job_values, jobs_values


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
    """An evaluation with its run, qrels and results; its per-query arrays only with `per_query` (the
    pages that draw or download them; the API reads a few measures' arrays apart, `per_query_values`)."""
    queryset = Evaluation.objects.filter(team=team).select_related("team", "run", "qrels", "created_by")
    found: Evaluation = get_one(queryset if per_query else queryset.defer("per_query"), pk, "evaluation")
    evaluation_results_attach([found])
    return found


def get_comparison(*, team: Team, pk: Any, per_query: bool = False) -> Comparison:
    """A comparison with its runs, pairs (each with its two runs) and summaries; the summaries' per-query
    arrays only with `per_query` (the page's differences between two runs)."""
    pairs = ComparisonPair.objects.select_related("run_a", "run_b")
    queryset = Comparison.objects.filter(team=team).select_related("team", "qrels", "created_by")
    if not per_query:
        queryset = queryset.defer("per_query")
    found: Comparison = get_one(
        queryset.prefetch_related("runs", Prefetch("pairs", queryset=pairs)), pk, "comparison"
    )
    comparison_summaries_attach(found, per_query=per_query)
    return found


# --- results from the metric table --------------------------------------------------------------------
# An evaluation's and a comparison's scalars are rows of `series.MetricValue`; their per-query arrays are
# on the job row. These read them back in the shape the pages, the API and the commands show.


@dataclass(frozen=True)
class MeasureResult:
    """One measure of an evaluation: its aggregate (None when undefined) and bootstrap CI."""

    measure: str
    position: int
    value: float | None
    ci_low: float | None
    ci_high: float | None


def evaluation_results_attach(evaluations: Iterable[Evaluation]) -> list[Evaluation]:
    """Set each evaluation's `results` (read by `Evaluation.results`) in one query, in measure order."""
    evaluations = list(evaluations)
    table = jobs_values(Evaluation, [evaluation.pk for evaluation in evaluations]) if evaluations else {}
    for evaluation in evaluations:
        evaluation.__dict__["_results"] = [
            MeasureResult(row.metric, row.position, row.value, row.ci_low, row.ci_high)
            for row in table.get(evaluation.pk, {}).values()
        ]
    return evaluations


@dataclass(frozen=True)
class RunSummaryRow:
    """A run's mean of one measure in a comparison, with its CI, the queries it averages over (trec_eval's
    rule) and its per-query values on the comparison's `qids` (those of the paired tests)."""

    run: Run
    measure: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    num_queries: int | None
    per_query: list[float | None]

    @property
    def run_id(self) -> int:
        return self.run.pk  # type: ignore[no-any-return]


def comparison_summaries_attach(comparison: Comparison, *, per_query: bool = True) -> list[RunSummaryRow]:
    """Set the comparison's `summaries` (read by `Comparison.summaries`): by measure, best mean first,
    with their per-query values unless `per_query` is false (the API, which does not show them, defers
    them). Reads its runs (prefetched or not) and its values, one query each."""
    runs = {run.pk: run for run in comparison.runs.all()}
    rows = []
    for value in job_values(comparison, subgroup=None):
        run = runs.get(int(value.subgroup)) if value.subgroup.isdigit() else None
        if run is None:  # a run since deleted
            continue
        key = str(run.pk)
        rows.append(
            RunSummaryRow(
                run=run,
                measure=value.metric,
                mean=value.value,
                ci_low=value.ci_low,
                ci_high=value.ci_high,
                num_queries=comparison.num_queries.get(key, {}).get(value.metric),
                per_query=comparison.per_query.get(key, {}).get(value.metric, []) if per_query else [],
            )  # fmt: skip
        )
    rows.sort(key=lambda row: (row.measure, row.mean is None, -(row.mean or 0.0)))
    comparison.__dict__["_summaries"] = rows
    return rows


TeamJob = (
    Evaluation
    | Comparison
    | RecommendationEvaluation
    | FraudScoreEvaluation
    | Fusion
    | MachineJudgeEvaluation
    | FraudComparison
    | RecommendationComparison
)

#: The team's jobs a page can poll (`monitoring/_job.html`, `jobs.js`), by the name in their URL.
JOB_MODELS: dict[str, type[TeamJob]] = {
    "evaluation": Evaluation,
    "comparison": Comparison,
    "fusion": Fusion,
    "recommendation": RecommendationEvaluation,
    "fraud": FraudScoreEvaluation,
    "ppi": MachineJudgeEvaluation,
    "fraud-comparison": FraudComparison,
    "recommendation-comparison": RecommendationComparison,
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


def team_runs(*, team: Team, archived: bool = True) -> QuerySet[Run]:
    """The team's runs, newest first; without the archived ones unless `archived`."""
    runs = Run.objects.filter(team=team)
    runs = runs if archived else runs.filter(archived=False)
    return runs.select_related("uploaded_by").order_by("-created_at", "-pk")


def team_qrels_sources(*, team: Team, archived: bool = True) -> QuerySet[QrelsSource]:
    sources = QrelsSource.objects.filter(team=team)
    sources = sources if archived else sources.filter(archived=False)
    return sources.select_related("build__project").order_by("-created_at", "-pk")


def team_evaluations(*, team: Team, archived: bool = True) -> QuerySet[Evaluation]:
    """The team's evaluations, newest first, without their per-query arrays (a list shows their results
    after `evaluation_results_attach` of the page shown); without `archived`, those archived or of an
    archived run or qrels source are left out."""
    evaluations = Evaluation.objects.filter(team=team)
    if not archived:
        evaluations = evaluations.filter(archived=False, run__archived=False, qrels__archived=False)
    return (
        evaluations.select_related("team", "run", "qrels", "created_by")
        .defer("per_query")
        .order_by("-created_at", "-pk")
    )


def team_comparisons(*, team: Team) -> QuerySet[Comparison]:
    """The team's comparisons, newest first, with their runs (not their per-query arrays, overlap and
    statistics, which a list does not show)."""
    return (
        Comparison.objects.filter(team=team)
        .select_related("team", "qrels", "created_by")
        .defer("per_query", "overlap", "many_systems")
        .prefetch_related("runs")
        .order_by("-created_at", "-pk")
    )


def latest_evaluations(*, teams: QuerySet[Team] | list[Team], limit: int = 10) -> list[Evaluation]:
    """The newest evaluations of these teams (a team member's home page)."""
    return list(
        Evaluation.objects.filter(team__in=teams)
        .select_related("team", "run", "qrels")
        .defer("per_query")
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


@dataclass(frozen=True)
class Coverage:
    """How far a run's top ranks are judged on a leaderboard's qrels (`evalcore.coverage`): Judged@10 and
    Judged@100 with their CIs, the unjudged share of the top 10 and 100, and whether to warn. `computed` is
    false for an evaluation made before every evaluation stored them (its values are None, not 0)."""

    judged_10: MeasureResult | None
    judged_100: MeasureResult | None

    @property
    def computed(self) -> bool:
        return self.judged_10 is not None and self.judged_100 is not None

    @property
    def unjudged_10(self) -> float | None:
        return unjudged_share(self.judged_10.value) if self.judged_10 else None

    @property
    def unjudged_100(self) -> float | None:
        return unjudged_share(self.judged_100.value) if self.judged_100 else None

    @property
    def warning(self) -> bool:
        """Judged@10 under `evalcore.coverage.JUDGED_WARNING`."""
        return coverage_warning(self.judged_10.value if self.judged_10 else None)

    def as_dict(self) -> dict[str, Any]:
        def value(result: MeasureResult | None) -> dict[str, float | None] | None:
            if result is None:
                return None
            return {"value": result.value, "ci_low": result.ci_low, "ci_high": result.ci_high}

        return {
            "computed": self.computed,
            "judged_10": value(self.judged_10),
            "judged_100": value(self.judged_100),
            "unjudged_10": self.unjudged_10,
            "unjudged_100": self.unjudged_100,
            "warning": self.warning,
        }


@dataclass
class LeaderboardRow:
    """A run on a leaderboard: its newest done evaluation there (`evaluation`) and, per measure, the value
    of the newest done evaluation that has it (`results`), with that evaluation (`sources`)."""

    run: Run
    evaluation: Evaluation
    results: dict[str, MeasureResult] = field(default_factory=dict)
    sources: dict[str, Evaluation] = field(default_factory=dict)

    def source(self, measure: str) -> Evaluation | None:
        """The evaluation the row's value of `measure` comes from (None: the run has no such value)."""
        return self.sources.get(measure)

    @property
    def coverage(self) -> Coverage:
        return Coverage(self.results.get(WARNING_MEASURE), self.results.get(COVERAGE_MEASURES[1]))


@dataclass
class Leaderboard:
    """Runs x measures on one qrels source: per run and measure, the newest finished evaluation there
    that has the measure. `measures` are the measures asked for, by their canonical names
    (`measure_key`); the coverage measures are every row's `coverage`, apart."""

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


def measure_key(name: str) -> str:
    """The one name under which pages group a retrieval measure's values (`nDCG@10` and `ndcg_cut_10`
    are one measure: `ndcg_cut_10`); the name as stored stays what the evaluation asked for."""
    return canonical_measure(name)


def newest_results(evaluations: Iterable[Evaluation]) -> dict[str, tuple[MeasureResult, Evaluation]]:
    """Per measure (by `measure_key`), its result in the first of `evaluations` (newest first, results
    attached) that has it, as that evaluation stored it (its `measure` the name it was asked by), with
    that evaluation: a narrower re-evaluation hides none of the measures an older one has. Measures
    come in the order of the evaluations, then of their results."""
    found: dict[str, tuple[MeasureResult, Evaluation]] = {}
    for evaluation in evaluations:
        for result in evaluation.results:
            found.setdefault(measure_key(result.measure), (result, evaluation))
    return found


def leaderboard(*, qrels: QrelsSource, archived: bool = False) -> Leaderboard:
    """The runs evaluated on `qrels`, one row each: per measure, the newest done evaluation of the run
    that has it (`newest_results`). Two queries in all, whatever the number of runs and evaluations;
    archived runs and evaluations only with `archived`."""
    evaluations = Evaluation.objects.filter(qrels=qrels, status=JobStatus.DONE)
    if not archived:
        evaluations = evaluations.filter(archived=False, run__archived=False)
    evaluations = (
        evaluations.select_related("run").defer("per_query", "qids").order_by("run_id", "-finished_at", "-pk")
    )
    by_run: dict[int, list[Evaluation]] = {}
    for evaluation in evaluation_results_attach(evaluations):
        by_run.setdefault(evaluation.run_id, []).append(evaluation)
    rows: list[LeaderboardRow] = []
    measures: list[str] = []
    for newest in by_run.values():
        found = newest_results(newest)
        rows.append(
            LeaderboardRow(
                newest[0].run,
                newest[0],
                {key: replace(result, measure=key) for key, (result, _) in found.items()},
                {key: source for key, (_, source) in found.items()},
            )
        )
        measures += [key for key in found if key not in measures and key not in COVERAGE_MEASURES]
    label_runs(row.run for row in rows)
    return Leaderboard(qrels=qrels, measures=measures, rows=rows)


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
    return evaluation_results_attach(
        Evaluation.objects.filter(run=run)
        .select_related("qrels")
        .defer("per_query", "qids")
        .order_by("-created_at", "-pk")
    )


def chosen_evaluation(
    *, run: Run, evaluations: list[Evaluation], pk: Any, measure: str = ""
) -> Evaluation | None:
    """The evaluation asked for (`?evaluation=`), with its per-query values; else the newest done one
    (that has `measure`, when one has it: a narrower re-evaluation does not hide it), else the newest of
    any status (so a running or failed job shows at the top); None without evaluations."""
    if pk not in (None, ""):
        if not _is_of_run(evaluations, pk):
            return _missing("evaluation")
        return get_evaluation(team=run.team, pk=pk, per_query=True)
    done = [evaluation for evaluation in evaluations if evaluation.status == JobStatus.DONE]
    if measure:
        key = measure_key(measure)
        done = [e for e in done if any(measure_key(r.measure) == key for r in e.results)] or done
    newest = (done or evaluations)[0] if (done or evaluations) else None
    return None if newest is None else get_evaluation(team=run.team, pk=newest.pk, per_query=True)


@dataclass(frozen=True)
class MeasureLink:
    """A measure of a run's page: its key, the evaluation whose value the page shows for it, and the name
    that evaluation stored it under (what its per-query values are keyed by)."""

    key: str
    evaluation: Evaluation
    stored: str


def run_measures(*, chosen: Evaluation, evaluations: list[Evaluation]) -> list[MeasureLink]:
    """The measures a run's page offers for the chosen evaluation: its own, one per measure (`nDCG@10`
    and `ndcg_cut_10` are one), then those only older done, unarchived evaluations of the run on the
    same qrels have (what the leaderboard shows for the run), each with the newest evaluation that has it."""
    others = [
        evaluation
        for evaluation in evaluations
        if evaluation.pk != chosen.pk and evaluation.status == JobStatus.DONE
        and evaluation.qrels_id == chosen.qrels_id and not evaluation.archived
    ]  # fmt: skip
    found = newest_results((chosen, *others))
    return [MeasureLink(key, evaluation, result.measure) for key, (result, evaluation) in found.items()]


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


def integer_valued(values: Iterable[float | None]) -> bool:
    """Whether every finite value is a whole number (a count such as `num_rel`, or 0/1 per query): an axis
    of them takes whole-number ticks."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return bool(finite) and all(float(v).is_integer() for v in finite)


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
    measures = [result.measure for result in evaluation.results]
    arrays = [evaluation.per_query.get(measure, []) for measure in measures]
    rows = [
        [qid, *(values[i] if i < len(values) else None for values in arrays)]
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


@dataclass(frozen=True)
class OverlapRow:
    """Two runs' list overlap (`evalcore.comparison_extras.overlap_json`), with the runs."""

    run_a: Run
    run_b: Run
    data: dict[str, Any]

    def per_query(self) -> list[dict[str, Any]]:
        """One row per query both runs answer: qid, shared, then each figure (None where undefined)."""
        data = self.data
        figures = data["per_query"]
        return [
            {"qid": qid, "shared": data["shared"][i], **{name: values[i] for name, values in figures.items()}}
            for i, qid in enumerate(data["qids"])
        ]


@dataclass(frozen=True)
class ManySystems:
    """One measure's statistics over all the compared runs (`evalcore.comparison_extras.many_systems_json`);
    `tukey_rows` are (run a, run b, row) for every pair."""

    measure: str
    column: MeasureColumn
    stats: dict[str, Any]
    tukey_rows: list[tuple[Run, Run, dict[str, Any]]]


@dataclass
class ComparisonView:
    """A finished comparison laid out for its page: runs by id, measures, summaries and pairs."""

    comparison: Comparison
    runs: dict[int, Run]
    measures: list[str]
    summaries: dict[tuple[int, str], RunSummaryRow]
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

    def overlaps(self) -> list[OverlapRow]:
        """Each pair of runs' list overlap, as the job stored it (none for a comparison made before)."""
        return [
            OverlapRow(self.runs[entry["run_a_id"]], self.runs[entry["run_b_id"]], entry)
            for entry in self.comparison.overlap
            if entry["run_a_id"] in self.runs and entry["run_b_id"] in self.runs
        ]

    def many_systems(self) -> list[ManySystems]:
        """Per measure, the ANOVA, Tukey's HSD (3+ runs) and discriminative power the job stored."""
        found = []
        for measure in self.measures:
            stats = self.comparison.many_systems.get(measure)
            if not stats:
                continue
            tukey = stats.get("tukey") or {}
            rows = [
                (self.runs[row["run_a_id"]], self.runs[row["run_b_id"]], row)
                for row in tukey.get("pairs", [])
            ]
            found.append(ManySystems(measure, measure_column(measure), stats, rows))
        return found

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
    """The comparison's rows from its prefetched runs, attached summaries and pairs (no further query)."""
    summaries = {(summary.run_id, summary.measure): summary for summary in comparison.summaries}
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
