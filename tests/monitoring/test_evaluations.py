"""The evaluation service: uploads, evaluation and comparison jobs, their stored results."""

from __future__ import annotations

import json
import time
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from evalcore import trec
from evalcore.comparison import align_results, compare_scores
from evalcore.retrieval import evaluate
from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.services import with_coverage
from monitoring.files import uploads
from monitoring.models import ComparisonPair, Evaluation
from tests.conftest import QueuedTasks, WorkerProcess
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.stored import comparison_rows, evaluation_row, evaluation_rows

QRELS, RUN = synthetic_collection()


@pytest.fixture
def sources(team: Team, theo: User) -> tuple[Any, Any, Any]:
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS), uploaded_by=theo)
    good = uploads.run_upload(team=team, upload=upload("bm25.run", RUN(1, 1.5, "bm25")), uploaded_by=theo)
    weak = uploads.run_upload(team=team, upload=upload("dense.run", RUN(2, 0.3, "dense")), uploaded_by=theo)
    return qrels, good, weak


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.django_db
class TestUploads:
    def test_it_keeps_a_run_with_what_its_first_lines_say(self, team: Team, theo: User) -> None:
        run = uploads.run_upload(
            team=team,
            upload=upload("bm25.run", RUN(1, 1.0, "bm25")),
            tags=["bm25", " ", "v1"],
            uploaded_by=theo,
        )
        assert (run.name, run.run_tag, run.format, run.tags) == ("bm25", "bm25", "trec", ["bm25", "v1"])
        assert run.num_queries == 20 and run.num_rows == 600 and len(run.sha256) == 64
        assert Path(run.file.path).read_text() == RUN(1, 1.0, "bm25")

    def test_it_refuses_a_malformed_file_naming_the_line_and_stores_nothing(self, team: Team) -> None:
        text = "q1 Q0 d1 1 2.0 tag\nq1 Q0 d2 2 high tag\n"
        with pytest.raises(uploads.UploadError, match=r"^broken.run:2: "):
            uploads.run_upload(team=team, upload=upload("broken.run", text))
        with pytest.raises(uploads.UploadError, match="empty"):
            uploads.qrels_upload(team=team, upload=upload("empty.qrels", ""))
        assert not team.runs.exists() and not team.qrels_sources.exists()


