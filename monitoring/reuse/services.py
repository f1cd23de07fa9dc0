"""Reuse analyses of a qrels source: create (queued on commit), run (the task's one call), and the planner.

The runs analysed are the team's runs with a done evaluation on the source (its leaderboard). Both
analyses read the files the way evaluations do (`monitoring.evaluations.services.read_qrels` / `read_run`).
The sensitivity analysis needs a source built from a judging project: it reads the build's judgments with
their labels (`annotations.models.QrelsJudgment`) and re-aggregates them as the build's `aggregation` did.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
from django.db import transaction

from annotations.models import QrelsJudgment
from evalcore.jsonable import json_finite
from evalcore.retrieval import NoCommonQueriesError, Run, evaluate
from evalcore.reuse import (
    DEFAULT_MIN_DIFFS,
    PairLabels,
    ReuseParams,
    SensitivityParams,
    annotator_sensitivity,
    leave_one_out,
    topic_set_size_table,
)
from evalplatform.auth import User
from evalplatform.errors import InputError
from evalplatform.jobs import JobError, JobOutcome, JobStatus, ProgressFn, job_enqueue_on_commit, job_run
from monitoring.evaluations.selectors import label_runs
from monitoring.evaluations.services import read_qrels, read_run
from monitoring.models import Evaluation, QrelsSource, ReuseAnalysis
from monitoring.models import Run as RunRow

#: The task's hard time limit.
TIME_LIMIT = 30 * 60


def source_runs(*, qrels: QrelsSource) -> list[RunRow]:
    """The team's runs with a done evaluation on `qrels`, oldest first, labelled apart."""
    ids = Evaluation.objects.filter(qrels=qrels, status=JobStatus.DONE).values("run_id")
    runs = list(RunRow.objects.filter(team=qrels.team_id, pk__in=ids).order_by("created_at", "pk"))
    label_runs(runs)
    return runs


def check_params(kind: str, params: dict[str, Any], *, qrels: QrelsSource) -> dict[str, Any]:
    """The parameters as stored, checked by their evalcore dataclass (an `InputError` names the problem)."""
    try:
        if kind == ReuseAnalysis.Kind.REUSABILITY:
            return asdict(ReuseParams(**params))
        if kind == ReuseAnalysis.Kind.SENSITIVITY:
            if qrels.kind != QrelsSource.Kind.BUILD or qrels.build is None:
                raise InputError("Annotator sensitivity needs qrels built from a judging project.")
            params = {"aggregation": qrels.build.aggregation, **params}
            return asdict(SensitivityParams(**params))
    except (TypeError, ValueError) as error:
        raise InputError(str(error)) from None
    raise InputError(f"Unknown analysis {kind!r}; choose reusability or sensitivity.")


@transaction.atomic
def reuse_analysis_create(
    *, qrels: QrelsSource, kind: str, params: dict[str, Any] | None = None, created_by: User | None
) -> ReuseAnalysis:
    """A pending analysis of `qrels`, queued when the transaction commits."""
    checked = check_params(kind, dict(params or {}), qrels=qrels)
    analysis = ReuseAnalysis.objects.create(
        team=qrels.team, qrels=qrels, kind=kind, params=checked, created_by=created_by
    )
    job_enqueue_on_commit(analysis)
    return analysis


def reuse_analysis_run(*, analysis_id: int) -> JobOutcome:
    return job_run(ReuseAnalysis, pk=analysis_id, compute=_compute, store=_store)


def _compute(analysis: ReuseAnalysis, progress: ProgressFn) -> dict[str, Any]:
    runs = source_runs(qrels=analysis.qrels)
    if len(runs) < 2:
        raise JobError("Evaluate at least two runs on these qrels first: the analysis compares runs.")
    if analysis.kind == ReuseAnalysis.Kind.REUSABILITY:
        return reusability_compute(analysis.qrels, runs, ReuseParams(**analysis.params), progress)
    return sensitivity_compute(analysis.qrels, runs, SensitivityParams(**analysis.params), progress)


def _store(analysis: ReuseAnalysis, result: dict[str, Any]) -> None:
    analysis.result = result


def _read_runs(runs: list[RunRow], progress: ProgressFn) -> dict[str, Run]:
    data = {}
    for i, run in enumerate(runs):
        progress(0.3 * i / len(runs), f"reading {run.label}")
        data[run.label] = read_run(run)
    return data


