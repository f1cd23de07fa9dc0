"""Recommendation and fraud evaluation jobs: one evaluation per set and options, run and stored
idempotently.

As in `monitoring.evaluations.services`: `*_evaluation_create` finds or creates the one evaluation of a set with
given options (the same request finds the same evaluation; a failed one is queued again) and queues it on
commit; `*_evaluation_run`, the task's one call, reads the whole files, computes every metric of the
family from shared statistics, and stores one row per metric in the metric table (in the series of the
set's name, `series.subjects`) and the dashboards' curves (thinned to a bounded number of points) with
the evaluation, in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from django.db import models, transaction
from django.utils import timezone

from evalcore.csvfiles import CsvSchema, read_csv
from evalcore.errors import EvalCoreError
from evalcore.fraud import FraudOptions, evaluate_scores, read_scores
from evalcore.jsonable import json_number
from evalcore.options import OptionsError
from evalcore.recsys import METRIC_SPECS as RECSYS_SPECS
from evalcore.recsys import RecsysOptions, RecsysStats, category_codes, read_recsys_files
from evalplatform.auth import User
from evalplatform.jobs import Job, JobError, JobOutcome, JobStatus, ProgressFn, job_enqueue_on_commit, job_run
from monitoring.models import (
    FraudScoreEvaluation,
    FraudScoreSet,
    RecommendationEvaluation,
    RecommendationSet,
    options_key_of,
)
from monitoring.recsys_fraud.curves import fraud_curves, recsys_curves
from series.models import Series
from series.services import MetricValueIn, metric_values_write
from series.subjects import fraud_series, recsys_series

J = TypeVar("J", bound=Job)

#: The jobs' hard time limit on the worker.
TIME_LIMIT = 30 * 60

ITEMS_SCHEMA = CsvSchema({"item": "text", "category": "text"}, ("item",))

#: An option out of its bounds, naming it (`field`): the dataclasses check their options themselves
#: (`evalcore.options`), so a form or the API meets it where it builds them; the API's 400 and the forms
#: show it on that field.
OptionError = OptionsError


# --- creating evaluations -----------------------------------------------------------------------------


def _find_or_create(model: type[J], *, lookup: dict[str, Any], defaults: dict[str, Any], enqueue: bool) -> J:
    """The job with `lookup`, created with `defaults` if new; a failed one is reset and queued again."""
    job, created = model.objects.select_for_update().get_or_create(**lookup, defaults=defaults)
    if not created and job.status == JobStatus.FAILED:
        model.objects.filter(pk=job.pk).update(status=JobStatus.PENDING, attempts=0, error="")
        job.refresh_from_db()
        created = True
    if created and enqueue:
        job_enqueue_on_commit(job)
    return job  # type: ignore[return-value]


@transaction.atomic
def recommendation_evaluation_create(
    *,
    recommendation_set: RecommendationSet,
    options: RecsysOptions | None = None,
    created_by: User | None = None,
    enqueue: bool = True,
) -> RecommendationEvaluation:
    """The evaluation of the set with these options, queued on commit (the same request finds the same
    evaluation). The options checked their bounds when they were made."""
    checked = options or RecsysOptions()
    return _find_or_create(
        RecommendationEvaluation,
        lookup={"recommendation_set": recommendation_set, "options_key": options_key_of(checked)},
        defaults={"team_id": recommendation_set.team_id, "k": checked.k, "complete": checked.complete,
                  "head_share": checked.head_share, "created_by": created_by},
        enqueue=enqueue,
    )  # fmt: skip


@transaction.atomic
def fraud_evaluation_create(
    *,
    score_set: FraudScoreSet,
    options: FraudOptions | None = None,
    created_by: User | None = None,
    enqueue: bool = True,
) -> FraudScoreEvaluation:
    """The evaluation of the score set with these options, queued on commit (the same request finds the
    same evaluation). The options checked their bounds when they were made."""
    checked = options or FraudOptions()
    return _find_or_create(
        FraudScoreEvaluation,
        lookup={"score_set": score_set, "options_key": options_key_of(checked)},
        defaults={"team_id": score_set.team_id, "target_fpr": checked.target_fpr, "budget": checked.budget,
                  "threshold": checked.threshold, "fp_cost": checked.fp_cost, "fn_cost": checked.fn_cost,
                  "created_by": created_by},
        enqueue=enqueue,
    )  # fmt: skip


# --- running them -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvaluationOutput:
    metrics: dict[str, float | None]
    summary: dict[str, Any]
    curves: dict[str, Any]
    set_counts: dict[str, int | None]


def recommendation_evaluation_run(*, evaluation_id: int) -> JobOutcome:
    """Claim, compute and store a recommendation evaluation (the task's one call). Idempotent."""
    return job_run(
        RecommendationEvaluation,
        pk=evaluation_id,
        compute=_evaluate_recommendations,
        store=_store_recommendations,
    )


def fraud_evaluation_run(*, evaluation_id: int) -> JobOutcome:
    """Claim, compute and store a fraud evaluation (the task's one call). Idempotent."""
    return job_run(FraudScoreEvaluation, pk=evaluation_id, compute=_evaluate_scores, store=_store_scores)


def _read_named(files: dict[str, Any], names: dict[str, str], reader: Callable[[dict[str, str]], Any]) -> Any:
    """Run a reader on stored files; its errors name the files as the user knows them."""
    paths = {role: stored.path for role, stored in files.items()}
    for role, path in paths.items():
        if not Path(path).is_file():
            raise JobError(f"{names[role]}: the stored file is missing")
    try:
        return reader(paths)
    except (EvalCoreError, OSError, UnicodeDecodeError, ValueError) as error:
        message = str(error)
        for role, path in paths.items():
            message = message.replace(path, names[role])
        raise JobError(message) from None


def _evaluate_recommendations(evaluation: RecommendationEvaluation, progress: ProgressFn) -> EvaluationOutput:
    chosen = evaluation.recommendation_set
    options = evaluation.options()
    stored = chosen.stored()
    names = {role: chosen.display_name(role) for role in stored}
    progress(0.05, "reading the files")
    files = _read_named(stored, names, lambda paths: read_recsys_files(
        paths["recs"], paths["interactions"], items=paths.get("items"), history=paths.get("history"),
        k=options.k, complete=options.complete,
    ))  # fmt: skip
    progress(0.6, "evaluating")
    data = replace(files.data, head_share=options.head_share)
    stats = RecsysStats(data, k=options.k)  # a k beyond the longest list still divides by k
    metrics = {spec.name: json_number(spec.of_stats(stats)) for spec in RECSYS_SPECS}
    progress(0.85, "drawing the curves")
    names_of = _category_names(stored, names, data.categories) if "items" in stored else None
    lists = stats.lists
    curves = recsys_curves(stats.exposure, data.popularity, data.categories, names_of)
    summary = files.summary(options.k)
    with_list = int((lists.lengths > 0).sum())
    counts: dict[str, int | None] = {"num_users": with_list, "num_items": lists.n_items}
    if options.k is None:
        counts["depth"] = int(lists.lengths.max()) if lists.n_users else 0
    return EvaluationOutput(metrics, summary, curves, counts)


def _category_names(
    stored: dict[str, Any], names: dict[str, str], codes: np.ndarray | None
) -> list[str] | None:
    """The category of each code the core gave the items file's categories (in order of first
    appearance, as the core encodes them); None when the file has no category column."""
    if codes is None:
        return None
    table = _read_named(
        {"items": stored["items"]}, names, lambda paths: read_csv(paths["items"], ITEMS_SCHEMA)
    )
    values, mine = category_codes(table)
    if not np.array_equal(mine, codes):  # not the core's encoding after all: no names rather than wrong ones
        return None
    return [value.decode("utf-8", errors="replace") for value in values.to_pylist()]


def _evaluate_scores(evaluation: FraudScoreEvaluation, progress: ProgressFn) -> EvaluationOutput:
    score_set = evaluation.score_set
    progress(0.05, "reading the scores")
    examples = _read_named(
        {"scores": score_set.file}, {"scores": score_set.original_name or score_set.name},
        lambda paths: read_scores(paths["scores"]),
    )  # fmt: skip
    progress(0.5, "evaluating")
    try:
        evaluated = evaluate_scores(examples, evaluation.options())
        metrics = {name: json_number(value) for name, value in evaluated.metrics().items()}
    except EvalCoreError as error:
        raise JobError(str(error)) from None
    progress(0.8, "drawing the curves")
    curve, cost, times = evaluated.curve, evaluated.cost, evaluated.detection_times
    summary = {
        "n": curve.n,
        "n_positive": curve.n_positive,
        "n_negative": curve.n_negative,
        "operating_threshold": json_number(evaluated.operating_threshold),
        "operating_rule": evaluated.operating.rule,
        "operating_note": evaluated.operating.note,
        "confusion": {"tp": cost.tp, "fp": cost.fp, "tn": cost.tn, "fn": cost.fn},
        "flag_nothing_cost": cost.flag_nothing_cost,
        "flag_everything_cost": cost.flag_everything_cost,
        "has_amounts": examples.amounts is not None,
        "n_entities_anomalous": times.n_anomalous if times else None,
        "n_entities_detected": times.n_detected if times else None,
    }
    counts: dict[str, int | None] = {"num_rows": curve.n, "num_frauds": curve.n_positive}
    return EvaluationOutput(metrics, summary, fraud_curves(evaluated), counts)


def _store_values(
    evaluation: RecommendationEvaluation | FraudScoreEvaluation,
    series: Series,
    metrics: dict[str, float | None],
) -> None:
    """One row per metric in the metric table, in the series of the set's name, observed now (the
    evaluation's finish, in its finishing transaction): a re-run updates the rows, never duplicates them."""
    metric_values_write(
        job=evaluation, series=series, observed_at=timezone.now(),
        values=[MetricValueIn(name, value) for name, value in metrics.items()],
    )  # fmt: skip


def _fill_counts(model: type[models.Model], pk: int, counts: dict[str, int | None]) -> None:
    """Counts an upload could not know from its first lines, written once known."""
    for field, value in counts.items():
        model.objects.filter(pk=pk, **{f"{field}__isnull": True}).update(**{field: value})  # type: ignore[attr-defined]


def _store_recommendations(evaluation: RecommendationEvaluation, output: EvaluationOutput) -> None:
    _fill_counts(RecommendationSet, evaluation.recommendation_set_id, output.set_counts)
    evaluation.summary, evaluation.curves = output.summary, output.curves
    chosen = evaluation.recommendation_set
    series = recsys_series(chosen.team_id, chosen.name, url=chosen.get_absolute_url())
    _store_values(evaluation, series, output.metrics)


def _store_scores(evaluation: FraudScoreEvaluation, output: EvaluationOutput) -> None:
    _fill_counts(FraudScoreSet, evaluation.score_set_id, output.set_counts)
    evaluation.summary, evaluation.curves = output.summary, output.curves
    score_set = evaluation.score_set
    series = fraud_series(score_set.team_id, score_set.name, url=score_set.get_absolute_url())
    _store_values(evaluation, series, output.metrics)
