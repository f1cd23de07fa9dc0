"""`upload_qrels TEAM FILE`: store a qrels file as one of a team's qrels sources."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from monitoring.files import uploads
from monitoring.management.commands.upload_run import (
    FORMATS,
    add_user_option,
    counts_text,
    opened,
    team_and_user,
)


class Command(BaseCommand):
    help = (
        "Upload relevance judgments (qrels: TREC `qid iter docno rel`, TSV or JSONL) as a qrels source of a "
        "team (TEAM is its slug). Its first lines are checked before it is stored. A judging project's "
        "qrels build needs no upload: `evaluate TEAM --qrels PROJECT:VERSION` uses it directly."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", metavar="TEAM", help="the team's slug")
        parser.add_argument("file", metavar="FILE", help="the qrels file")
        parser.add_argument("--name", default="", help="the source's name (default: the file name)")
        parser.add_argument("--description", default="", help="where the judgments come from")
        parser.add_argument("--format", choices=FORMATS, help="the file's format (default: from the file)")
        add_user_option(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        team, user = team_and_user(options["team"], options["user"])
        with opened(options["file"]) as handle:
            try:
                source = uploads.qrels_upload(
                    team=team, upload=handle, name=options["name"], description=options["description"],
                    fmt=options["format"], uploaded_by=user,
                )  # fmt: skip
            except uploads.UploadError as error:
                raise CommandError(str(error)) from None
        if options["json"]:
            data = {
                "qrels": source.pk, "team": team.slug, "name": source.name, "format": source.format,
                "num_queries": source.num_queries, "num_rows": source.num_rows, "sha256": source.sha256,
            }  # fmt: skip
            self.stdout.write(json.dumps(data))
            return
        self.stdout.write(
            f"Uploaded qrels {source.pk} {source.name!r} to the team {team.slug} ({source.format}, "
            f"{counts_text(source.num_queries, source.num_rows)}). Evaluate against it with "
            f"`evaluate {team.slug} --run ... --qrels {source.pk}`."
        )