def reusability_compute(
    source: QrelsSource, runs: list[RunRow], params: ReuseParams, progress: ProgressFn
) -> dict[str, Any]:
    """The leave-one-out report as JSON, with the per-topic matrix of the main measure for the planner."""
    qrels = read_qrels(source)
    data = _read_runs(runs, progress)
    progress(0.3, "leaving each run and each tag group out")
    tags = {run.label: [str(t) for t in run.tags or []] for run in runs}
    report = leave_one_out(qrels, data, params=params, tags=tags)
    progress(0.9, "per-topic scores for the planner")
    result = report.as_dict()
    result["topics"] = topic_matrix(qrels, data, measure=params.measure, rel_level=params.rel_level)
    return json_finite(result)  # type: ignore[no-any-return]


def topic_matrix(qrels: Any, runs: dict[str, Run], *, measure: str, rel_level: int) -> dict[str, Any]:
    """{"qids", "runs", "scores": topics x runs} over the queries every run answered."""
    per_run = {}
    for name, run in runs.items():
        try:
            result = evaluate(qrels, run, [measure], rel_level=rel_level)
        except NoCommonQueriesError:
            continue
        qids, values = result.per_query_array(result.specs[0].key)
        per_run[name] = dict(zip(qids.tolist(), values.tolist(), strict=True))
    common = sorted(set.intersection(*(set(v) for v in per_run.values()))) if per_run else []
    return {
        "qids": common,
        "runs": list(per_run),
        "scores": [[per_run[name][q] for name in per_run] for q in common],
    }


def pair_labels(source: QrelsSource) -> PairLabels:
    rows = QrelsJudgment.objects.filter(build=source.build).order_by("qid", "doc_id")
    return PairLabels.from_judgments(list(rows.values_list("qid", "doc_id", "rel", "labels")))


def sensitivity_compute(
    source: QrelsSource, runs: list[RunRow], params: SensitivityParams, progress: ProgressFn
) -> dict[str, Any]:
    if source.build is None:
        raise JobError("Annotator sensitivity needs qrels built from a judging project.")
    pairs = pair_labels(source)
    if not pairs.n_pairs:
        raise JobError("The build has no judgments.")
    data = _read_runs(runs, progress)
    report = annotator_sensitivity(
        pairs, data, params=params, progress=lambda f, note: progress(0.3 + 0.7 * f, note)
    )
    return json_finite(report.as_dict())  # type: ignore[no-any-return]


# --- reading ----------------------------------------------------------------------------------------


def latest_analysis(*, qrels: QrelsSource, kind: str) -> ReuseAnalysis | None:
    """The newest analysis of this kind (done or not)."""
    return ReuseAnalysis.objects.filter(qrels=qrels, kind=kind).order_by("-created_at", "-pk").first()


def latest_done(*, qrels: QrelsSource, kind: str) -> ReuseAnalysis | None:
    return (
        ReuseAnalysis.objects.filter(qrels=qrels, kind=kind, status=JobStatus.DONE)
        .order_by("-finished_at", "-pk")
        .first()
    )


def planner(
    scores: Any,
    *,
    min_diffs: tuple[float, ...] = DEFAULT_MIN_DIFFS,
    alpha: float = 0.05,
    power: float = 0.8,
    n_systems: int | None = None,
    method: str = "exact",
) -> dict[str, Any]:
    """The planner's context from a (topics x systems) score matrix: `{"planner": {...}}` with the
    variance, the settings and one row per minD (topics by paired t-test and by one-way ANOVA), or
    `{"planner": None, "planner_reason": ...}` when the matrix is too small. The template
    `monitoring/reuse/_planner.html` renders it."""
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        return {
            "planner": None,
            "planner_reason": "The planner needs per-topic scores of at least 2 runs on 2 topics.",
        }
    try:
        table = topic_set_size_table(
            x,
            min_diffs=min_diffs,
            alpha=alpha,
            power=power,
            n_systems=n_systems,
            method=method,  # type: ignore[arg-type]
        )
    except ValueError as error:
        return {"planner": None, "planner_reason": str(error)}
    return {"planner": json_finite(table.as_dict()), "planner_reason": ""}


def qrels_planner_context(*, qrels: QrelsSource, **options: Any) -> dict[str, Any]:
    """The planner's context for a qrels source: from its newest done reusability analysis's per-topic
    matrix (the pool page includes `monitoring/reuse/_planner.html` with this context)."""
    analysis = latest_done(qrels=qrels, kind=ReuseAnalysis.Kind.REUSABILITY)
    if analysis is None:
        return {
            "planner": None,
            "planner_reason": "Run the reusability analysis to plan from these runs' scores.",
        }
    topics = analysis.result.get("topics") or {}
    return planner(topics.get("scores") or [], **options)
