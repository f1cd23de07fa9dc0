"""`evaluate TEAM --run ID|FILE --qrels ID|FILE|PROJECT:VERSION`: upload, queue, follow, print."""

from __future__ import annotations

import itertools
import json
import time
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

from evalcore import trec
from evalcore.comparison import DEFAULT_MEASURES
from evalcore.retrieval import evaluate
from evalplatform.models import Team
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.services import with_coverage
from monitoring.files import uploads
from monitoring.management.commands import evaluate as evaluate_command
from monitoring.models import Evaluation, QrelsSource, Run
from series.models import MetricValue
from tests.conftest import QueuedTasks, WorkerProcess
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.stored import evaluation_rows

QRELS, RUN = synthetic_collection()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {"qrels": tmp_path / "judged.qrels", "run": tmp_path / "bm25.run"}
    paths["qrels"].write_text(QRELS)
    paths["run"].write_text(RUN(1, 1.5, "bm25"))
    return {name: str(path) for name, path in paths.items()}


def evaluate_(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("evaluate", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def expected(files: dict[str, str], measures: list[str], **options: Any) -> Any:
    """What evalcore computes for the measures and the coverage measures every evaluation adds."""
    return evaluate(
        trec.read_qrels(files["qrels"]), trec.read_run(files["run"]), with_coverage(measures), **options
    )


@pytest.mark.django_db
class TestEvaluateHere:
    def test_it_uploads_the_files_and_prints_three_columns_with_the_interval(
        self, team: Team, theo: User, files: dict[str, str]
    ) -> None:
        out, err = evaluate_(
            "search", "--run", files["run"], "--qrels", files["qrels"], "--sync", "--user", "theo"
        )
        run, qrels = Run.objects.get(team=team), QrelsSource.objects.get(team=team)
        assert (run.name, run.uploaded_by, qrels.uploaded_by) == ("bm25", theo, theo)
        want = expected(files, list(DEFAULT_MEASURES))
        lines = out.splitlines()
        assert [line.split("\t")[0].strip() for line in lines] == with_coverage(DEFAULT_MEASURES)
        for line in lines:
            measure, scope, value, interval = line.split("\t")
            assert scope == "all" and value == f"{want.aggregate[measure.strip()]:.4f}"
            low, high = (float(x) for x in interval.strip("[]").split(", "))
            assert low <= float(value) <= high
        assert "uploaded as run" in err and "20 queries" in err

    def test_it_prints_one_json_object(self, team: Team, files: dict[str, str]) -> None:
        measures = ["map", "P@10", "num_ret"]
        out, _ = evaluate_(
            "search", "--run", files["run"], "--qrels", files["qrels"], "-m", "map", "-m", "P@10",
            "-m", "num_ret", "-l", "2", "-c", "--sync", "--json",
        )  # fmt: skip
        data = json.loads(out)
        evaluation = Evaluation.objects.get()
        assert (evaluation.rel_level, evaluation.complete, evaluation.created_by) == (2, True, None)
        assert data["evaluation"] == evaluation.pk and data["status"] == "done"
        want = expected(files, measures, rel_level=2, complete=True)
        assert data["aggregate"] == pytest.approx(want.aggregate)
        assert isinstance(data["aggregate"]["num_ret"], int) and data["ci"]["num_ret"] is None
        low, high = data["ci"]["map"]
        assert low < data["aggregate"]["map"] < high

    def test_it_finds_the_same_run_and_evaluation_when_run_again(
        self, team: Team, files: dict[str, str]
    ) -> None:
        first, _ = evaluate_(
            "search", "--run", files["run"], "--qrels", files["qrels"], "-m", "map", "--sync"
        )
        again, err = evaluate_("search", "--run", files["run"], "--qrels", files["qrels"], "-m", "map")
        assert again == first and "done before" in err and "already uploaded" in err
        assert (Run.objects.count(), QrelsSource.objects.count(), Evaluation.objects.count()) == (1, 1, 1)
        run, qrels = Run.objects.get(), QrelsSource.objects.get()
        by_id, _ = evaluate_("search", "--run", str(run.pk), "--qrels", str(qrels.pk), "-m", "map")
        assert by_id == first and MetricValue.objects.filter(job_type="monitoring.evaluation").count() == 3

    def test_it_fails_with_the_jobs_error_in_one_line(self, team: Team, files: dict[str, str]) -> None:
        _, big_run = synthetic_collection(queries=100, shuffle=False)
        lines = big_run(3, 1.0).splitlines()
        lines.insert(2500, "q1 Q0 d1-1 0 1.0 sys")  # a docno twice, past the lines checked on upload
        late = Path(files["run"]).with_name("late.run")
        late.write_text("\n".join(lines) + "\n")
        with pytest.raises(CommandError) as failure:
            evaluate_("search", "--run", str(late), "--qrels", files["qrels"], "--sync", "--json")
        evaluation = Evaluation.objects.get()
        assert str(failure.value) == f"Evaluation {evaluation.pk} failed: {evaluation.error}"
        assert evaluation.error.startswith("late.run:") and "\n" not in str(failure.value)
        assert evaluation.attempts == 1 and not evaluation_rows(evaluation)

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            (["-m", "mpa"], "unknown measure 'mpa'; did you mean 'map' or 'Compat'?"),
            (["--run", "42"], "The team search has no run 42."),
            (["--qrels", "42"], "The team search has no qrels source 42."),
            (["--run", "missing.run"], "missing.run: no such file"),
            (["--qrels", "nowhere:1"], "There is no judging project 'nowhere' (nor a file nowhere:1)."),
            (["--user", "vera"], "vera is a viewer of the team search; only its editors can do this."),
            (["--user", "otto"], "otto is not a member of the team search."),
        ],
    )
    def test_it_refuses_in_one_line_and_uploads_nothing(
        self, team: Team, other_team: Team, files: dict[str, str], change: list[str], message: str
    ) -> None:
        arguments = {"--run": files["run"], "--qrels": files["qrels"]}
        extra: list[str] = []
        if change[0] in arguments:
            arguments[change[0]] = change[1]
        else:
            extra = change
        with pytest.raises(CommandError) as refused:
            evaluate_("search", *itertools.chain(*arguments.items()), "--sync", *extra)
        assert str(refused.value) == message
        assert not Evaluation.objects.exists()
        if change[0] in ("-m", "--user"):
            assert not Run.objects.exists() and not QrelsSource.objects.exists()

    def test_it_refuses_another_teams_run(self, team: Team, other_team: Team) -> None:
        foreign = uploads.run_upload(team=other_team, upload=upload("f.run", RUN(4, 1.0)))
        with pytest.raises(CommandError, match=f"The team search has no run {foreign.pk}."):
            evaluate_("search", "--run", str(foreign.pk), "--qrels", "1", "--sync")


