"""Comparison jobs: two fraud evaluations, or two recommendation evaluations, compared with paired tests.

`*_comparison_create` finds or creates the one comparison of an ordered pair of evaluations of the team
(the same request finds the same comparison; a failed one is queued again) and queues it on commit.
`*_comparison_run`, the task's one call, reads both evaluated files again (the evaluations store curves
and means, not per-example scores), pairs them and stores the statistics in `result`, in one
transaction; nothing is computed in a request.

- Fraud: the two files' examples are paired by `id` (the same ids, once each, with the same labels, or
  the job fails saying which ids are at fault), then DeLong's test of the ROC areas and a paired,
  stratified bootstrap interval of their difference (`evalcore.stats`).
- Recommendations: each set is read with its own evaluation's options; users are paired by id, and for
  each metric that averages per-user values, over the users both sets count, the paired t-test,
  Wilcoxon's signed-rank test, a paired bootstrap interval of the mean difference and Cohen's d_z and
  Hedges' g, the t-tests' p-values also adjusted over the metrics by Holm's method.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any, TypeVar

import numpy as np
from django.db import transaction

from evalcore.errors import EvalCoreError
from evalcore.fraud import pair_by_id, read_ids, read_scores
from evalcore.jsonable import json_number
from evalcore.recsys import METRICS as RECSYS_METRICS
from evalcore.recsys import RecsysStats, per_user_values, read_recsys_files
from evalcore.stats import (
    adjust_p_values,
    auc_difference_ci,
    delong_test,
    paired_bootstrap_ci,
    paired_effect_size,
    paired_t_test,
    wilcoxon_test,
)
from evalplatform.auth import User
from evalplatform.jobs import Job, JobError, JobOutcome, JobStatus, ProgressFn, job_enqueue_on_commit, job_run
from monitoring.recsys_fraud.comparison_models import FraudComparison, RecommendationComparison
from monitoring.recsys_fraud.jobs import (
    _read_named,
    fraud_evaluation_create,
    recommendation_evaluation_create,
)
from monitoring.recsys_fraud.models import (
    FraudScoreEvaluation,
    FraudScoreSet,
    RecommendationEvaluation,
    RecommendationSet,
)

C = TypeVar("C", FraudComparison, RecommendationComparison)

#: The options of a fraud evaluation that change its cost curve (and its operating point).
FRAUD_OPTIONS = ("target_fpr", "threshold", "fp_cost", "fn_cost", "budget")
#: The options of a recommendation evaluation that change its per-user values.
RECSYS_OPTIONS = ("k", "complete", "head_share")


class ComparisonRefused(JobError):
    """Two evaluations that cannot be compared (the same one twice, or of another team)."""


def _create(model: type[C], *, a: Any, b: Any, created_by: User | None, enqueue: bool) -> C:
    if a.pk == b.pk:
        raise ComparisonRefused(
            "Choose another evaluation: an evaluation compared with itself differs in nothing."
        )
    if a.team_id != b.team_id:
        raise ComparisonRefused("Both evaluations must belong to the team.")
    job, created = model.objects.select_for_update().get_or_create(
        evaluation_a=a, evaluation_b=b, defaults={"team_id": a.team_id, "created_by": created_by}
    )
    if not created and job.status == JobStatus.FAILED:
        model.objects.filter(pk=job.pk).update(status=JobStatus.PENDING, attempts=0, error="")
        job.refresh_from_db()
        created = True
    if created and enqueue:
        job_enqueue_on_commit(job)
    return job


@transaction.atomic
def fraud_comparison_create(
    *, a: FraudScoreEvaluation, b: FraudScoreEvaluation, created_by: User | None = None, enqueue: bool = True
) -> FraudComparison:
    """The comparison of fraud evaluation `a` with `b`, queued on commit (the same pair finds it again)."""
    return _create(FraudComparison, a=a, b=b, created_by=created_by, enqueue=enqueue)


@transaction.atomic
def recommendation_comparison_create(
    *,
    a: RecommendationEvaluation,
    b: RecommendationEvaluation,
    created_by: User | None = None,
    enqueue: bool = True,
) -> RecommendationComparison:
    """The comparison of recommendation evaluation `a` with `b`, queued on commit."""
    return _create(RecommendationComparison, a=a, b=b, created_by=created_by, enqueue=enqueue)


@transaction.atomic
def fraud_comparison_with_set(
    *, a: FraudScoreEvaluation, score_set: FraudScoreSet, created_by: User | None = None, enqueue: bool = True
) -> FraudComparison:
    """`a` compared with `score_set` evaluated with `a`'s options (the evaluation found, or queued)."""
    b = fraud_evaluation_create(
        score_set=score_set, options=a.options(), created_by=created_by, enqueue=enqueue
    )
    return fraud_comparison_create(a=a, b=b, created_by=created_by, enqueue=enqueue)


