"""Evaluation and comparison jobs: a run against a qrels source, and several runs compared.

Both are jobs (`evalplatform.jobs`). `evaluation_create` finds or creates the one evaluation of a run
on a qrels source with given options (the same request finds the same evaluation; a failed one is
tried again) and queues it on commit. `evaluation_run`, the task's one call, reads both files,
evaluates with `evalcore.retrieval.evaluate` (trec_eval's semantics), adds a percentile bootstrap CI per
measure, and writes each measure's value and CI to the metric table (`series.services.metric_values_write`,
in the series of its run's name on its qrels) and the per-query arrays to the evaluation's row, all in one
transaction.

A comparison evaluates each run the same way on the same qrels and compares them with
`evalcore.comparison.compare_scores` (paired tests, p-values corrected over runs x measures). Each run's
mean and CI of each measure go to the metric table too, in no series (subgroup: the run's id); the paired
tests, with their effect sizes, are `ComparisonPair` rows. The same job stores, per measure, the two-way
ANOVA, Tukey's HSD and discriminative power of the runs' per-query scores, and per pair of runs the overlap
of their lists (`evalcore.comparison_extras`), on the comparison's row.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotations.qrels import qrels_export
from evalcore import trec
from evalcore.comparison import (
    DEFAULT_MEASURES,
    ComparisonParams,
    ComparisonParamsError,
    align_results,
    compare_scores,
    measure_summary,
)
from evalcore.comparison_extras import effect_size_json, many_systems_json, overlap_json
from evalcore.coverage import COVERAGE_MEASURES
from evalcore.jsonable import json_number, json_numbers
from evalcore.overlap import OverlapParams
from evalcore.retrieval import Qrels, RetrievalResult, evaluate, parse_measures, require_rel_format
from evalcore.retrieval import Run as RunData
from evalcore.stats import DEFAULT_BOOTSTRAP
from evalplatform.auth import User
from evalplatform.errors import InputError
from evalplatform.jobs import JobError, JobOutcome, JobStatus, ProgressFn, job_enqueue_on_commit, job_run
from monitoring.evaluations.models import OVERLAP
from monitoring.models import PARAMS, Comparison, ComparisonPair, Evaluation, QrelsSource, Run, options_key
from series.services import MetricValueIn, metric_values_write
from series.subjects import run_series

#: Bootstrap resamples of each measure's confidence interval (`evalcore.stats.DEFAULT_BOOTSTRAP`).
N_RESAMPLES = DEFAULT_BOOTSTRAP.n_resamples
#: The jobs' hard time limit on the worker.
TIME_LIMIT = 30 * 60


# --- reading the inputs -------------------------------------------------------------------------------


@contextmanager
def qrels_path(source: QrelsSource) -> Iterator[str]:
    """A path to the source's qrels in TREC form (a build is exported to a temporary file)."""
    if source.kind == QrelsSource.Kind.UPLOAD:
        yield source.file.path
        return
    assert source.build is not None
    with tempfile.NamedTemporaryFile("w", suffix=".qrels", encoding="utf-8") as handle:
        handle.write(qrels_export(source.build, fmt="trec"))
        handle.flush()
        yield handle.name


def read_qrels(source: QrelsSource) -> Qrels:
    with qrels_path(source) as path:
        return _named(trec.read_qrels, path, source.name, fmt=source.format or None)


def read_run(run: Run) -> RunData:
    return _named(trec.read_run, run.file.path, run.original_name or run.name, fmt=run.format or None)


def _named(reader: Any, path: str, name: str, **options: Any) -> Any:
    """Run a reader; its errors name the file as the user knows it, not its storage path."""
    if not Path(path).is_file():
        raise JobError(f"{name}: the stored file is missing")
    try:
        return reader(path, **options)
    except Exception as error:  # the readers' messages start with the path
        message = str(error).replace(str(path), name)
        raise JobError(message) from None


def check_measures(measures: Sequence[str]) -> list[str]:
    """The measure names, checked against the registry (an unknown one suggests the closest names)."""
    names = [name.strip() for name in measures if name.strip()]
    if not names:
        raise InputError("Choose at least one measure.")
    try:
        require_rel_format(parse_measures(names), "qrels")  # evaluations read qrels, not preferences
    except Exception as error:
        raise InputError(str(error)) from None
    return names


