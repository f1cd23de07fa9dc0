"""The LLM judge connector (issue 24, point 6): a job that asks an OpenAI-compatible chat endpoint to grade
a project's pairs, and keeps every answer. Off unless the operator sets LLM_JUDGE_ENABLED (see
docs/llm-judge.md); the platform does everything else without it.

- The judge: a `MachineJudge` of kind LLM named `llm:<model>`, its version the prompt's
  (`evalcore.llm_judge.PROMPT_VERSION`), its configuration the prompt's words and the request's terms (never
  the key). Its labels are machine labels like any other: calibrated against people, routed, used in builds.
- `llm_judge_start` checks the request (the judge is on, the topics exist, no other LLM job of the project
  is unfinished) and creates an `LLMJudgeJob`, queued on commit; `llm_judge_run` is the task's one call.
- The job (`evalplatform.jobs`: a lease, progress, one redo after a lost worker) takes the tasks' pairs in
  (qid, doc_id) order that this judge has not answered, up to the job's limit, asks for each with the
  prompt (`evalcore.llm_judge.prompt_text`), reads the grade strictly (`answer_read`) and writes the answers
  every BATCH pairs: an `LLMJudgeAnswer` for each (graded, unparsable, refused or failed, its raw text and
  tokens) and a `MachineLabel` for each grade. A pair already answered by the same judge is never asked
  again (a failed request is: it got no answer); so running a job again, or a redo, costs only what is new.
- It stops early, and says why, before a request that would pass the token or cost cap
  (`evalcore.llm_judge.Budget`), and after JOB_SECONDS, before the task's time limit (run it again to go on).
  An endpoint that cannot be asked (a refused address, a redirect, a 401 or 404) fails the job at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, Max, OuterRef, Q, QuerySet, Sum
from django.db.models.functions import Substr

from annotations.machine_judges.llm_client import ChatClient, ChatEndpoint, EndpointError, NoReply, Reply
from annotations.models import (
    Document,
    LLMJudgeAnswer,
    LLMJudgeJob,
    MachineJudge,
    MachineLabel,
    Project,
    Task,
    Topic,
)
from evalcore.llm_judge import (
    PROMPT_TEMPLATE,
    PROMPT_VERSION,
    Budget,
    Prices,
    RateLimit,
    Usage,
    answer_rationale,
    answer_read,
    passage_text,
    prompt_text,
    scale_levels,
)
from evalplatform import outbound
from evalplatform.errors import InputError
from evalplatform.jobs import JobError, JobOutcome, ProgressFn, job_enqueue_on_commit, job_run

DISABLED_MESSAGE = (
    "The LLM judge is off. An operator turns it on in the server's environment with LLM_JUDGE_ENABLED=true, "
    "LLM_JUDGE_BASE_URL and LLM_JUDGE_MODEL (and LLM_JUDGE_API_KEY where the endpoint needs a key); see "
    "docs/llm-judge.md."
)
#: The most pairs one job may ask for.
MAX_PAIRS = 100_000
#: Answers are written every BATCH pairs (a lost worker loses at most these).
BATCH = 20
#: The task's hard time limit, and how long a job asks before it stops to leave room for its slowest
#: request (attempts x timeout, plus backoffs) and its store.
TIME_LIMIT = 60 * 60
JOB_SECONDS = 45 * 60


class LLMJudgeOff(InputError):
    """The LLM judge is not enabled on this server."""


class LLMJudgeBusy(InputError):
    """Another LLM job of the project is unfinished: one at a time, so no pair is paid for twice."""

    def __init__(self, job: LLMJudgeJob) -> None:
        self.job = job
        super().__init__(f"An LLM grading job of this project is already {job.status} (job {job.pk}).")


def llm_enabled() -> bool:
    return bool(settings.LLM_JUDGE_ENABLED)


def llm_endpoint() -> ChatEndpoint:
    """The endpoint and the request's terms, from the settings."""
    return ChatEndpoint(
        base_url=settings.LLM_JUDGE_BASE_URL, model=settings.LLM_JUDGE_MODEL, api_key=settings.LLM_JUDGE_API_KEY,
        allowed=outbound.networks_parse(settings.LLM_JUDGE_ALLOWED_NETWORKS),
        timeout=float(settings.LLM_JUDGE_TIMEOUT_SECONDS), max_attempts=int(settings.LLM_JUDGE_MAX_ATTEMPTS),
        backoff=float(settings.LLM_JUDGE_BACKOFF_SECONDS), answer_max_tokens=int(settings.LLM_JUDGE_ANSWER_MAX_TOKENS),
    )  # fmt: skip


