"""The LLM judge connector (issue 24.6) against a chat endpoint the test starts on 127.0.0.1, and nothing else:
grades read and stored with their raw text, retries after 500 and 429, unparsable answers recorded, the caps,
the rate limit, the outbound guard (an internal address refused unless allowed, no redirect followed), the
web page, the API and the command, and everything off by default."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotations.machine_judges import llm
from annotations.models import LLMJudgeAnswer, LLMJudgeJob, MachineJudge, MachineLabel, Project, Task
from evalcore.llm_judge import PROMPT_VERSION
from evalplatform.jobs import JobOutcome, job_claim
from tests.annotations.conftest import build_project
from tests.conftest import QueuedTasks

pytestmark = pytest.mark.django_db

Answer = Callable[[int, dict[str, Any]], tuple[int, dict[str, Any] | str, dict[str, str]]]


def completion(text: str, *, prompt_tokens: int = 100, completion_tokens: int = 10) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    }  # fmt: skip


def expected_grade(prompt: str) -> int:
    """The grade the fake model gives: the document's number j in "Doc i-j", modulo 5."""
    match = re.search(r"Passage: Doc (\d+)-(\d+)", prompt)
    assert match, prompt
    return int(match.group(2)) % 5


def grading(number: int, request: dict[str, Any]) -> tuple[int, dict[str, Any] | str, dict[str, str]]:
    grade = expected_grade(request["messages"][0]["content"])
    return 200, completion(f"M: {grade}\nT: 2\n##final score: {grade}"), {}


class ChatServer:
    """An OpenAI-compatible endpoint on 127.0.0.1: each POST is answered by `answer(number, body)` with a
    status, a body and headers; it records each request's arrival time, Authorization and JSON body."""

    def __init__(self, answer: Answer = grading) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answer = answer
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {
                        "at": time.monotonic(),
                        "path": self.path,
                        "auth": self.headers["Authorization"],
                        "body": body,
                    }
                )
                status, payload, headers = server.answer(len(server.requests) - 1, body)
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                with contextlib.suppress(OSError):
                    self.send_response(status)
                    for name, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if headers.get("X-Trickle"):  # the headers at once, then a byte of the body a while
                        for byte in data:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(float(headers["X-Trickle"]))
                    self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def servers() -> Iterator[Callable[..., ChatServer]]:
    started: list[ChatServer] = []

    def start(answer: Answer = grading) -> ChatServer:
        started.append(ChatServer(answer))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture
def endpoint(settings: Any, servers: Callable[..., ChatServer]) -> ChatServer:
    """The LLM judge on, pointed at a local server (loopback allowed by the operator's setting), fast."""
    server = servers()
    settings.LLM_JUDGE_ENABLED = True
    settings.LLM_JUDGE_BASE_URL = server.base_url
    settings.LLM_JUDGE_MODEL = "test-model"
    settings.LLM_JUDGE_API_KEY = "sk-test-secret"
    settings.LLM_JUDGE_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.LLM_JUDGE_REQUESTS_PER_SECOND = 1000.0
    settings.LLM_JUDGE_BACKOFF_SECONDS = 0.01
    settings.LLM_JUDGE_MAX_ATTEMPTS = 3
    settings.LLM_JUDGE_TIMEOUT_SECONDS = 5.0
    settings.LLM_JUDGE_MAX_TOKENS = 1_000_000
    settings.LLM_JUDGE_MAX_COST = 0.0
    settings.LLM_JUDGE_PRICE_PROMPT_PER_1K = 0.5
    settings.LLM_JUDGE_PRICE_COMPLETION_PER_1K = 2.0
    return server


@pytest.fixture
def project(lena: User) -> Project:
    return build_project(lead=lena, topics=2, docs_per_topic=3)


def run_job(project: Project, **options: Any) -> LLMJudgeJob:
    options.setdefault("limit", 100)
    job = llm.llm_judge_start(project=project, enqueue=False, **options)
    assert llm.llm_judge_run(job_id=job.pk).status in ("done", "failed")
    return LLMJudgeJob.objects.select_related("judge").get(pk=job.pk)