# --- evaluations --------------------------------------------------------------------------------------


def with_coverage(names: Sequence[str]) -> list[str]:
    """The measures asked for, then the coverage measures they lack."""
    return list(dict.fromkeys([*names, *COVERAGE_MEASURES]))


@transaction.atomic
def evaluation_create(
    *,
    run: Run,
    qrels: QrelsSource,
    measures: Sequence[str] = DEFAULT_MEASURES,
    rel_level: int = PARAMS.rel_level,
    complete: bool = PARAMS.complete,
    created_by: User | None = None,
    enqueue: bool = True,
) -> Evaluation:
    """The evaluation of `run` on `qrels` with these options, queued on commit.

    The same request finds the same evaluation: a done one is returned as it is, a failed one is reset
    and queued again. The coverage measures (`evalcore.coverage.COVERAGE_MEASURES`) are always added to
    the ones asked for, so every leaderboard can show how far each run is judged. Raises `InputError` for
    unknown measures or a run and qrels of different teams.
    """
    if run.team_id != qrels.team_id:
        raise InputError("The run and the qrels belong to different teams.")
    names = with_coverage(check_measures(measures))
    key = options_key(measures=names, rel_level=rel_level, complete=complete)
    evaluation, created = Evaluation.objects.select_for_update().get_or_create(
        run=run,
        qrels=qrels,
        options_key=key,
        defaults={
            "team_id": run.team_id,
            "measures": names,
            "rel_level": rel_level,
            "complete": complete,
            "created_by": created_by,
        },
    )
    if not created and evaluation.status == JobStatus.FAILED:
        Evaluation.objects.filter(pk=evaluation.pk).update(status=JobStatus.PENDING, attempts=0, error="")
        evaluation.refresh_from_db()
        created = True
    if created and enqueue:
        job_enqueue_on_commit(evaluation)
    return evaluation


@dataclass(frozen=True)
class MeasureRow:
    measure: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    per_query: list[float | None]


@dataclass(frozen=True)
class EvaluationOutput:
    qids: list[str]
    num_queries: int
    num_missing: int
    rows: list[MeasureRow]
    run_size: tuple[int, int] | None = None  # (queries, rows) of the run file, as read in full
    qrels_size: tuple[int, int] | None = None


def evaluation_run(*, evaluation_id: int) -> JobOutcome:
    """Claim, compute and store an evaluation (the task's one call). Idempotent. Its values announce its
    series (its run's name on its qrels) once committed, and the alert rules on it are checked then."""
    return job_run(Evaluation, pk=evaluation_id, compute=_evaluate, store=_store_evaluation)


def _evaluate(evaluation: Evaluation, progress: ProgressFn) -> EvaluationOutput:
    progress(0.05, "reading the qrels")
    qrels = read_qrels(evaluation.qrels)
    progress(0.25, "reading the run")
    run = read_run(evaluation.run)
    progress(0.6, "evaluating")
    result = _evaluate_data(qrels, run, evaluation.measures, evaluation.rel_level, evaluation.complete)
    progress(0.8, "bootstrapping confidence intervals")
    output = evaluation_output(result, confidence=evaluation.confidence)
    return replace(output, run_size=(len(run.qids), len(run)), qrels_size=(len(qrels.qids), len(qrels)))


def _evaluate_data(
    qrels: Qrels, run: RunData, measures: list[str], level: int, complete: bool
) -> RetrievalResult:
    try:
        return evaluate(qrels, run, measures, rel_level=level, complete=complete)
    except Exception as error:
        raise JobError(str(error)) from None


def evaluation_output(result: RetrievalResult, *, confidence: float = 0.95) -> EvaluationOutput:
    """One row per measure: the aggregate, a bootstrap CI of the mean, and the per-query values aligned
    with the evaluated queries (and, under -c, the qrels queries the run lacks, at 0)."""
    rows = []
    qids: list[str] = []
    for spec in result.specs:
        query_ids, values = result.per_query_array(spec.key)
        qids = [str(qid) for qid in query_ids]
        # The one definition of a run's interval, shared with compare_runs and the comparisons.
        summary = measure_summary(
            result, spec.key, bootstrap=replace(DEFAULT_BOOTSTRAP, confidence=confidence)
        )
        rows.append(
            MeasureRow(
                measure=spec.key,
                value=json_number(summary.mean),
                ci_low=json_number(summary.ci_low),
                ci_high=json_number(summary.ci_high),
                per_query=json_numbers(values),
            )
        )
    return EvaluationOutput(
        qids=qids, num_queries=len(result.qids), num_missing=len(result.missing_qids), rows=rows
    )