@pytest.mark.django_db
class TestJudgingBuilds:
    def test_it_evaluates_against_a_linked_projects_build(self, tmp_path: Path) -> None:
        call_command("load_demo", stdout=StringIO())
        run_file = tmp_path / "mine.run"
        run_file.write_text(Run.objects.get(team__slug="search", name="bm25").file.read().decode())
        out, err = evaluate_("search", "--run", str(run_file), "--qrels", "python-help:1", "--json")
        data = json.loads(out)
        # The same content as the demo's BM25 run: that run and its evaluation are found, not duplicated.
        bm25 = Run.objects.get(team__slug="search", name="bm25")
        assert data["run"] == bm25.pk and data["status"] == "done" and "done before" in err
        assert data["qrels"] == QrelsSource.objects.get(team__slug="search", build__version=1).pk
        assert Run.objects.filter(team__slug="search").count() == 2

    def test_it_refuses_a_build_of_a_project_not_linked_to_the_team(
        self, other_team: Team, tmp_path: Path
    ) -> None:
        call_command("load_demo", stdout=StringIO())
        run_file = tmp_path / "mine.run"
        run_file.write_text("q01 Q0 try 1 1.0 mine\n")
        with pytest.raises(CommandError) as refused:
            evaluate_("fraud", "--run", str(run_file), "--qrels", "python-help:1", "--sync")
        assert str(refused.value) == "python-help is not a judging project of the team fraud."
        with pytest.raises(CommandError, match="^The judging project python-help has no qrels build v9.$"):
            evaluate_("search", "--run", str(run_file), "--qrels", "python-help:9", "--sync")


