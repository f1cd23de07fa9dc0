"""`llm_judge --project SLUG [--topic T ...] [--limit N] [--json]`: grade a project's pairs with the LLM judge."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations.machine_judges import llm
from annotations.models import LLMJudgeJob, Project
from evalplatform.errors import InputError


class Command(BaseCommand):
    help = (
        "Ask the LLM judge (an OpenAI-compatible chat endpoint: LLM_JUDGE_BASE_URL and LLM_JUDGE_MODEL, off "
        "unless LLM_JUDGE_ENABLED=true) to grade the project's pairs with the versioned UMBRELA-style prompt: "
        "the tasks of the given topics (or all), not yet answered by the same judge, up to --limit pairs. "
        "Runs here, in this process, with the same retries, rate limit and token and cost caps as the job "
        "the web page starts; its labels go to the machine judge llm:<model>, version the prompt's. Prints "
        "what it did: graded, unparsable, refused, failed, skipped, tokens, cost, and whether a cap stopped it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, metavar="SLUG", help="the project's slug")
        parser.add_argument(
            "--topic", action="append", default=[], metavar="QID",
            help="grade this topic's tasks (repeat for several; default: every topic)",
        )  # fmt: skip
        parser.add_argument(
            "--limit", type=int, default=100, help="most pairs to ask for (default %(default)d)"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"There is no project {options['project']!r}.")
        try:
            job = llm.llm_judge_start(
                project=project, topics=options["topic"], limit=options["limit"], enqueue=False
            )
        except InputError as error:
            raise CommandError(str(error)) from None
        llm.llm_judge_run(job_id=job.pk)
        job = LLMJudgeJob.objects.select_related("judge").get(pk=job.pk)
        if job.status != LLMJudgeJob.Status.DONE:
            raise CommandError(f"The job {job.status}: {job.error or 'it did not finish'}")
        if options["json"]:
            data = {"job": job.pk, "judge": job.judge_id, "judge_name": job.judge.name,
                    "judge_version": job.judge.version, **job.result}  # fmt: skip
            self.stdout.write(json.dumps(data, indent=2))
        else:
            self.stdout.write(f"{job.judge}: {job.result['summary']}")
