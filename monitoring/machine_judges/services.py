"""Scoring a leaderboard on a machine judge's labels: the job's create, compute and store.

- `machine_judge_evaluation_create`: the job for (leaderboard, judge, parameters, state), queued on commit;
  the same request on the same state (the judge's labels and the leaderboard's evaluations, summed up by
  `state_fingerprint`) finds the same job; a failed one is queued again.
- `machine_judge_evaluation_run` (the task's one call): each run of the leaderboard is read and scored on
  the machine's labels and on the human sample's (`evalcore.machine_judges.ppi_evaluate_measures`), then
  the runs' rankings on the machine's and on people's labels are compared per measure
  (`ranking_agreement`). The job stores both; when the leaderboard's team is the one the judging project
  is linked to, the ranking is also written to `annotations.MachineJudgeRanking` for the judge's page.

The human sample (see docs/machine-judges.md): PPI's interval assumes the human-judged queries are a
random sample of the machine's, each judged completely. `sample="all"` takes every query of the
leaderboard's qrels that the machine also judged, and says it is not a random sample;
`sample="random"` draws `sample_size` of them with numpy's generator seeded with `seed`, a random sample
of the machine's queries when people judged all of them (and of the human-judged ones only otherwise).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Count, Max, Sum
from django.utils import timezone

from annotations.models import MachineJudge, MachineJudgeRanking, MachineLabel
from evalcore.jsonable import json_number
from evalcore.machine_judges import (
    ESTIMANDS,
    MeanEstimate,
    PPIComparison,
    is_query_mean,
    ppi_evaluate_measures,
    queries_restricted,
    ranking_agreement,
)
from evalcore.retrieval import Qrels
from evalplatform.auth import User
from evalplatform.errors import InputError
from evalplatform.jobs import JobError, JobOutcome, JobStatus, ProgressFn, job_enqueue_on_commit, job_run
from monitoring.evaluations.selectors import LeaderboardRow, leaderboard
from monitoring.evaluations.services import read_qrels, read_run
from monitoring.machine_judges.models import MachineJudgeEvaluation
from monitoring.models import QrelsSource

logger = logging.getLogger(__name__)

TIME_LIMIT = 30 * 60
Sample = MachineJudgeEvaluation.Sample


# --- the state a job is for ---------------------------------------------------------------------------


def state_fingerprint(*, judge: MachineJudge, evaluation_ids: Sequence[int]) -> str:
    """A digest of the judge's labels (their count, newest id, sum of grades and of confidences: one
    aggregate query) and of the leaderboard's evaluations: a new label, a changed grade or confidence, or
    a run evaluated anew changes it."""
    labels = MachineLabel.objects.filter(judge=judge).aggregate(
        n=Count("id"), top=Max("id"), grades=Sum("grade"), confidence=Sum("confidence")
    )
    text = json.dumps(
        [
            labels["n"],
            labels["top"],
            labels["grades"],
            json_number(labels["confidence"]),
            sorted(evaluation_ids),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def board_evaluation_ids(rows: Sequence[LeaderboardRow]) -> list[int]:
    return sorted(row.evaluation.pk for row in rows)


def machine_judge_check(*, qrels: QrelsSource, judge: MachineJudge) -> None:
    """Raise `InputError` unless `qrels` is a human-only build of the judge's project."""
    build = qrels.build
    if build is None:
        raise InputError("These qrels were uploaded: only a judging project's build has machine judges.")
    if judge.project_id != build.project_id:
        raise InputError("This machine judge belongs to another judging project than these qrels.")
    if build.sources != "human":
        raise InputError(
            f"Qrels v{build.version} holds machine labels (sources: {build.sources}): prediction-powered "
            "inference needs people's labels alone as the human sample; choose a human-only version."
        )


@transaction.atomic
def machine_judge_evaluation_create(
    *,
    qrels: QrelsSource,
    judge: MachineJudge,
    sample: str = Sample.ALL,
    sample_size: int = 0,
    seed: int = 0,
    alpha: float = 0.05,
    estimand: str = "population",
    created_by: User | None = None,
    enqueue: bool = True,
) -> MachineJudgeEvaluation:
    """The job scoring `qrels`'s leaderboard on `judge`'s labels, queued on commit (see the module
    docstring). Raises `InputError` for qrels that are not a human build of the judge's project, or
    parameters out of range."""
    machine_judge_check(qrels=qrels, judge=judge)
    if sample not in Sample.values:
        raise InputError(f"sample is one of {', '.join(Sample.values)}.")
    if sample == Sample.RANDOM and sample_size < 2:
        raise InputError("A random human sample needs at least 2 queries (a variance needs two values).")
    if not 0 < alpha < 1:
        raise InputError("alpha is between 0 and 1.")
    if estimand not in ESTIMANDS:
        raise InputError(f"estimand is one of {', '.join(ESTIMANDS)}.")
    ids = board_evaluation_ids(leaderboard(qrels=qrels).rows)
    if not ids:
        raise InputError("No run is evaluated on these qrels yet: evaluate a run first.")
    job, created = MachineJudgeEvaluation.objects.select_for_update().get_or_create(
        qrels=qrels, judge=judge, sample=sample, sample_size=sample_size if sample == Sample.RANDOM else 0,
        seed=seed if sample == Sample.RANDOM else 0, alpha=alpha, estimand=estimand,
        fingerprint=state_fingerprint(judge=judge, evaluation_ids=ids),
        defaults={"team_id": qrels.team_id, "created_by": created_by},
    )  # fmt: skip
    if not created and job.status == JobStatus.FAILED:
        MachineJudgeEvaluation.objects.filter(pk=job.pk).update(
            status=JobStatus.PENDING, attempts=0, error=""
        )
        job.refresh_from_db()
        created = True
    if created and enqueue:
        job_enqueue_on_commit(job)
    return job