@pytest.mark.django_db
class TestEvaluation:
    def test_it_stores_what_eval_retrieval_computes(self, sources: Any, tmp_path: Path) -> None:
        qrels, run, _ = sources
        measures = with_coverage(["map", "P_10", "ndcg_cut_10", "recip_rank", "num_ret"])
        evaluation = evaluations.evaluation_create(run=run, qrels=qrels, measures=measures[:5], enqueue=False)
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"
        expected = evaluate(
            trec.read_qrels(write(tmp_path, "q", QRELS)), trec.read_run(write(tmp_path, "r", RUN(1, 1.5, "bm25"))),
            measures,
        )  # fmt: skip
        rows = {row.measure: row for row in evaluation_rows(evaluation)}
        assert list(rows) == measures
        for key in measures:
            assert rows[key].value == pytest.approx(expected.aggregate[key], abs=1e-12)
            np.testing.assert_allclose(rows[key].per_query, expected.values[key], atol=1e-12)
        assert rows["map"].ci_low < rows["map"].value < rows["map"].ci_high
        assert rows["num_ret"].ci_low is None  # a sum has no bootstrap interval here
        evaluation.refresh_from_db()
        assert evaluation.qids == [str(q) for q in expected.qids] and evaluation.num_queries == 20

    def test_it_stores_accuracy_and_a_judged_only_measure_with_an_undefined_query_as_null(
        self, team: Team, theo: User
    ) -> None:
        qrels = uploads.qrels_upload(
            team=team,
            upload=upload("small.qrels", "q1 0 a 1\nq1 0 b 1\nq1 0 d 0\nq2 0 c 0\n"),
            uploaded_by=theo,
        )
        text = "q1 Q0 a 1 2.0 t\nq1 Q0 x 2 1.5 t\nq1 Q0 b 3 1.0 t\nq1 Q0 d 4 0.5 t\nq2 Q0 c 1 1.0 t\n"
        run = uploads.run_upload(team=team, upload=upload("small.run", text), uploaded_by=theo)
        measures = ["Accuracy", "P(judged_only=True)@2", "P@2"]
        evaluation = evaluations.evaluation_create(run=run, qrels=qrels, measures=measures, enqueue=False)
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"
        rows = {row.measure: row for row in evaluation_rows(evaluation)}
        # q1: a above x and d, b above d only: 1 - 1/4; q2 has no relevant document, so no value.
        assert (rows["Accuracy"].value, rows["Accuracy"].per_query) == (0.75, [0.75, None])
        assert rows["P(judged_only=True)@2"].per_query == [1.0, 0.0]  # x, unjudged, is dropped
        assert rows["P@2"].per_query == [0.5, 0.0]

    def test_it_finds_the_same_evaluation_for_the_same_request_and_never_duplicates_rows(
        self, sources: Any
    ) -> None:
        qrels, run, _ = sources
        first = evaluations.evaluation_create(run=run, qrels=qrels, measures=["map", "P_5"], enqueue=False)
        evaluations.evaluation_run(evaluation_id=first.pk)
        again = evaluations.evaluation_create(run=run, qrels=qrels, measures=["P_5", "map"], enqueue=False)
        assert again.pk == first.pk and again.status == "done"
        # A worker that runs the job again (a re-delivered message) finds it finished and writes nothing.
        assert evaluations.evaluation_run(evaluation_id=first.pk).status == "finished"
        assert len(evaluation_rows(first)) == 4  # and the two coverage measures
        other = evaluations.evaluation_create(
            run=run, qrels=qrels, measures=["map"], rel_level=2, enqueue=False
        )
        assert other.pk != first.pk

    def test_it_fails_with_a_readable_error_when_the_run_does_not_match_the_qrels(
        self, team: Team, sources: Any
    ) -> None:
        qrels, _, _ = sources
        stranger = uploads.run_upload(team=team, upload=upload("other.run", "x1 Q0 d1 1 1.0 t\n"))
        evaluation = evaluations.evaluation_create(run=stranger, qrels=qrels, enqueue=False)
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "failed"
        evaluation.refresh_from_db()
        assert "no query" in evaluation.error and not evaluation_rows(evaluation)
        # Asking again resets the failed evaluation and queues it once more.
        again = evaluations.evaluation_create(run=stranger, qrels=qrels, enqueue=False)
        assert again.pk == evaluation.pk and again.status == "pending" and again.error == ""

    def test_it_names_the_uploaded_file_when_a_later_line_is_bad(self, team: Team, sources: Any) -> None:
        qrels, _, _ = sources
        _, big_run = synthetic_collection(queries=100, shuffle=False)
        lines = big_run(3, 1.0).splitlines()
        lines.insert(2500, "q1 Q0 d1-1 0 1.0 sys")  # a docno twice, beyond the lines checked on upload
        run = uploads.run_upload(team=team, upload=upload("late.run", "\n".join(lines) + "\n"))
        evaluation = evaluations.evaluation_create(run=run, qrels=qrels, enqueue=False)
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "failed"
        evaluation.refresh_from_db()
        assert evaluation.error.startswith("late.run:") and "media" not in evaluation.error

    def test_it_refuses_unknown_measures_and_other_teams_runs(self, sources: Any, other_team: Team) -> None:
        qrels, run, _ = sources
        with pytest.raises(InputError, match="unknown measure"):
            evaluations.evaluation_create(run=run, qrels=qrels, measures=["mpa"], enqueue=False)
        with pytest.raises(InputError, match="prefs_simp: only with -R prefs or -R qrels_prefs"):
            evaluations.evaluation_create(run=run, qrels=qrels, measures=["map", "prefs_simp"], enqueue=False)
        foreign = uploads.run_upload(team=other_team, upload=upload("f.run", RUN(4, 1.0)))
        with pytest.raises(InputError, match="different teams"):
            evaluations.evaluation_create(run=foreign, qrels=qrels, enqueue=False)

    def test_it_queues_the_job_on_the_heavy_queue_after_commit(
        self, sources: Any, queued: QueuedTasks, django_capture_on_commit_callbacks: Any
    ) -> None:
        from evalplatform.celery import app

        qrels, run, _ = sources
        with django_capture_on_commit_callbacks(execute=True):
            evaluation = evaluations.evaluation_create(run=run, qrels=qrels)
        assert queued.sent == [
            ("monitoring.tasks.evaluation_run", (evaluation.pk,), {"countdown": 0, "retry": False})
        ]
        assert app.amqp.router.route({}, "monitoring.tasks.evaluation_run")["queue"].name == "heavy"