def llm_prices() -> Prices:
    return Prices(
        float(settings.LLM_JUDGE_PRICE_PROMPT_PER_1K), float(settings.LLM_JUDGE_PRICE_COMPLETION_PER_1K)
    )


def llm_configuration(endpoint: ChatEndpoint) -> dict[str, Any]:
    """What the judge is, as its metadata: the prompt and the request's terms (no key)."""
    return {
        "connector": "openai-chat-completions",
        "base_url": endpoint.base_url,
        "model": endpoint.model,
        "prompt_version": PROMPT_VERSION,
        "temperature": endpoint.temperature,
        "answer_max_tokens": endpoint.answer_max_tokens,
        "passage_max_chars": int(settings.LLM_JUDGE_PASSAGE_MAX_CHARS),
        "prompt": PROMPT_TEMPLATE,
    }


def llm_judge_get(project: Project) -> MachineJudge:
    """The project's judge for the configured model and the prompt's version (made on first use)."""
    endpoint = llm_endpoint()
    judge, _ = MachineJudge.objects.get_or_create(
        project=project,
        name=f"llm:{endpoint.model}"[:100],
        version=PROMPT_VERSION,
        defaults={
            "kind": MachineJudge.Kind.LLM,
            "model": endpoint.model[:200],
            "configuration": json.dumps(llm_configuration(endpoint), indent=1),
        },
    )
    return judge


def topics_check(project: Project, qids: Sequence[str]) -> list[str]:
    """The qids, without repeats, or InputError naming the ones the project lacks."""
    wanted = list(dict.fromkeys(q.strip() for q in qids if q.strip()))
    known = set(Topic.objects.filter(project=project, qid__in=wanted).values_list("qid", flat=True))
    unknown = [q for q in wanted if q not in known]
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise InputError(f"The project has no topic {shown}.")
    return wanted


def llm_judge_start(
    *, project: Project, topics: Sequence[str] = (), limit: int, created_by: Any = None, enqueue: bool = True
) -> LLMJudgeJob:
    """A new grading job, queued on commit; LLMJudgeOff, LLMJudgeBusy or InputError when it cannot be."""
    if not llm_enabled():
        raise LLMJudgeOff(DISABLED_MESSAGE)
    if not 1 <= limit <= MAX_PAIRS:
        raise InputError(f"The limit must be between 1 and {MAX_PAIRS:,} pairs.")
    qids = topics_check(project, topics)
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()  # one start at a time per project
        running = LLMJudgeJob.objects.filter(project=project).unfinished().first()
        if running is not None:
            raise LLMJudgeBusy(running)
        job = LLMJudgeJob.objects.create(
            project=project, judge=llm_judge_get(project), topics=qids, limit=limit, created_by=created_by
        )
        if enqueue:
            job_enqueue_on_commit(job)
    return job


def llm_jobs(project: Project) -> QuerySet[LLMJudgeJob]:
    return (
        LLMJudgeJob.objects.filter(project=project).select_related("project", "judge").order_by("-created_at")
    )


# --- the job --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Asked:
    """What one run of the job did besides its answers: pairs it meant to ask, pairs skipped as already
    answered by the judge, and why it stopped early (`stopped_by`: cap or time; empty when it did not)."""

    pairs: int
    skipped: int
    stopped: str = ""
    stopped_by: str = ""


def llm_judge_run(*, job_id: int) -> JobOutcome:
    """Claim and run a grading job. Idempotent: a redo asks only for the pairs still unanswered."""
    return job_run(LLMJudgeJob, pk=job_id, compute=_compute, store=_store)