@transaction.atomic
def recommendation_comparison_with_set(
    *,
    a: RecommendationEvaluation,
    recommendation_set: RecommendationSet,
    created_by: User | None = None,
    enqueue: bool = True,
) -> RecommendationComparison:
    """`a` compared with `recommendation_set` evaluated with `a`'s options (found, or queued)."""
    b = recommendation_evaluation_create(
        recommendation_set=recommendation_set, options=a.options(), created_by=created_by, enqueue=enqueue
    )
    return recommendation_comparison_create(a=a, b=b, created_by=created_by, enqueue=enqueue)


def differing_options(a: Job, b: Job, names: tuple[str, ...]) -> list[str]:
    """The options two evaluations were run with that differ, by name."""
    return [name for name in names if getattr(a, name) != getattr(b, name)]


# --- fraud --------------------------------------------------------------------------------------------


def fraud_comparison_run(*, comparison_id: int) -> JobOutcome:
    """Claim, compute and store a fraud comparison (the task's one call). Idempotent."""
    return job_run(FraudComparison, pk=comparison_id, compute=_compare_scores, store=_store)


def _read_scores_with_ids(evaluation: FraudScoreEvaluation) -> tuple[Any, Any]:
    score_set = evaluation.score_set
    name = score_set.original_name or score_set.name
    return _read_named(  # type: ignore[no-any-return]
        {"scores": score_set.file}, {"scores": name},
        lambda paths: (read_ids(paths["scores"]), read_scores(paths["scores"])),
    )  # fmt: skip


def _compare_scores(comparison: FraudComparison, progress: ProgressFn) -> dict[str, Any]:
    a, b = comparison.evaluation_a, comparison.evaluation_b
    progress(0.05, "reading the scores")
    ids_a, examples_a = _read_scores_with_ids(a)
    ids_b, examples_b = _read_scores_with_ids(b)
    progress(0.3, "pairing the examples by id")
    try:
        paired = pair_by_id(
            ids_a, ids_b, labels_a=examples_a.labels, labels_b=examples_b.labels,
            names=(a.score_set.name, b.score_set.name),
        )  # fmt: skip
        labels = examples_a.labels[paired.a]
        scores_a, scores_b = examples_a.scores[paired.a], examples_b.scores[paired.b]
        progress(0.4, "DeLong's test")
        test = delong_test(labels, scores_a, scores_b)
        progress(0.5, "bootstrapping the difference in AUC")
        interval = auc_difference_ci(
            labels, scores_a, scores_b, n_resamples=comparison.n_resamples, confidence=comparison.confidence,
            seed=comparison.seed,
        )  # fmt: skip
    except EvalCoreError as error:
        raise JobError(str(error)) from None
    return {
        "n": paired.n,
        "n_positive": test.n_positive,
        "n_negative": test.n_negative,
        "delong": _jsonable(asdict(test)),
        "bootstrap": _jsonable(asdict(interval)),
        "options_differ": differing_options(a, b, FRAUD_OPTIONS),
    }


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    """Counts as they are, floats as JSON numbers (None for an infinite z or a NaN)."""
    return {name: value if isinstance(value, int) else json_number(value) for name, value in values.items()}


