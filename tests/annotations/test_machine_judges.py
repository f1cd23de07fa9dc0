"""Machine judges in a project: importing labels, qrels builds from them, calibration and routing (issue 24)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from sklearn.metrics import cohen_kappa_score

from annotations import qrels
from annotations.machine_judges import routing, services
from annotations.models import (
    Annotation,
    MachineJudge,
    MachineLabel,
    MachineRouting,
    Project,
    QrelsBuild,
    Task,
)
from evalcore.errors import FormatError
from evalcore.judging import QrelsError
from evalcore.machine_judges import calibrate_judge
from tests.annotations.conftest import build_project, record_answers

pytestmark = pytest.mark.django_db


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def machine_rows(project: Project, grade: Any, confidence: Any = None) -> list[dict[str, Any]]:
    """One label per task of the project: `grade(i, task)`, `confidence(i, task)`."""
    tasks = Task.objects.filter(project=project).select_related("topic", "document").order_by("pk")
    return [
        {"qid": t.topic.qid, "doc_id": t.document.doc_id, "label": grade(i, t),
         **({"confidence": confidence(i, t)} if confidence else {})}
        for i, t in enumerate(tasks)
    ]  # fmt: skip


@pytest.fixture
def project(lena: User, annotators: Any) -> Project:
    return build_project(
        lead=lena,
        annotators=annotators(3),
        topics=3,
        docs_per_topic=6,
        gold_per_topic=1,
        min_gold_items=0,
        min_gold_accuracy=0.0,
    )


def answer_all(project: Project, grades: dict[int, list[int]]) -> None:
    people = list(User.objects.filter(username__startswith="ann").order_by("username"))
    tasks = list(Task.objects.filter(project=project).order_by("pk"))
    record_answers(
        project,
        [(people[a], tasks[i], g) for i, row in grades.items() for a, g in enumerate(row)],
    )


def human_build(project: Project) -> QrelsBuild:
    build = qrels.qrels_build_create(project=project, created_by=None, enqueue=False)
    qrels.qrels_build_run(build_id=build.pk)
    build.refresh_from_db()
    assert build.status == "done"
    return build


# --- importing ------------------------------------------------------------------------------------------


class TestImport:
    def test_it_imports_labels_with_confidence_and_counts_pairs_outside_the_project(
        self, project: Project, tmp_path: Path
    ) -> None:
        rows = machine_rows(project, lambda i, t: i % 4, lambda i, t: 0.5)
        rows += [{"qid": "nope", "doc_id": "d0-0", "label": 1}, {"qid": "q0", "doc_id": "nope", "label": 1}]
        result = services.judge_labels_import(
            project=project,
            name="gpt",
            path=write_jsonl(tmp_path / "m.jsonl", rows),
            kind="llm",
            model="gpt-4o",
        )
        assert (result.pairs, result.created, result.missing_topic, result.missing_document) == (20, 18, 1, 1)
        judge = MachineJudge.objects.get(pk=result.judge)
        assert (judge.kind, judge.model, judge.labels.count()) == ("llm", "gpt-4o", 18)
        assert set(judge.labels.values_list("confidence", flat=True)) == {0.5}
        assert Task.objects.filter(project=project).count() == 18  # no task was made

    def test_it_changes_nothing_when_the_same_file_comes_again(
        self, project: Project, tmp_path: Path
    ) -> None:
        path = write_jsonl(tmp_path / "m.jsonl", machine_rows(project, lambda i, t: i % 4))
        services.judge_labels_import(project=project, name="gpt", path=path)
        before = list(MachineLabel.objects.order_by("pk").values())
        again = services.judge_labels_import(project=project, name="gpt", path=path)
        assert (again.judge_created, again.created, again.updated, again.unchanged) == (False, 0, 0, 18)
        assert list(MachineLabel.objects.order_by("pk").values()) == before

    def test_it_updates_changed_labels_and_keeps_versions_apart(
        self, project: Project, tmp_path: Path
    ) -> None:
        services.judge_labels_import(
            project=project,
            name="gpt",
            path=write_jsonl(tmp_path / "a.jsonl", machine_rows(project, lambda i, t: 1)),
        )
        changed = services.judge_labels_import(
            project=project, name="gpt",
            path=write_jsonl(tmp_path / "b.jsonl", machine_rows(project, lambda i, t: 2 if i < 5 else 1)),
        )  # fmt: skip
        assert (changed.updated, changed.unchanged) == (5, 13)
        v2 = services.judge_labels_import(project=project, name="gpt", version="2", path=tmp_path / "a.jsonl")
        assert v2.judge_created and MachineJudge.objects.filter(project=project, name="gpt").count() == 2

    def test_it_refuses_a_bad_line_and_saves_nothing(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "bad.jsonl"
        path.write_text(
            '{"qid": "q0", "doc_id": "d0-0", "label": 1}\n{"qid": "q0", "doc_id": "d0-1", "label": "x"}\n'
        )
        with pytest.raises(FormatError) as error:
            services.judge_labels_import(project=project, name="gpt", path=path)
        assert (error.value.path, error.value.line) == (str(path), 2)
        assert not MachineJudge.objects.exists() and not MachineLabel.objects.exists()

    def test_it_refuses_a_grade_off_the_scale(self, project: Project, tmp_path: Path) -> None:
        path = tmp_path / "m.qrels"
        path.write_text("q0 0 d0-0 1\nq0 0 d0-1 7\n")
        with pytest.raises(FormatError, match="grade 7 is not on the project's scale"):
            services.judge_labels_import(project=project, name="gpt", path=path)
        assert not MachineJudge.objects.exists()

    def test_it_never_counts_machine_labels_as_answers(self, project: Project, tmp_path: Path) -> None:
        services.judge_labels_import(
            project=project,
            name="gpt",
            path=write_jsonl(tmp_path / "m.jsonl", machine_rows(project, lambda i, t: 2)),
        )
        assert not Annotation.objects.exists()
        assert set(Task.objects.values_list("label_count", flat=True)) == {0}


# --- qrels builds -----------------------------------------------------------------------------------------


class TestBuildSources:
    @pytest.fixture
    def judge(self, project: Project, tmp_path: Path) -> MachineJudge:
        # People judge the first 6 tasks (topic q0) alike; the machine grades every task 1.
        answer_all(project, {i: [2, 2, 2] for i in range(6)})
        result = services.judge_labels_import(
            project=project,
            name="gpt",
            path=write_jsonl(tmp_path / "m.jsonl", machine_rows(project, lambda i, t: 1)),
        )
        return MachineJudge.objects.get(pk=result.judge)

    def run(self, project: Project, **options: Any) -> QrelsBuild:
        build = qrels.qrels_build_create(project=project, created_by=None, enqueue=False, **options)
        qrels.qrels_build_run(build_id=build.pk)
        build.refresh_from_db()
        return build

    def test_it_keeps_the_human_build_as_it_was(self, project: Project, judge: MachineJudge) -> None:
        build = self.run(project)
        assert (build.sources, build.machine_judge, "machine" in build.counts["sources"]) == (
            "human",
            None,
            False,
        )
        assert {(j.qid, j.rel) for j in qrels.build_judgments(build)} == {("q0", 2)}

    def test_it_builds_from_the_machine_alone(self, project: Project, judge: MachineJudge) -> None:
        build = self.run(project, sources="machine", machine_judge=judge)
        judgments = qrels.build_judgments(build)
        assert len(judgments) == 18 and {j.rel for j in judgments} == {1}
        assert build.counts["sources"] == {"crowd": 0, "adjudication": 0, "machine": 18}
        assert judgments[0].labels[0]["source"] == "machine"
        assert qrels.build_summary(build)["source_rule"].startswith("the machine judge only")

    def test_it_takes_people_where_present_else_the_machine(
        self, project: Project, judge: MachineJudge
    ) -> None:
        build = self.run(project, sources="both", machine_judge=judge)
        rel = {(j.qid, j.doc_id): j.rel for j in qrels.build_judgments(build)}
        assert len(rel) == 18
        assert {r for (q, _), r in rel.items() if q == "q0"} == {2}
        assert {r for (q, _), r in rel.items() if q != "q0"} == {1}
        assert build.counts["sources"]["machine"] == 12 and build.counts["pairs"]["kept"] == 18

    def test_it_refuses_a_machine_build_without_a_judge(self, project: Project) -> None:
        with pytest.raises(QrelsError):
            qrels.qrels_build_create(project=project, created_by=None, enqueue=False, sources="machine")


# --- calibration ------------------------------------------------------------------------------------------


def test_it_calibrates_as_evalcore_does_on_the_same_pairs(project: Project, tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    human = {i: int(g) for i, g in enumerate(rng.integers(0, 4, 18))}
    answer_all(project, {i: [g, g, g] for i, g in human.items()})
    machine = {i: min(3, g + int(rng.integers(0, 2))) for i, g in human.items()}
    confidence = {i: float(rng.uniform()) for i in human}
    result = services.judge_labels_import(
        project=project, name="gpt",
        path=write_jsonl(tmp_path / "m.jsonl", machine_rows(project, lambda i, t: machine[i], lambda i, t: confidence[i])),
    )  # fmt: skip
    build = human_build(project)
    consensus = {(j.qid, j.doc_id): j.rel for j in qrels.build_judgments(build)}
    figures = services.judge_calibration(MachineJudge.objects.get(pk=result.judge))["consensus"]
    tasks = list(Task.objects.filter(project=project).select_related("topic", "document").order_by("pk"))
    keep = [i for i, t in enumerate(tasks) if (t.topic.qid, t.document.doc_id) in consensus]
    h = [consensus[(tasks[i].topic.qid, tasks[i].document.doc_id)] for i in keep]
    m = [machine[i] for i in keep]
    expected = calibrate_judge(h, m, topics=[tasks[i].topic.qid for i in keep])
    assert figures["pairs"] == len(keep) == expected.pairs
    assert figures["confusion"] == expected.confusion.tolist()
    grades = list(range(min(h + m), max(h + m) + 1))
    for weights, name in (
        (None, "cohen_kappa"),
        ("linear", "cohen_kappa_linear"),
        ("quadratic", "cohen_kappa_quadratic"),
    ):
        assert figures[name] == pytest.approx(cohen_kappa_score(h, m, labels=grades, weights=weights))
    assert figures["bias"] == pytest.approx(np.mean(np.subtract(m, h)))


def test_it_calibrates_against_gold(project: Project, tmp_path: Path) -> None:
    # build_project's gold grade is 3 on each topic's first document; the machine says 2 on one of three.
    result = services.judge_labels_import(
        project=project, name="gpt",
        path=write_jsonl(tmp_path / "m.jsonl", machine_rows(project, lambda i, t: 2 if t.topic.qid == "q0" else 3)),
    )  # fmt: skip
    gold = services.judge_calibration(MachineJudge.objects.get(pk=result.judge))["gold"]
    assert gold["pairs"] == 3 and gold["exact_agreement"] == pytest.approx(2 / 3)
    assert gold["bias"] == pytest.approx(-1 / 3) and gold["leaning"] == "stricter"


# --- routing ---------------------------------------------------------------------------------------------


def direct_route(
    pairs: list[tuple[str, str]], grades: list[int], confidence: list[float], *, human: dict[Any, int],
    disagree: set[Any], topic_agreement: dict[str, float], params: routing.RouteParams,
) -> tuple[list[tuple[Any, str]], int]:  # fmt: skip
    """The module docstring's rule written out: the targeted pairs in order, and the sample's size."""
    by_reason: dict[str, list[tuple[float, Any]]] = {r: [] for r in routing.TARGETED}
    rest = 0
    for pair, grade, conf in zip(pairs, grades, confidence, strict=True):
        c = conf if not math.isnan(conf) else math.inf
        if pair in disagree:
            by_reason["humans_disagree"].append((c, pair))
        elif pair in human:
            if human[pair] != grade:
                by_reason["disagrees"].append((c, pair))
        elif c < params.confidence_below:
            by_reason["low_confidence"].append((c, pair))
        elif topic_agreement.get(pair[0], 1.0) < params.topic_agreement_below:
            by_reason["weak_topic"].append((c, pair))
        else:
            rest += 1
    ordered = [(pair, reason) for reason in routing.TARGETED for _, pair in sorted(by_reason[reason])]
    return ordered[: params.budget], round(params.sample_share * rest)


def test_it_selects_the_pairs_a_direct_loop_selects() -> None:
    rng = np.random.default_rng(11)
    pairs = [(f"q{i % 7}", f"d{i}") for i in range(400)]
    grades = rng.integers(0, 4, 400).tolist()
    confidence = np.where(rng.uniform(size=400) < 0.1, np.nan, rng.uniform(size=400))
    human = {pairs[i]: int(rng.integers(0, 4)) for i in rng.choice(400, 120, replace=False)}
    disagree = {pairs[i] for i in rng.choice(400, 15, replace=False)}
    topic_agreement = {f"q{t}": float(rng.uniform()) for t in range(7)}
    labels = services.JudgeLabels(pairs, np.array(grades), confidence)
    for params in (
        routing.RouteParams(budget=60, sample_share=0.1, seed=3),
        routing.RouteParams(budget=1000),
    ):
        chosen = routing.route_select(
            labels,
            human=human,
            humans_disagree=disagree,
            topic_agreement=topic_agreement,
            routed={},
            params=params,
        )
        expected, sample_size = direct_route(
            pairs, grades, confidence.tolist(), human=human, disagree=disagree,
            topic_agreement=topic_agreement, params=params,
        )  # fmt: skip
        targeted = [(r.pair, r.reason) for r in chosen if r.reason != "sample"]
        sample = [r.pair for r in chosen if r.reason == "sample"]
        assert targeted == expected
        assert (
            len(sample) == sample_size
            and not set(sample) & {p for p, _ in expected}
            and not set(sample) & set(human)
        )
        # Routing again with what was routed changes nothing.
        routed = {r.pair: r.reason for r in chosen}
        assert (
            routing.route_select(
                labels,
                human=human,
                humans_disagree=disagree,
                topic_agreement=topic_agreement,
                routed=routed,
                params=params,
            )
            == []
        )


def test_it_routes_to_the_queues_and_records_why(project: Project, tmp_path: Path) -> None:
    # Topic q0's six pairs are judged by people: they agree on 2 for pairs 0-4 and disagree on pair 5.
    answer_all(project, {**{i: [2, 2, 2] for i in range(5)}, 5: [0, 3, 0]})
    build = human_build(project)
    assert build.pairs_kept == 5
    # The machine agrees with people on pairs 0-2, not on 3-4; elsewhere it is unsure on every third pair.
    grade = lambda i, t: 2 if i < 3 else 1  # noqa: E731
    conf = lambda i, t: 0.2 if i % 3 == 0 else 0.9  # noqa: E731
    result = services.judge_labels_import(
        project=project,
        name="gpt",
        path=write_jsonl(tmp_path / "m.jsonl", machine_rows(project, grade, conf)),
    )
    judge = MachineJudge.objects.select_related("project").get(pk=result.judge)
    # Each topic's first pair is gold, graded 3, where the machine says 2 or 1: disagreements too.
    tasks_before = Task.objects.filter(project=project).count()
    params = routing.RouteParams(
        budget=8, confidence_below=0.5, topic_agreement_below=0.0, sample_share=0.5, seed=1
    )
    done = routing.judge_route(judge=judge, params=params)
    assert done.routed["humans_disagree"] == 1 and done.routed["disagrees"] == 5
    # Unjudged and unsure: d1-3 and d2-3; the rest, 8 unjudged pairs, gives a sample of 4.
    assert done.routed["low_confidence"] == 2 and done.routed["weak_topic"] == 0
    assert done.routed["sample"] == 4
    reasons = dict(MachineRouting.objects.filter(judge=judge).values_list("document__doc_id", "reason"))
    assert reasons["d0-5"] == "humans_disagree"
    assert MachineRouting.objects.get(judge=judge, document__doc_id="d0-5").queue == "adjudication"
    assert {reasons[d] for d in ("d0-0", "d0-3", "d0-4", "d1-0", "d2-0")} == {"disagrees"}
    assert reasons["d1-3"] == reasons["d2-3"] == "low_confidence"
    # Every pair is a task already (build_project made them all): routing adds none, and says so.
    assert done.tasks_created == 0 and Task.objects.filter(project=project).count() == tasks_before
    again = routing.judge_route(judge=judge, params=params)
    assert again.total == 0 and again.already_routed == done.total


def test_it_makes_routed_pairs_tasks(project: Project, tmp_path: Path) -> None:
    Task.objects.filter(project=project, topic__qid="q2").delete()
    result = services.judge_labels_import(
        project=project, name="gpt",
        path=write_jsonl(tmp_path / "m.jsonl", [{"qid": "q2", "doc_id": f"d2-{j}", "label": 1, "confidence": 0.1} for j in range(6)]),
    )  # fmt: skip
    judge = MachineJudge.objects.select_related("project").get(pk=result.judge)
    done = routing.judge_route(judge=judge, params=routing.RouteParams(budget=4, sample_share=0.0))
    assert done.routed["low_confidence"] == 4 and done.tasks_created == 4
    assert Task.objects.filter(project=project, topic__qid="q2").count() == 4


def test_the_route_judge_command_routes_as_the_page_does(project: Project, tmp_path: Path) -> None:
    Task.objects.filter(project=project, topic__qid="q2").delete()
    services.judge_labels_import(
        project=project, name="gpt",
        path=write_jsonl(tmp_path / "m.jsonl", [{"qid": "q2", "doc_id": f"d2-{j}", "label": 1, "confidence": 0.1} for j in range(6)]),
    )  # fmt: skip
    out = io.StringIO()
    call_command("route_judge", "--project", project.slug, "--judge", "gpt", "--budget", "3", "--sample-share", "0",
                 "--json", stdout=out)  # fmt: skip
    done = json.loads(out.getvalue())
    assert done["routed"]["low_confidence"] == 3 and done["tasks_created"] == 3
    assert done["params"]["budget"] == 3
    out = io.StringIO()
    call_command("route_judge", "--project", project.slug, "--judge", "gpt", "--budget", "3", stdout=out)
    assert out.getvalue().startswith("Routed 0 pairs of")  # the budget is spent: nothing new
    with pytest.raises(CommandError, match="has no machine judge 'nobody'"):
        call_command("route_judge", "--project", project.slug, "--judge", "nobody")
    with pytest.raises(CommandError, match="sample_share is between 0 and 1"):
        call_command("route_judge", "--project", project.slug, "--judge", "gpt", "--sample-share", "2")


# --- the demo ---------------------------------------------------------------------------------------------


def test_the_demo_judge_is_lenient_calibrated_and_routed(demo: Project) -> None:
    from annotations.demo import demo_annotations_simulate, demo_machine_judge_load

    demo_annotations_simulate(demo)
    human_build(demo)
    judge = demo_machine_judge_load(demo)
    figures = services.judge_calibration(judge)
    assert figures["labels"] == figures["with_confidence"] > 50
    assert figures["gold"]["pairs"] > 0 and figures["consensus"]["pairs"] > 0
    assert figures["consensus"]["leaning"] == "more lenient" and figures["consensus"]["bias"] > 0
    bands = [b for b in figures["consensus"]["per_confidence"] if b["pairs"]]
    assert bands[0]["exact_agreement"] < bands[-1]["exact_agreement"]  # its confidence means something
    routed = MachineRouting.objects.filter(judge=judge).count()
    assert routed > 0
    labels = list(MachineLabel.objects.filter(judge=judge).order_by("pk").values())
    demo_machine_judge_load(demo)  # loading the demo again changes nothing
    assert list(MachineLabel.objects.filter(judge=judge).order_by("pk").values()) == labels
    assert MachineRouting.objects.filter(judge=judge).count() == routed


def test_its_alpha_with_the_annotators_is_krippendorffs(project: Project, tmp_path: Path) -> None:
    import krippendorff

    rng = np.random.default_rng(8)
    grades = {i: [int(g) for g in rng.integers(0, 4, 3)] for i in range(0, 18, 2)}  # people on half the tasks
    answer_all(project, grades)
    machine = {i: int(rng.integers(0, 4)) for i in range(18)}
    result = services.judge_labels_import(
        project=project,
        name="gpt",
        path=write_jsonl(tmp_path / "m.jsonl", machine_rows(project, lambda i, t: machine[i])),
    )
    alpha = services.judge_calibration(MachineJudge.objects.get(pk=result.judge))[
        "krippendorff_alpha_with_humans"
    ]
    # Annotators x items, the machine's row appended, over the items the machine graded that people did too.
    items = sorted(grades)
    matrix = np.array(
        [[grades[i][a] for i in items] for a in range(3)] + [[machine[i] for i in items]], dtype=float
    )
    assert alpha == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal"))