def _open_pairs(job: LLMJudgeJob) -> tuple[list[tuple[int, int]], int, int]:
    """The pairs to ask for, in (qid, doc_id) order; how many were answered before this job; and how many
    an earlier attempt of this job asked for (a redo after a lost worker)."""
    tasks = Task.objects.filter(project_id=job.project_id)
    if job.topics:
        tasks = tasks.filter(topic__qid__in=job.topics)
    answered = LLMJudgeAnswer.objects.filter(
        judge_id=job.judge_id, topic_id=OuterRef("topic_id"), document_id=OuterRef("document_id")
    ).exclude(status=LLMJudgeAnswer.Status.FAILED)
    earlier = LLMJudgeAnswer.objects.filter(job=job).count()
    room = max(0, job.limit - earlier)
    pairs = list(
        tasks.filter(~Exists(answered))
        .order_by("topic__qid", "document__doc_id")
        .values_list("topic_id", "document_id")[:room]
    )
    return pairs, tasks.filter(Exists(answered.exclude(job=job))).count(), earlier


def _budget(job: LLMJudgeJob) -> Budget:
    """The job's caps, with what an earlier attempt of this job already spent."""
    budget = Budget(
        max_tokens=int(settings.LLM_JUDGE_MAX_TOKENS),
        prices=llm_prices(),
        max_cost=float(settings.LLM_JUDGE_MAX_COST),
    )
    spent = LLMJudgeAnswer.objects.filter(job=job).aggregate(
        spent_tokens=Sum(F("prompt_tokens") + F("completion_tokens")), spent_cost=Sum("cost"), answers=Count("id"),
        dearest=Max(F("prompt_tokens") + F("completion_tokens")), dearest_cost=Max("cost"),
    )  # fmt: skip
    budget.tokens, budget.cost = spent["spent_tokens"] or 0, spent["spent_cost"] or 0.0
    budget.answers = spent["answers"]
    budget.dearest_tokens, budget.dearest_cost = spent["dearest"] or 0, spent["dearest_cost"] or 0.0
    return budget


def _compute(job: LLMJudgeJob, progress: ProgressFn) -> Asked:
    if not llm_enabled():
        raise JobError(DISABLED_MESSAGE)
    pairs, skipped, earlier = _open_pairs(job)
    total = earlier + len(pairs)
    levels = scale_levels(job.project.scale)
    grades = frozenset(level.grade for level in levels)
    queries = dict(Topic.objects.filter(pk__in={t for t, _ in pairs}).values_list("pk", "title"))
    budget, prices = _budget(job), llm_prices()
    client = ChatClient(llm_endpoint(), RateLimit(float(settings.LLM_JUDGE_REQUESTS_PER_SECOND)))
    max_chars = int(settings.LLM_JUDGE_PASSAGE_MAX_CHARS)
    started, asked = time.monotonic(), 0
    progress(0.0, f"{len(pairs):,} pairs to ask for")
    for start in range(0, len(pairs), BATCH):
        batch = pairs[start : start + BATCH]
        documents = {
            pk: (title, head)
            for pk, title, head in Document.objects.filter(pk__in=[d for _, d in batch])
            .annotate(head=Substr("text", 1, max_chars))
            .values_list("pk", "title", "head")
        }
        answers: list[LLMJudgeAnswer] = []
        stop = Asked(total, skipped)
        try:
            for topic_id, document_id in batch:
                if reason := budget.stop_reason():
                    stop = Asked(total, skipped, f"Stopped by {reason}.", "cap")
                    break
                if time.monotonic() - started > JOB_SECONDS:
                    stop = Asked(
                        total, skipped, "Stopped by the job's time limit: run it again to go on.", "time"
                    )
                    break
                prompt = prompt_text(
                    queries[topic_id],
                    passage_text(*documents[document_id], max_chars=max_chars),
                    scale=levels,
                )
                answer = _answer(job, topic_id, document_id, prompt, client.ask(prompt), grades, prices)
                budget.spend(Usage(answer.prompt_tokens, answer.completion_tokens))
                answers.append(answer)
        except EndpointError as error:
            _answers_save(answers)
            raise JobError(str(error)) from None
        _answers_save(answers)
        asked += len(answers)
        note = f"{asked:,} of {len(pairs):,} pairs asked; {budget.tokens:,} tokens"
        progress(asked / len(pairs), note)
        if stop.stopped:
            return stop
    return Asked(total, skipped)