def _store(comparison: FraudComparison | RecommendationComparison, result: dict[str, Any]) -> None:
    comparison.result = result


# --- recommendations ----------------------------------------------------------------------------------


def recommendation_comparison_run(*, comparison_id: int) -> JobOutcome:
    """Claim, compute and store a recommendation comparison (the task's one call). Idempotent."""
    return job_run(RecommendationComparison, pk=comparison_id, compute=_compare_recommendations, store=_store)


def _per_user(evaluation: RecommendationEvaluation) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each user's id (bytes) and per-user metric values, read with the evaluation's own options."""
    chosen = evaluation.recommendation_set
    options = evaluation.options()
    stored = chosen.stored()
    names = {role: chosen.display_name(role) for role in stored}
    files = _read_named(stored, names, lambda paths: read_recsys_files(
        paths["recs"], paths["interactions"], items=paths.get("items"), history=paths.get("history"),
        k=options.k, complete=options.complete,
    ))  # fmt: skip
    stats = RecsysStats(replace(files.data, head_share=options.head_share), k=options.k)
    users = np.asarray(files.user_ids.to_numpy(zero_copy_only=False), dtype=object)
    return users, per_user_values(stats)


def _paired_metric(
    name: str, a: np.ndarray, b: np.ndarray, comparison: RecommendationComparison
) -> dict[str, Any]:
    """The paired statistics of one metric over users with a value in both sets."""
    row: dict[str, Any] = {"metric": name, "label": RECSYS_METRICS[name].label, "n": int(a.size),
                           "direction": RECSYS_METRICS[name].direction}  # fmt: skip
    row.update(
        mean_a=json_number(a.mean()) if a.size else None, mean_b=json_number(b.mean()) if b.size else None
    )
    row["difference"] = json_number(a.mean() - b.mean()) if a.size else None
    if a.size >= 2:
        interval = paired_bootstrap_ci(
            a, b, n_resamples=comparison.n_resamples, confidence=comparison.confidence, seed=comparison.seed
        )
        t, wilcoxon = paired_t_test(a, b), wilcoxon_test(a, b)
        row.update(
            ci_low=json_number(interval.low), ci_high=json_number(interval.high),
            t=json_number(t.statistic), p_t=json_number(t.p_value),
            w=json_number(wilcoxon.statistic), p_wilcoxon=json_number(wilcoxon.p_value),
        )  # fmt: skip
    if a.size >= 3:
        size = paired_effect_size(a, b)
        row.update(cohens_dz=json_number(size.cohens_dz), hedges_g=json_number(size.hedges_g))
    return row


def _compare_recommendations(comparison: RecommendationComparison, progress: ProgressFn) -> dict[str, Any]:
    a, b = comparison.evaluation_a, comparison.evaluation_b
    progress(0.05, "reading the first set")
    users_a, values_a = _per_user(a)
    progress(0.3, "reading the second set")
    users_b, values_b = _per_user(b)
    common, rows_a, rows_b = np.intersect1d(users_a, users_b, assume_unique=True, return_indices=True)
    if common.size == 0:
        raise JobError("The two sets have no user in common: there is nothing to pair.")
    progress(0.55, "paired tests per metric")
    metrics = []
    for name in (name for name in values_a if name in values_b):
        first, second = values_a[name][rows_a], values_b[name][rows_b]
        both = ~(np.isnan(first) | np.isnan(second))
        try:
            metrics.append(_paired_metric(name, first[both], second[both], comparison))
        except EvalCoreError as error:
            raise JobError(f"{name}: {error}") from None
    tested = [row for row in metrics if row.get("p_t") is not None]
    if tested:
        adjusted, _ = adjust_p_values([row["p_t"] for row in tested], method="holm")
        for row, p in zip(tested, adjusted, strict=True):
            row["p_t_holm"] = json_number(p)
    return {
        "users_a": int(users_a.size),
        "users_b": int(users_b.size),
        "users_common": int(common.size),
        "metrics": metrics,
        "options_differ": differing_options(a, b, RECSYS_OPTIONS),
    }