@pytest.mark.django_db
class TestComparison:
    def test_it_compares_runs_as_compare_runs_does(self, sources: Any, tmp_path: Path) -> None:
        qrels, good, weak = sources
        comparison = evaluations.comparison_create(
            qrels=qrels,
            runs=[good, weak],
            measures=["map", "ndcg_cut_10"],
            test="randomization",
            enqueue=False,
        )
        assert evaluations.comparison_run(comparison_id=comparison.pk).status == "done"
        judged = trec.read_qrels(write(tmp_path, "q", QRELS))
        results = {
            str(run.pk): evaluate(judged, trec.read_run(run.file.path), ["map", "ndcg_cut_10"], complete=True)
            for run in (good, weak)
        }
        _, scores = align_results(results, ["map", "ndcg_cut_10"], complete=False)
        expected = compare_scores(scores, test="randomization", correction="holm", n_resamples=2000)
        pairs = {pair.measure: pair for pair in ComparisonPair.objects.filter(comparison=comparison)}
        for want in expected.pairs:
            got = pairs[want.measure]
            assert (got.run_a_id, got.run_b_id) == (int(want.a), int(want.b))
            assert got.p_adjusted == pytest.approx(want.p_adjusted) and got.diff == pytest.approx(want.diff)
            assert got.wins + got.ties + got.losses == 20
        assert pairs["map"].significant and pairs["map"].diff > 0  # the good run beats the weak one
        assert len(comparison_rows(comparison)) == 4

    @pytest.mark.parametrize("complete", [False, True])
    def test_it_gives_the_same_means_and_intervals_as_the_evaluation_and_compare_runs(
        self, team: Team, sources: Any, tmp_path: Path, complete: bool
    ) -> None:
        """One run answering 15 of the 20 qrels queries: the web's evaluation, the web's comparison and
        compare_runs give one mean and one interval, over the same queries (trec_eval's rule)."""
        qrels, _, weak = sources
        partial_text = "".join(
            line + "\n" for line in RUN(1, 1.5, "bm25").splitlines() if int(line.split()[0][1:]) < 15
        )
        partial = uploads.run_upload(team=team, upload=upload("partial.run", partial_text))
        measures = ["map", "P_10"]
        evaluation = evaluations.evaluation_create(
            run=partial, qrels=qrels, measures=measures, complete=complete, enqueue=False
        )
        assert evaluations.evaluation_run(evaluation_id=evaluation.pk).status == "done"
        comparison = evaluations.comparison_create(
            qrels=qrels, runs=[partial, weak], measures=measures, complete=complete, enqueue=False
        )
        assert evaluations.comparison_run(comparison_id=comparison.pk).status == "done"
        args = ["--qrels", write(tmp_path, "judged.qrels", QRELS), "--run", write(tmp_path, "partial.run", partial_text),
                "--run", write(tmp_path, "dense.run", RUN(2, 0.3, "dense")), "-m", "map", "-m", "P_10", "--json"]  # fmt: skip
        out = StringIO()
        call_command("compare_runs", *args, *(["-c"] if complete else []), stdout=out)
        command = json.loads(out.getvalue())["runs"]["partial.run"]
        for measure in measures:
            web = evaluation_row(evaluation, measure)
            compared = comparison_rows(comparison)[(partial.pk, measure)]
            assert web.ci_low is not None and web.ci_low < web.ci_high
            assert (web.value, web.ci_low, web.ci_high) == (compared.mean, compared.ci_low, compared.ci_high)
            want = {
                "mean": web.value,
                "ci_low": web.ci_low,
                "ci_high": web.ci_high,
                "n_queries": 20 if complete else 15,
            }
            assert command[measure] == want and compared.num_queries == want["n_queries"]

    def test_it_needs_two_runs(self, sources: Any) -> None:
        qrels, good, _ = sources
        with pytest.raises(InputError, match="two different runs"):
            evaluations.comparison_create(qrels=qrels, runs=[good, good], enqueue=False)


def wait_for(predicate: Any, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_evaluates_in_a_real_worker_and_stores_the_results_once(
    celery_worker_process: WorkerProcess, sources: Any, tmp_path: Path
) -> None:
    qrels, run, _ = sources
    evaluation = evaluations.evaluation_create(run=run, qrels=qrels, measures=["map", "ndcg_cut_10"])
    assert wait_for(lambda: Evaluation.objects.get(pk=evaluation.pk).status == "done"), (
        celery_worker_process.log()
    )
    expected = evaluate(
        trec.read_qrels(write(tmp_path, "q", QRELS)), trec.read_run(run.file.path),
        with_coverage(["map", "ndcg_cut_10"]),
    )  # fmt: skip
    rows = {row.measure: row.value for row in evaluation_rows(evaluation)}
    assert rows == pytest.approx(expected.aggregate)
    assert len(evaluation_rows(evaluation)) == 4