def _answer(
    job: LLMJudgeJob, topic_id: int, document_id: int, prompt: str, reply: Reply | NoReply,
    grades: frozenset[int], prices: Prices,
) -> LLMJudgeAnswer:  # fmt: skip
    pair = {"judge_id": job.judge_id, "job": job, "topic_id": topic_id, "document_id": document_id}
    if isinstance(reply, NoReply):
        return LLMJudgeAnswer(**pair, status="failed", reason=reply.reason[:2000], attempts=reply.attempts)
    read = answer_read(reply.text, grades=grades, refusal=reply.refusal, finish_reason=reply.finish_reason)
    usage = Usage.of(reply.usage, prompt=prompt, answer=reply.text or "")
    return LLMJudgeAnswer(
        **pair, status=read.status, grade=read.grade, raw_text=reply.text or reply.refusal, reason=read.reason,
        attempts=reply.attempts, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
        tokens_estimated=usage.estimated, cost=prices.cost(usage),
    )  # fmt: skip


ANSWER_FIELDS = ["job", "status", "grade", "raw_text", "reason", "attempts", "prompt_tokens",
                 "completion_tokens", "tokens_estimated", "cost", "answered_at"]  # fmt: skip


def _answers_save(answers: list[LLMJudgeAnswer]) -> None:
    """The answers, and a machine label for each grade, in one transaction (a failed request's row is
    replaced by the answer a later job gets)."""
    if not answers:
        return
    labels = [
        MachineLabel(
            judge_id=a.judge_id,
            topic_id=a.topic_id,
            document_id=a.document_id,
            grade=int(a.grade or 0),  # graded answers only: never None here
            rationale=answer_rationale(a.raw_text)[:2000],
            raw_text=a.raw_text,
        )  # fmt: skip
        for a in answers
        if a.status == LLMJudgeAnswer.Status.GRADED and a.grade is not None
    ]
    with transaction.atomic():
        LLMJudgeAnswer.objects.bulk_create(
            answers,
            update_conflicts=True,
            unique_fields=["judge", "topic", "document"],
            update_fields=ANSWER_FIELDS,
        )
        MachineLabel.objects.bulk_create(
            labels, update_conflicts=True, unique_fields=["judge", "topic", "document"],
            update_fields=["grade", "confidence", "rationale", "raw_text"],
        )  # fmt: skip


def _store(job: LLMJudgeJob, asked: Asked) -> None:
    job.result = llm_job_summary(job, asked)


def llm_job_summary(job: LLMJudgeJob, asked: Asked) -> dict[str, Any]:
    """The job's counts (from its answers, every attempt's), tokens, cost, and why it stopped early."""
    rows = LLMJudgeAnswer.objects.filter(job=job)
    by_status = dict(rows.order_by().values_list("status").annotate(n=Count("id")))
    totals = rows.aggregate(
        prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"), spent=Sum("cost"),
        estimated=Count("id", filter=Q(tokens_estimated=True)),
    )  # fmt: skip
    counts = {status: by_status.get(status, 0) for status in LLMJudgeAnswer.Status.values}
    prompt_tokens, completion_tokens = totals["prompt"] or 0, totals["completion"] or 0
    result = {
        **counts,
        "pairs": asked.pairs,
        "skipped": asked.skipped,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "tokens": prompt_tokens + completion_tokens,
        "tokens_estimated": totals["estimated"],
        "cost": round(totals["spent"] or 0.0, 6),
        "stopped_by_cap": asked.stopped_by == "cap",
        "stopped_by": asked.stopped_by,
        "stopped": asked.stopped,
    }
    return {**result, "summary": summary_text(result)}


def summary_text(result: dict[str, Any]) -> str:
    """In plain words: "Graded 18 pairs; 1 unparsable, 0 refused, 1 failed. ..."."""
    text = (
        f"Graded {result['graded']:,} pairs; {result['unparsable']:,} unparsable, {result['refused']:,} refused, "
        f"{result['failed']:,} failed (no answer). {result['skipped']:,} already answered were skipped. "
        f"{result['tokens']:,} tokens"
    )
    text += f", cost {result['cost']:.4f}." if result["cost"] else "."
    return f"{text} {result['stopped']}" if result["stopped"] else text