def _store_evaluation(evaluation: Evaluation, output: EvaluationOutput) -> None:
    for model, pk, size in (
        (Run, evaluation.run_id, output.run_size),
        (QrelsSource, evaluation.qrels_id, output.qrels_size),
    ):
        if size is not None:  # counts the upload could not know from its first lines
            model.objects.filter(pk=pk, num_rows__isnull=True).update(num_queries=size[0], num_rows=size[1])
    evaluation.qids = output.qids
    evaluation.num_queries = output.num_queries
    evaluation.num_missing = output.num_missing
    evaluation.per_query = {row.measure: row.per_query for row in output.rows}
    # Observed when it finishes (the job's `finished_at`, set as this transaction commits the job done).
    metric_values_write(
        job=evaluation,
        series=run_series(evaluation.qrels, evaluation.run.name),
        observed_at=timezone.now(),
        values=[MetricValueIn(row.measure, row.value, ci_low=row.ci_low, ci_high=row.ci_high)
                for row in output.rows],
    )  # fmt: skip


# --- comparisons --------------------------------------------------------------------------------------


@transaction.atomic
def comparison_create(
    *,
    qrels: QrelsSource,
    runs: Sequence[Run],
    measures: Sequence[str] = PARAMS.measures,
    rel_level: int = PARAMS.rel_level,
    complete: bool = PARAMS.complete,
    test: str = PARAMS.test,
    correction: str = PARAMS.correction,
    alpha: float = PARAMS.alpha,
    overlap_k: int = OVERLAP.k,
    rbo_p: float = OVERLAP.p,
    created_by: User | None = None,
    enqueue: bool = True,
) -> Comparison:
    """A comparison of at least two of the team's runs on `qrels`, queued on commit; `overlap_k` and
    `rbo_p` are the depth and the persistence of the lists' overlap (`evalcore.overlap`)."""
    distinct = list({run.pk: run for run in runs}.values())
    if len(distinct) < 2:
        raise InputError("Choose at least two different runs to compare.")
    if any(run.team_id != qrels.team_id for run in distinct):
        raise InputError("Every run must belong to the qrels' team.")
    try:
        params = ComparisonParams(
            measures=tuple(check_measures(measures)), rel_level=rel_level, complete=complete,
            test=test, correction=correction, alpha=alpha,  # type: ignore[arg-type]
        )  # fmt: skip
        overlap = OverlapParams(k=overlap_k, p=rbo_p)
    except (ComparisonParamsError, ValueError) as error:
        raise InputError(str(error)) from None
    comparison = Comparison.objects.create(
        overlap_k=overlap.k, rbo_p=overlap.p,
        team_id=qrels.team_id, qrels=qrels, measures=list(params.measures), rel_level=params.rel_level,
        complete=params.complete, test=params.test, correction=params.correction, alpha=params.alpha,
        confidence=params.confidence, created_by=created_by,
    )  # fmt: skip
    comparison.runs.set(distinct)
    if enqueue:
        job_enqueue_on_commit(comparison)
    return comparison


@dataclass(frozen=True)
class ComparisonOutput:
    qids: list[str]
    summaries: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    overlap: list[dict[str, Any]] = field(default_factory=list)
    many_systems: dict[str, dict[str, Any]] = field(default_factory=dict)


def comparison_run(*, comparison_id: int) -> JobOutcome:
    """Claim, compute and store a comparison (the task's one call). Idempotent."""
    return job_run(Comparison, pk=comparison_id, compute=_compare, store=_store_comparison)