@pytest.mark.django_db
class TestQueueing:
    def test_it_queues_on_the_heavy_queue_and_returns_with_no_wait(
        self, team: Team, files: dict[str, str], queued: QueuedTasks
    ) -> None:
        out, _ = evaluate_("search", "--run", files["run"], "--qrels", files["qrels"], "--no-wait", "--json")
        evaluation = Evaluation.objects.get()
        assert queued.names() == ["monitoring.tasks.evaluation_run"] and queued.sent[0][1] == (evaluation.pk,)
        assert json.loads(out) == {
            "evaluation": evaluation.pk, "status": "pending", "run": evaluation.run_id,
            "qrels": evaluation.qrels_id, "num_queries": None, "aggregate": {}, "ci": {},
        }  # fmt: skip
        # Asking again finds the queued evaluation and does not queue it twice.
        evaluate_("search", "--run", files["run"], "--qrels", files["qrels"], "--no-wait")
        assert len(queued.sent) == 1

    def test_it_follows_the_jobs_progress_on_a_bar_until_done(
        self, team: Team, files: dict[str, str], queued: QueuedTasks, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        steps = iter(["running", "worker"])

        def worker_step(seconds: float) -> None:
            """Stands in for the worker between two looks: the job starts, then it finishes."""
            evaluation = Evaluation.objects.get()
            if next(steps) == "running":
                Evaluation.objects.filter(pk=evaluation.pk).update(
                    status="running", attempts=1, progress=0.4, progress_note="evaluating"
                )
            else:
                Evaluation.objects.filter(pk=evaluation.pk).update(status="pending", progress=None)
                evaluations.evaluation_run(evaluation_id=evaluation.pk)

        monkeypatch.setattr(evaluate_command.time, "sleep", worker_step)
        out, err = evaluate_("search", "--run", files["run"], "--qrels", files["qrels"], "-m", "map")
        assert "waiting for a worker:   0%" in err and "evaluating:  40%" in err
        assert out.startswith("map                   \tall\t")

    def test_it_stops_waiting_after_the_timeout_in_one_line(
        self, team: Team, files: dict[str, str], queued: QueuedTasks
    ) -> None:
        started = time.monotonic()
        with pytest.raises(CommandError) as waited:
            evaluate_("search", "--run", files["run"], "--qrels", files["qrels"], "--timeout", "0.2")
        pk = Evaluation.objects.get().pk
        assert str(waited.value).startswith(
            f"Evaluation {pk} is still pending after 0.2 s; is a worker running"
        )
        assert time.monotonic() - started < 5

    def test_it_says_when_the_queue_is_unreachable_and_offers_sync(
        self, team: Team, files: dict[str, str], queued: QueuedTasks
    ) -> None:
        queued.broker_down = True
        with pytest.raises(CommandError) as failed:
            evaluate_("search", "--run", files["run"], "--qrels", files["qrels"])
        assert "The task queue is unreachable" in str(failed.value)
        assert str(failed.value).endswith("Or evaluate it here with --sync.")
        # --sync picks up the failed evaluation and runs it here.
        out, _ = evaluate_("search", "--run", files["run"], "--qrels", files["qrels"], "--sync", "--json")
        assert json.loads(out)["status"] == "done" and Evaluation.objects.count() == 1


def test_it_explains_every_option_in_help() -> None:
    text = load_command_class("monitoring", "evaluate").create_parser("manage.py", "evaluate").format_help()
    for option in ("--run ID|FILE", "--qrels ID|FILE|PROJECT:VERSION", "--sync", "--no-wait", "--timeout S",
                   "--json", "-m MEASURE", "-l LEVEL", "--user USERNAME"):  # fmt: skip
        assert option in text


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_waits_for_a_real_worker_and_prints_its_results(
    celery_worker_process: WorkerProcess, team: Team, files: dict[str, str]
) -> None:
    out, err = evaluate_(
        "search", "--run", files["run"], "--qrels", files["qrels"], "--json", "--timeout", "60"
    )
    data = json.loads(out)
    assert data["status"] == "done", celery_worker_process.log()
    assert data["aggregate"] == pytest.approx(expected(files, list(DEFAULT_MEASURES)).aggregate)
    assert "%" in err  # the bar
    assert len(evaluation_rows(data["evaluation"])) == len(with_coverage(DEFAULT_MEASURES))
