"""`upload_run TEAM FILE`: store a TREC run for a team, as the web and the API do.

The helpers below (the team and the acting user, a file opened for upload) are shared with
`upload_qrels` and `evaluate`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import Http404

from evalplatform.auth import User
from evalplatform.models import Team
from evalplatform.teams import get_team_for_member
from monitoring.files import uploads
from monitoring.models import Run

FORMATS = ("trec", "tsv", "jsonl")


# --- shared by the upload and evaluate commands -------------------------------------------------------


def add_user_option(parser: CommandParser) -> None:
    parser.add_argument(
        "--user",
        metavar="USERNAME",
        help="act as this account, which must be an editor of the team, and record it as the uploader "
        "(default: nobody; the command line acts for the operator)",
    )


def find_team(slug: str) -> Team:
    """The team of that slug, or a CommandError saying there is none."""
    team = Team.objects.filter(slug=slug).first()
    if team is None:
        raise CommandError(f"There is no team {slug!r}.")
    return team


def team_and_user(slug: str, username: str | None) -> tuple[Team, User | None]:
    """The team, and the acting user when one is named: an editor of the team (or a superuser)."""
    team = find_team(slug)
    if not username:
        return team, None
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"There is no account {username!r}.")
    try:
        get_team_for_member(user, slug, write=True)
    except Http404:
        raise CommandError(f"{username} is not a member of the team {slug}.") from None
    except PermissionDenied:
        raise CommandError(
            f"{username} is a viewer of the team {slug}; only its editors can do this."
        ) from None
    return team, user


@contextmanager
def opened(path: str) -> Iterator[IO[bytes]]:
    """The file, opened for an upload, named as the user gave it (the name appears in error messages)."""
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"{path}: no such file")
    try:
        handle = file.open("rb")
    except OSError as error:
        raise CommandError(f"{path}: {error.strerror or error}") from None
    with handle:
        yield handle


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with opened(path) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def run_summary(run: Run) -> dict[str, Any]:
    return {
        "run": run.pk,
        "team": run.team.slug,
        "name": run.name,
        "description": run.description,
        "tags": run.tags,
        "run_tag": run.run_tag,
        "format": run.format,
        "num_queries": run.num_queries,
        "num_rows": run.num_rows,
        "size": run.size,
        "sha256": run.sha256,
        "uploaded_by": run.uploaded_by.get_username() if run.uploaded_by else None,
    }


def counts_text(num_queries: int | None, num_rows: int | None) -> str:
    if num_rows is None:
        return "counted when it is first evaluated"
    return f"{num_queries} queries, {num_rows} rows"


# --- the command --------------------------------------------------------------------------------------


class Command(BaseCommand):
    help = (
        "Upload a run (a system's ranked results: TREC `qid Q0 docno rank score tag`, TSV or JSONL) for a "
        "team (TEAM is its slug). Its first lines are checked before it is stored, so a malformed file is "
        "refused with the line and the reason and nothing is kept. Prints the run's id, for `evaluate`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", metavar="TEAM", help="the team's slug")
        parser.add_argument("file", metavar="FILE", help="the run file")
        parser.add_argument(
            "--name", default="", help="the run's name (default: its tag, else the file name)"
        )
        parser.add_argument("--description", default="", help="what the system is and how it was run")
        parser.add_argument(
            "--tag",
            action="append",
            dest="tags",
            default=[],
            metavar="T",
            help="a free label (model, index, date); repeat for several",
        )
        parser.add_argument("--format", choices=FORMATS, help="the file's format (default: from the file)")
        add_user_option(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        team, user = team_and_user(options["team"], options["user"])
        with opened(options["file"]) as handle:
            try:
                run = uploads.run_upload(
                    team=team, upload=handle, name=options["name"], description=options["description"],
                    tags=options["tags"], fmt=options["format"], uploaded_by=user,
                )  # fmt: skip
            except uploads.UploadError as error:
                raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(run_summary(run)))
            return
        self.stdout.write(
            f"Uploaded run {run.pk} {run.name!r} to the team {team.slug} ({run.format}, "
            f"{counts_text(run.num_queries, run.num_rows)}). Evaluate it with "
            f"`evaluate {team.slug} --run {run.pk} --qrels ...`."
        )