def labels(judge: MachineJudge) -> dict[tuple[str, str], int]:
    rows = MachineLabel.objects.filter(judge=judge).values_list("topic__qid", "document__doc_id", "grade")
    return {(qid, doc): grade for qid, doc, grade in rows}


class TestGrading:
    def test_it_grades_the_pairs_and_stores_them_with_their_raw_text(
        self, project: Project, endpoint: ChatServer
    ) -> None:
        job = run_job(project)
        assert job.status == "done", job.error
        judge = job.judge
        assert (judge.name, judge.version, judge.kind, judge.model) == (
            "llm:test-model",
            PROMPT_VERSION,
            "llm",
            "test-model",
        )
        configuration = json.loads(judge.configuration)
        assert configuration["prompt_version"] == PROMPT_VERSION and configuration["temperature"] == 0
        assert "sk-test-secret" not in judge.configuration
        assert labels(judge) == {(f"q{i}", f"d{i}-{j}"): j for i in range(2) for j in range(3)}
        label = MachineLabel.objects.get(judge=judge, document__doc_id="d1-2")
        assert label.raw_text == "M: 2\nT: 2\n##final score: 2" and label.rationale == "M: 2\nT: 2"
        request = endpoint.requests[0]
        assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test-secret"
        body = request["body"]
        assert (body["model"], body["temperature"], body["max_tokens"]) == ("test-model", 0, 300)
        prompt = body["messages"][0]["content"]
        assert "Query: query number 0 about python\nPassage: Doc 0-0\n\nText of document 0-0." in prompt
        assert "4 = Perfectly relevant: The document is an ideal answer to the query." in prompt
        result = job.result
        assert {k: result[k] for k in ("pairs", "graded", "unparsable", "refused", "failed", "skipped")} == {
            "pairs": 6, "graded": 6, "unparsable": 0, "refused": 0, "failed": 0, "skipped": 0,
        }  # fmt: skip
        assert (result["prompt_tokens"], result["completion_tokens"], result["tokens"]) == (600, 60, 660)
        assert result["cost"] == pytest.approx(6 * (100 * 0.5 + 10 * 2.0) / 1000)
        assert result["stopped_by_cap"] is False and result["summary"].startswith(
            "Graded 6 pairs; 0 unparsable"
        )

    def test_it_skips_pairs_the_same_judge_answered(self, project: Project, endpoint: ChatServer) -> None:
        run_job(project, topics=["q0"], limit=2)
        assert len(endpoint.requests) == 2
        again = run_job(project)
        assert len(endpoint.requests) == 6  # the four others only
        assert (again.result["graded"], again.result["skipped"], again.result["pairs"]) == (4, 2, 4)
        third = run_job(project)
        assert len(endpoint.requests) == 6 and third.result["skipped"] == 6 and third.result["graded"] == 0

    def test_it_retries_after_500_and_429_then_succeeds(
        self, project: Project, servers: Any, endpoint: ChatServer
    ) -> None:
        def flaky(number: int, body: dict[str, Any]) -> Any:
            if number == 0:
                return 500, {"error": "boom"}, {}
            if number == 1:
                return 429, {"error": "slow down"}, {"Retry-After": "0"}
            return grading(number, body)

        endpoint.answer = flaky
        job = run_job(project, topics=["q0"], limit=1)
        assert job.status == "done" and job.result["graded"] == 1
        assert len(endpoint.requests) == 3
        assert LLMJudgeAnswer.objects.get(job=job).attempts == 3

    def test_it_records_a_pair_without_answer_as_failed_and_asks_again_later(
        self, project: Project, endpoint: ChatServer
    ) -> None:
        endpoint.answer = lambda number, body: (503, "unavailable", {})
        job = run_job(project, topics=["q0"], limit=1)
        assert job.status == "done" and job.result["failed"] == 1 and len(endpoint.requests) == 3
        failed = LLMJudgeAnswer.objects.get(job=job)
        assert (failed.status, failed.reason, failed.grade) == (
            "failed",
            "HTTP 503 Service Unavailable",
            None,
        )
        assert not MachineLabel.objects.exists()
        endpoint.answer = grading
        later = run_job(project, topics=["q0"], limit=1)
        assert later.result["graded"] == 1 and LLMJudgeAnswer.objects.get().status == "graded"

    def test_it_records_an_unparsable_answer_and_guesses_nothing(
        self, project: Project, endpoint: ChatServer
    ) -> None:
        endpoint.answer = lambda number, body: (200, completion("This passage is highly relevant (3/4)."), {})
        job = run_job(project, topics=["q1"], limit=3)
        assert (job.result["unparsable"], job.result["graded"]) == (3, 0)
        answer = LLMJudgeAnswer.objects.filter(job=job).first()
        assert answer is not None
        assert (answer.status, answer.grade, answer.raw_text) == (
            "unparsable", None, "This passage is highly relevant (3/4).",
        )  # fmt: skip
        assert answer.reason == 'no "##final score: N" line' and not MachineLabel.objects.exists()
        run_job(project, topics=["q1"], limit=3)  # an answer is an answer: not asked again
        assert len(endpoint.requests) == 3

    def test_it_stops_at_the_token_cap_and_says_so(
        self, settings: Any, project: Project, endpoint: ChatServer
    ) -> None:
        settings.LLM_JUDGE_MAX_TOKENS = 250  # 110 tokens an answer: a third would pass it
        job = run_job(project)
        assert job.status == "done" and len(endpoint.requests) == 2
        assert (job.result["graded"], job.result["tokens"], job.result["stopped_by_cap"]) == (2, 220, True)
        assert "Stopped by the token cap: 220 of 250 tokens spent" in job.result["summary"]

    def test_it_stops_at_the_cost_cap(self, settings: Any, project: Project, endpoint: ChatServer) -> None:
        settings.LLM_JUDGE_MAX_COST = 0.2  # 0.07 an answer
        job = run_job(project)
        assert len(endpoint.requests) == 2 and job.result["stopped_by"] == "cap"
        assert job.result["cost"] == pytest.approx(0.14)

    def test_it_keeps_to_the_rate_limit(self, settings: Any, project: Project, endpoint: ChatServer) -> None:
        settings.LLM_JUDGE_REQUESTS_PER_SECOND = 10.0
        run_job(project)
        moments = [request["at"] for request in endpoint.requests]
        # Loosely: the server notes arrivals, not sends, so one gap may shrink by the jitter of two arrivals;
        # six requests at 10 a second span at least 0.5 s, unpaced they take a few milliseconds.
        assert len(moments) == 6 and moments[-1] - moments[0] > 0.8 * 5 / 10
        assert sum(b - a > 0.5 / 10 for a, b in zip(moments, moments[1:], strict=False)) >= 4

    def test_it_redoes_a_lost_workers_job_once_asking_only_what_is_left(
        self, project: Project, endpoint: ChatServer
    ) -> None:
        job = llm.llm_judge_start(project=project, limit=4, enqueue=False)
        claim = job_claim(LLMJudgeJob, pk=job.pk)
        first = list(Task.objects.filter(project=project).order_by("topic__qid", "document__doc_id")[:2])
        LLMJudgeAnswer.objects.bulk_create(
            LLMJudgeAnswer(judge=job.judge, job=job, topic_id=t.topic_id, document_id=t.document_id, status="graded",
                           grade=1, raw_text="##final score: 1", prompt_tokens=100, completion_tokens=10)
            for t in first
        )  # fmt: skip
        assert not isinstance(claim, JobOutcome)  # the first attempt holds it, then its worker dies
        LLMJudgeJob.objects.filter(pk=job.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        assert llm.llm_judge_run(job_id=job.pk).status == "done"
        job.refresh_from_db()
        assert len(endpoint.requests) == 2 and job.attempts == 2  # the limit of 4, less the 2 answered
        assert (job.result["graded"], job.result["pairs"], job.result["tokens"]) == (4, 4, 440)


class TestOutboundGuard:
    def test_it_refuses_an_internal_address_unless_the_operator_allows_it(
        self, settings: Any, project: Project, endpoint: ChatServer
    ) -> None:
        settings.LLM_JUDGE_ALLOWED_NETWORKS = []
        job = run_job(project)
        assert job.status == "failed" and "127.0.0.1 is a loopback address: refused" in job.error
        assert endpoint.requests == [] and not LLMJudgeAnswer.objects.exists()

    def test_it_follows_no_redirect(self, project: Project, servers: Any, endpoint: ChatServer) -> None:
        elsewhere = servers()
        endpoint.answer = lambda number, body: (
            302,
            "",
            {"Location": elsewhere.base_url + "/chat/completions"},
        )
        job = run_job(project)
        assert job.status == "failed" and "redirects are not followed" in job.error
        assert len(endpoint.requests) == 1 and elsewhere.requests == []

    def test_it_fails_at_once_when_the_endpoint_refuses_the_key(
        self, project: Project, endpoint: ChatServer
    ) -> None:
        endpoint.answer = lambda number, body: (401, {"error": {"message": "Incorrect API key"}}, {})
        job = run_job(project)
        assert job.status == "failed" and "HTTP 401" in job.error and "Incorrect API key" in job.error
        assert len(endpoint.requests) == 1 and "sk-test-secret" not in job.error


class TestOffByDefault:
    def test_it_is_off_and_asks_nothing(
        self, project: Project, lead_client: Client, lena: User, servers: Any, settings: Any
    ) -> None:
        server = servers()
        settings.LLM_JUDGE_BASE_URL = server.base_url  # configured, but not enabled
        settings.LLM_JUDGE_ALLOWED_NETWORKS = ["127.0.0.0/8"]
        assert settings.LLM_JUDGE_ENABLED is False
        page = lead_client.get(f"/projects/{project.slug}/machine-judges/")
        assert page.status_code == 200 and 'id="llm-judge-off"' in page.content.decode()
        assert 'id="llm-judge-form"' not in page.content.decode()
        refused = lead_client.post(f"/projects/{project.slug}/machine-judges/llm/", {"limit": 5})
        assert refused.status_code == 409 and "The LLM judge is off" in refused.content.decode()
        api = APIClient()
        api.force_authenticate(lena)
        answer = api.post(f"/api/projects/{project.slug}/llm-judge-jobs/", {"limit": 5}, format="json")
        assert answer.status_code == 409 and answer.json()["detail"].startswith("The LLM judge is off")
        with pytest.raises(CommandError, match="The LLM judge is off"):
            call_command("llm_judge", "--project", project.slug, stdout=StringIO())
        assert not LLMJudgeJob.objects.exists() and server.requests == []


class TestWebApiCommand:
    def test_the_lead_starts_a_job_and_follows_it(
        self, project: Project, lead_client: Client, endpoint: ChatServer, queued: QueuedTasks,
        django_capture_on_commit_callbacks: Any,
    ) -> None:  # fmt: skip
        page = lead_client.get(f"/projects/{project.slug}/machine-judges/")
        assert 'id="llm-judge-form"' in page.content.decode()
        with django_capture_on_commit_callbacks(execute=True):
            response = lead_client.post(
                f"/projects/{project.slug}/machine-judges/llm/", {"topics": "q1", "limit": 2}
            )
        job = LLMJudgeJob.objects.get()
        assert [(name, args) for name, args, _ in queued.sent] == [
            ("annotations.tasks.llm_judge_run", (job.pk,))
        ]
        assert response.status_code == 302 and response["Location"] == job.get_absolute_url()
        assert (job.topics, job.limit, job.status) == (["q1"], 2, "pending")
        assert llm.llm_judge_run(job_id=job.pk).status == "done"
        html = lead_client.get(job.get_absolute_url()).content.decode()
        assert 'id="llm-job-summary"' in html and "Graded 2 pairs" in html

    def test_the_form_names_an_unknown_topic(
        self, project: Project, lead_client: Client, endpoint: ChatServer
    ) -> None:
        response = lead_client.post(
            f"/projects/{project.slug}/machine-judges/llm/", {"topics": "q0, q9", "limit": 0}
        )
        assert response.status_code == 400
        html = response.content.decode()
        assert "The project has no topic q9." in html and "greater than or equal to 1" in html
        assert not LLMJudgeJob.objects.exists() and endpoint.requests == []

    def test_the_api_starts_one_job_at_a_time(
        self, project: Project, lena: User, endpoint: ChatServer
    ) -> None:
        api = APIClient()
        api.force_authenticate(lena)
        url = f"/api/projects/{project.slug}/llm-judge-jobs/"
        started = api.post(url, {"topics": ["q0"], "limit": 3}, format="json")
        assert started.status_code == 202, started.content
        busy = api.post(url, {"limit": 3}, format="json")
        assert busy.status_code == 409 and busy.json()["job"] == started.json()["id"]
        assert llm.llm_judge_run(job_id=started.json()["id"]).status == "done"
        job = api.get(started.json()["url"]).json()
        assert (
            job["status"] == "done"
            and job["result"]["graded"] == 3
            and job["judge_version"] == PROMPT_VERSION
        )
        assert [j["id"] for j in api.get(url).json()] == [job["id"]]
        unknown = api.post(url, {"topics": ["nope"]}, format="json")
        assert unknown.status_code == 400 and unknown.json()["detail"] == "The project has no topic nope."

    def test_the_command_grades_and_prints_json(self, project: Project, endpoint: ChatServer) -> None:
        out = StringIO()
        call_command(
            "llm_judge", "--project", project.slug, "--topic", "q0", "--limit", "2", "--json", stdout=out
        )
        data = json.loads(out.getvalue())
        assert (data["graded"], data["pairs"], data["judge_name"], data["tokens"]) == (
            2,
            2,
            "llm:test-model",
            220,
        )
        text = StringIO()
        call_command("llm_judge", "--project", project.slug, stdout=text)
        assert text.getvalue().startswith("llm:test-model vumbrela-1: Graded 4 pairs;")
        with pytest.raises(CommandError, match="no topic q7"):
            call_command("llm_judge", "--project", project.slug, "--topic", "q7", stdout=StringIO())


def test_it_cuts_an_answer_that_trickles_past_the_deadline(
    settings: Any, project: Project, endpoint: ChatServer
) -> None:
    settings.LLM_JUDGE_TIMEOUT_SECONDS = 1.0
    settings.LLM_JUDGE_MAX_ATTEMPTS = 1
    endpoint.answer = lambda number, body: (200, completion("##final score: 1"), {"X-Trickle": "0.2"})
    started = time.monotonic()
    job = run_job(project, topics=["q0"], limit=1)
    assert time.monotonic() - started < 3 and job.status == "done"
    failed = LLMJudgeAnswer.objects.get(job=job)
    assert (failed.status, failed.attempts) == ("failed", 1) and failed.reason.startswith(
        "timed out after 1 s"
    )


def test_the_llm_page_reads_a_fixed_number_of_queries(
    lead_client: Client, project: Project, endpoint: ChatServer, django_assert_max_num_queries: Any
) -> None:
    """The LLM page and the machine judges' page list the last jobs in queries that do not grow with them."""
    judge = llm.llm_judge_get(project)
    LLMJudgeJob.objects.create(project=project, judge=judge, limit=1, status="done", result={"summary": "s0"})
    counts = {}
    for url in (f"/projects/{project.slug}/machine-judges/llm/", f"/projects/{project.slug}/machine-judges/"):
        with django_assert_max_num_queries(25) as one:
            assert lead_client.get(url).status_code == 200
        counts[url] = len(one.captured_queries)
    LLMJudgeJob.objects.bulk_create(
        LLMJudgeJob(project=project, judge=judge, limit=1, status="done", result={"summary": f"s{n}"})
        for n in (1, 2, 3)
    )
    for url, ceiling in counts.items():
        with django_assert_max_num_queries(ceiling):
            page = lead_client.get(url)
        assert all(f"s{n}" in page.content.decode() for n in range(4))


def test_the_admin_shows_the_jobs_and_answers_read_only(
    client: Client, project: Project, endpoint: ChatServer
) -> None:
    run_job(project, topics=["q0"], limit=1)
    client.force_login(User.objects.create_superuser("root", "root@example.org", "root-password-123"))
    for model in ("llmjudgejob", "llmjudgeanswer"):
        page = client.get(f"/admin/annotations/{model}/")
        assert page.status_code == 200 and "llm:test-model" in page.content.decode()
    answer = LLMJudgeAnswer.objects.get()
    detail = client.get(f"/admin/annotations/llmjudgeanswer/{answer.pk}/change/")
    assert detail.status_code == 200 and "##final score: 0" in detail.content.decode()