# --- the human sample -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HumanSample:
    queries: list[str]
    random: bool  # drawn at random by the job
    random_over_machine: bool  # ... and a random sample of every query the machine judged
    machine_queries: int
    human_judged: int  # human-judged queries the machine also judged
    outside_machine: int  # human-judged queries the machine did not judge (left out)
    rule: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "queries": self.queries, "random": self.random, "random_over_machine": self.random_over_machine,
            "machine_queries": self.machine_queries, "human_judged": self.human_judged,
            "outside_machine": self.outside_machine, "rule": self.rule,
        }  # fmt: skip


def human_sample_choose(
    human_qids: Sequence[str],
    machine_qids: Sequence[str],
    *,
    sample: str,
    sample_size: int = 0,
    seed: int = 0,
) -> HumanSample:
    """The queries whose human labels correct the machine's (see the module docstring)."""
    machine = {str(q) for q in machine_qids}
    judged = sorted({str(q) for q in human_qids} & machine)
    outside = len({str(q) for q in human_qids} - machine)
    if not judged:
        raise JobError("People and the machine judged no query in common: there is no human sample.")
    everything = len(judged) == len(machine)
    if sample == Sample.ALL:
        rule = (
            f"every query people judged in these qrels that the machine judged too ({len(judged)} of the "
            f"machine's {len(machine)}). They were not chosen at random: the intervals are valid only if "
            "these queries are as good as a random sample of the machine's."
        )
        return HumanSample(judged, False, False, len(machine), len(judged), outside, rule)
    if sample_size > len(judged):
        raise JobError(
            f"A random sample of {sample_size} queries, but people judged only {len(judged)} of the machine's."
        )
    drawn = np.random.default_rng(seed).choice(len(judged), size=sample_size, replace=False)
    queries = [judged[i] for i in sorted(drawn.tolist())]
    rule = f"{sample_size} queries drawn at random (numpy, seed {seed}) among the {len(judged)} " + (
        f"people judged, which are every query the machine judged: a random sample of the machine's {len(machine)}."
        if everything
        else f"people judged of the machine's {len(machine)}: random among the human-judged queries only, "
        "which were not themselves chosen at random."
    )
    return HumanSample(queries, True, everything, len(machine), len(judged), outside, rule)


# --- the job ----------------------------------------------------------------------------------------------


def machine_qrels(judge: MachineJudge) -> Qrels:
    """The judge's labels as qrels (its graded pairs; one query, no loop per label)."""
    rows = list(
        MachineLabel.objects.filter(judge=judge, grade__gte=0)
        .order_by("topic__qid", "document__doc_id")
        .values_list("topic__qid", "document__doc_id", "grade")
    )
    qids = np.array([row[0] for row in rows], dtype=str)
    vocab, codes = np.unique(qids, return_inverse=True)
    return Qrels.from_codes(
        vocab, codes, [row[1] for row in rows], np.array([row[2] for row in rows], dtype=np.int64)
    )


def estimate_json(estimate: MeanEstimate) -> dict[str, float | None]:
    return {
        "estimate": json_number(estimate.estimate),
        "ci_low": json_number(estimate.ci_low),
        "ci_high": json_number(estimate.ci_high),
        "std_error": json_number(estimate.std_error),
    }


def comparison_json(result: PPIComparison) -> dict[str, Any]:
    return {
        "ppi": estimate_json(result.ppi),
        "ppi_plus_plus": estimate_json(result.ppi_plus_plus),
        "human_only": estimate_json(result.human_only),
        "machine_only": estimate_json(result.machine_only),
        "lambda": json_number(result.tuning),
        "queries": result.queries,
        "human_queries": result.human_queries,
    }