def _compare(comparison: Comparison, progress: ProgressFn) -> ComparisonOutput:
    runs = list(comparison.runs.order_by("pk"))
    progress(0.0, "reading the qrels")
    qrels = read_qrels(comparison.qrels)
    results: dict[str, RetrievalResult] = {}
    reported: dict[str, RetrievalResult] = {}
    datas: dict[int, RunData] = {}
    for index, run in enumerate(runs):
        progress(0.05 + 0.75 * index / len(runs), f"evaluating {run.name}")
        data = datas[run.pk] = read_run(run)
        # complete=True: every run covers every qrels query, so the per-query arrays line up for the
        # paired tests; each run's mean follows trec_eval's rule (-c or not), as its evaluation's.
        results[str(run.pk)] = _evaluate_data(qrels, data, comparison.measures, comparison.rel_level, True)
        reported[str(run.pk)] = (
            results[str(run.pk)] if comparison.complete
            else _evaluate_data(qrels, data, comparison.measures, comparison.rel_level, False)
        )  # fmt: skip
    progress(0.8, "testing")
    keys = [spec.key for spec in next(iter(results.values())).specs]
    bootstrap = replace(DEFAULT_BOOTSTRAP, confidence=comparison.confidence)
    try:
        qids, scores = align_results(results, keys, complete=comparison.complete)
        params = comparison.params()
        compared = compare_scores(
            scores, test=params.test, correction=params.correction,
            alpha=params.alpha, confidence=bootstrap.confidence, n_resamples=bootstrap.n_resamples,
            seed=bootstrap.seed,
            runs={name: {key: measure_summary(result, key, bootstrap=bootstrap) for key in keys}
                  for name, result in reported.items()},
        )  # fmt: skip
    except Exception as error:
        raise JobError(str(error)) from None
    summaries = [
        {"run_id": int(run_id), "measure": measure, "mean": summary.mean, "ci_low": json_number(summary.ci_low),
         "ci_high": json_number(summary.ci_high), "num_queries": summary.n_queries,
         "per_query": json_numbers(scores[run_id][measure])}
        for run_id, measures in compared.runs.items()
        for measure, summary in measures.items()
    ]  # fmt: skip
    pairs = []
    for pair in compared.pairs:
        a, b = scores[pair.a][pair.measure], scores[pair.b][pair.measure]
        pairs.append(
            {"run_a_id": int(pair.a), "run_b_id": int(pair.b), "measure": pair.measure, "diff": pair.diff,
             "p_value": pair.p_value, "p_adjusted": pair.p_adjusted, "significant": pair.significant,
             "wins": int(np.sum(a > b)), "ties": int(np.sum(a == b)), "losses": int(np.sum(a < b)),
             **effect_size_json(a, b)}
        )  # fmt: skip
    progress(0.85, "statistics of many systems")
    ids = [run.pk for run in runs]
    many_systems = {
        key: many_systems_json(
            np.array([scores[str(pk)][key] for pk in ids]), ids, alpha=comparison.alpha,
            confidence=comparison.confidence,
        )
        for key in keys
    }  # fmt: skip
    progress(0.93, "list overlap")
    overlap_params = comparison.overlap_params()
    overlap = [
        overlap_json(datas[a], datas[b], run_a_id=a, run_b_id=b, params=overlap_params)
        for index, a in enumerate(ids) for b in ids[index + 1:]
    ]  # fmt: skip
    return ComparisonOutput(
        qids=[str(q) for q in qids],
        summaries=summaries,
        pairs=pairs,
        overlap=overlap,
        many_systems=many_systems,
    )


def _store_comparison(comparison: Comparison, output: ComparisonOutput) -> None:
    comparison.qids = output.qids
    comparison.overlap, comparison.many_systems = output.overlap, output.many_systems
    comparison.per_query, comparison.num_queries = {}, {}
    for row in output.summaries:
        run = str(row["run_id"])
        comparison.per_query.setdefault(run, {})[row["measure"]] = row["per_query"]
        comparison.num_queries.setdefault(run, {})[row["measure"]] = row["num_queries"]
    # A run's summary in a comparison belongs to no series: the run's series is its evaluations'.
    metric_values_write(
        job=comparison,
        observed_at=timezone.now(),
        values=[MetricValueIn(row["measure"], row["mean"], subgroup=str(row["run_id"]), ci_low=row["ci_low"],
                              ci_high=row["ci_high"]) for row in output.summaries],
    )  # fmt: skip
    ComparisonPair.objects.filter(comparison=comparison).delete()
    ComparisonPair.objects.bulk_create([ComparisonPair(comparison=comparison, **row) for row in output.pairs])
