# ruff: noqa: F401, F811  (the fixtures of test_judging_loop, imported, are parameters here)
"""A leaderboard scored on a machine judge's labels (issue 24, points 2 and 4): the job's values against
evalcore's functions on the same files, its idempotence and staleness, the leaderboard's PPI columns (page,
CSV, API, query ceiling), who may start it, and the ranking comparison on the judge's calibration page."""

from __future__ import annotations

from typing import Any

import pytest

from annotations.models import Document, MachineJudge, MachineJudgeRanking, MachineLabel, Topic
from evalcore.machine_judges import ppi_evaluate, queries_restricted, ranking_agreement
from monitoring.evaluations import services as evaluations
from monitoring.machine_judges import services
from monitoring.machine_judges.models import MachineJudgeEvaluation
from tests.monitoring.test_judging_loop import DOCS, TOPICS, carol, linked, signed_in

MEASURES = ["map", "P_5"]


def judge_create(project: Any, *, shift: int = 1) -> MachineJudge:
    """A lenient machine judge grading every document of every topic: (doc index + shift) % 3, seeded."""
    judge = MachineJudge.objects.create(project=project, name="sim", kind=MachineJudge.Kind.LLM)
    topics = {t.qid: t for t in Topic.objects.filter(project=project)}
    docs = {d.doc_id: d for d in Document.objects.filter(project=project)}
    MachineLabel.objects.bulk_create(
        [
            MachineLabel(judge=judge, topic=topics[f"q{i}"], document=docs[f"d{i}-{j}"], grade=(j + i + shift) % 3,
                         confidence=0.5 + j / 20)
            for i in range(TOPICS) for j in range(DOCS)
        ]
    )  # fmt: skip
    return judge


@pytest.fixture
def judge(linked: dict[str, Any]) -> MachineJudge:
    return judge_create(linked["project"])


def computed(linked: dict[str, Any], judge: MachineJudge, **params: Any) -> MachineJudgeEvaluation:
    job = services.machine_judge_evaluation_create(
        qrels=linked["source"], judge=judge, enqueue=False, **params
    )
    assert services.machine_judge_evaluation_run(job_id=job.pk).status == "done", (
        MachineJudgeEvaluation.objects.get(pk=job.pk).error
    )
    job.refresh_from_db()
    return job


@pytest.mark.django_db
class TestTheJob:
    def test_it_stores_evalcores_ppi_values_for_every_run_and_measure(
        self,
        linked: dict[str, Any],
        judge: MachineJudge,
    ) -> None:
        job = computed(linked, judge, sample="random", sample_size=2, seed=3)
        source = linked["source"]
        human = evaluations.read_qrels(source)
        machine = services.machine_qrels(judge)
        sample = job.human_sample
        assert len(sample["queries"]) == 2 and sample["random"] and sample["random_over_machine"]
        assert sample["machine_queries"] == TOPICS and sample["human_judged"] == TOPICS
        assert job.measures == MEASURES
        for run in linked["runs"]:
            data = evaluations.read_run(run)
            for measure in MEASURES:
                want = ppi_evaluate(data, machine, queries_restricted(human, sample["queries"]), measure)
                got = job.estimates_of(run.pk)[measure]
                for name in ("ppi", "ppi_plus_plus", "human_only", "machine_only"):
                    for field in ("estimate", "ci_low", "ci_high", "std_error"):
                        assert got[name][field] == getattr(getattr(want, name), field), (run, measure, name)
                assert got["lambda"] == want.tuning and got["human_queries"] == 2 and got["queries"] == TOPICS

    def test_it_compares_the_rankings_as_evalcore_does_and_stores_them_for_the_judge(
        self,
        linked: dict[str, Any],
        judge: MachineJudge,
    ) -> None:
        job = computed(linked, judge)
        runs = linked["runs"]
        want = ranking_agreement(
            [evaluations.read_run(run) for run in sorted(runs, key=lambda r: r.name)],
            evaluations.read_qrels(linked["source"]), services.machine_qrels(judge), measure="map",
        )  # fmt: skip
        got = job.ranking["map"]
        assert [row["human"] for row in got["runs"]] == want.human_scores.tolist()
        assert [row["machine"] for row in got["runs"]] == want.machine_scores.tolist()
        assert got["kendall_tau"] == want.kendall_tau and got["tau_ap"] == want.tau_ap
        stored = MachineJudgeRanking.objects.get(judge=judge)
        assert stored.build == linked["v1"] and stored.data["by_measure"]["map"] == got
        assert job.human_sample["random"] is False and "not chosen at random" in job.human_sample["rule"]