def competition_ranks(scores: np.ndarray) -> list[int]:
    """1 + how many runs score strictly higher (ties share the best rank)."""
    values = np.nan_to_num(np.asarray(scores, dtype=float), nan=-np.inf)
    return (1 + (values[None, :] > values[:, None]).sum(axis=1)).tolist()  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Scored:
    human_sample: dict[str, Any]
    measures: list[str]
    results: list[dict[str, Any]]
    ranking: dict[str, Any]


def machine_judge_evaluation_compute(job: MachineJudgeEvaluation, progress: ProgressFn) -> Scored:
    source = QrelsSource.objects.select_related("build__project").get(pk=job.qrels_id)
    judge = MachineJudge.objects.get(pk=job.judge_id)
    board = leaderboard(qrels=source)
    rows = sorted(board.rows, key=lambda row: (row.run.name.lower(), row.run.pk))
    if not rows:
        raise JobError("No run is evaluated on these qrels any more.")
    measures = [name for name in board.measures if is_query_mean(name)]
    if not measures:
        raise JobError("No measure of this leaderboard is a mean over queries (PPI estimates those).")
    machine = machine_qrels(judge)
    if not len(machine):
        raise JobError(f"The machine judge {judge} has no graded label.")
    human = read_qrels(source)
    chosen = human_sample_choose(
        human.qids.tolist(),
        machine.qids.tolist(),
        sample=job.sample,
        sample_size=job.sample_size,
        seed=job.seed,
    )
    human_part = queries_restricted(human, chosen.queries)
    results, runs = [], []
    for i, row in enumerate(rows):
        progress(0.9 * i / len(rows), f"run {row.run.label} ({i + 1} of {len(rows)})")
        run = read_run(row.run)
        runs.append(run)
        estimates = ppi_evaluate_measures(
            run, machine, human_part, measures, alpha=job.alpha, rel_level=row.evaluation.rel_level,
            estimand=job.estimand,  # type: ignore[arg-type]
        )  # fmt: skip
        results.append(
            {"run": row.run.pk, "evaluation": row.evaluation.pk, "name": row.run.label,
             "estimates": {name: comparison_json(value) for name, value in estimates.items()}}
        )  # fmt: skip
    progress(0.9, "ranking agreement")
    ranking = {name: ranking_json(runs, rows, human, machine, name) for name in measures}
    return Scored(chosen.as_dict(), measures, results, ranking)


def ranking_json(runs: list[Any], rows: Sequence[LeaderboardRow], human: Qrels, machine: Qrels, measure: str) -> dict[str, Any]:  # fmt: skip
    """The runs' rankings on people's and the machine's labels for one measure (`ranking_agreement`, on the
    topics both judged; each run at its evaluation's `-l`, the first run's where they differ)."""
    agreement = ranking_agreement(
        runs, human, machine, measure=measure, rel_level=rows[0].evaluation.rel_level,
        names=[row.run.label for row in rows],
    )  # fmt: skip
    human_ranks = competition_ranks(agreement.human_scores)
    machine_ranks = competition_ranks(agreement.machine_scores)
    return {
        "kendall_tau": json_number(agreement.kendall_tau),
        "tau_ap": json_number(agreement.tau_ap),
        "topics": agreement.topics,
        "rel_level": rows[0].evaluation.rel_level,
        "runs": [
            {"run": row.run.pk, "name": name, "human": json_number(h), "machine": json_number(m),
             "human_rank": hr, "machine_rank": mr}
            for row, name, h, m, hr, mr in zip(
                rows, agreement.names, agreement.human_scores.tolist(), agreement.machine_scores.tolist(),
                human_ranks, machine_ranks, strict=True,
            )
        ],
    }  # fmt: skip


def machine_judge_evaluation_store(job: MachineJudgeEvaluation, scored: Scored) -> None:
    job.human_sample = scored.human_sample
    job.measures = scored.measures
    job.results = scored.results
    job.ranking = scored.ranking
    job.save(update_fields=["human_sample", "measures", "results", "ranking"])
    source = QrelsSource.objects.select_related("build__project").get(pk=job.qrels_id)
    build = source.build
    if build is not None and build.project.team_id == source.team_id:  # the project's own team's runs only
        MachineJudgeRanking.objects.update_or_create(
            judge_id=job.judge_id, build=build, team_id=source.team_id,
            defaults={"data": {"job": job.pk, "qrels": source.pk, "qrels_version": build.version, "measures": scored.measures,
                               "by_measure": scored.ranking},
                      "computed_at": timezone.now()},
        )  # fmt: skip


def machine_judge_evaluation_run(*, job_id: int) -> JobOutcome:
    """The task's one call: claim, compute and store the job (idempotent; see `evalplatform.jobs`)."""
    return job_run(
        MachineJudgeEvaluation, pk=job_id, compute=machine_judge_evaluation_compute,
        store=machine_judge_evaluation_store,
    )  # fmt: skip
