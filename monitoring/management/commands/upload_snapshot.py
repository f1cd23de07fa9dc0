"""`upload_snapshot TEAM STREAM FILE`: a snapshot of an embedding stream, as the API takes it.

FILE is a `.npy` file (rows x the stream's dimension, float32 or float64; its header is checked before it
is kept) or a `.json` file holding a list of vectors (or `{"vectors": [...]}`), for small batches.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import Http404
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from monitoring.embeddings import services as monitors
from monitoring.management.commands.upload_run import add_user_option, opened, team_and_user
from monitoring.models import EmbeddingSnapshot, EmbeddingStream, MonitorRun


def find_stream(team_slug: str, stream_slug: str, username: str | None) -> tuple[EmbeddingStream, Any]:
    """The team's stream and the acting user (an editor, when named); one-line errors otherwise."""
    team, user = team_and_user(team_slug, username)
    try:
        return monitors.get_stream(team=team, slug=stream_slug), user
    except Http404:
        names = ", ".join(monitors.team_streams(team=team).values_list("slug", flat=True)) or "none yet"
        raise CommandError(
            f"The team {team.slug} has no stream {stream_slug!r} (its streams: {names})."
        ) from None


def parse_moment(text: str) -> datetime:
    """An ISO 8601 date and time (or a date, at midnight); without a zone, in the site's time zone."""
    moment = parse_datetime(text)
    if moment is None and (day := parse_date(text)) is not None:
        moment = datetime(day.year, day.month, day.day)
    if moment is None:
        raise CommandError(
            f"--observed-at: {text!r} is not an ISO 8601 date and time, e.g. 2026-11-23T14:00:00Z"
        )
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment


def read_vectors(path: str) -> Any:
    with opened(path) as handle:
        try:
            data = json.load(handle)
        except (ValueError, UnicodeDecodeError) as error:
            raise CommandError(f"{path}: not JSON ({error})") from None
    return data["vectors"] if isinstance(data, dict) and "vectors" in data else data


def snapshot_summary(snapshot: EmbeddingSnapshot, run: MonitorRun | None) -> dict[str, Any]:
    stream = snapshot.stream
    return {
        "snapshot": snapshot.pk,
        "team": stream.team.slug,
        "stream": stream.slug,
        "kind": snapshot.kind,
        "label": snapshot.label,
        "rows": snapshot.rows,
        "dimension": snapshot.dimension,
        "dtype": snapshot.dtype,
        "size": snapshot.size,
        "sha256": snapshot.sha256,
        "observed_at": snapshot.observed_at.isoformat(),
        "run": None if run is None else {"id": run.pk, "status": run.status, "error": run.error},
    }


class Command(BaseCommand):
    help = (
        "Upload a snapshot of a team's embedding stream: FILE is a .npy file (rows x the stream's dimension, "
        "float32 or float64), or a .json list of vectors for a small batch. Its header is checked before it "
        "is kept. A periodic snapshot is monitored by the stream's schedule (or `monitor_stream TEAM STREAM`); "
        "with --reference it becomes the stream's reference and its run (quality and calibration) is queued "
        "at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", metavar="TEAM", help="the team's slug")
        parser.add_argument("stream", metavar="STREAM", help="the stream's slug")
        parser.add_argument("file", metavar="FILE", help="a .npy file, or a .json list of vectors")
        parser.add_argument(
            "--reference", action="store_true", help="make it the stream's reference (what good looks like)"
        )
        parser.add_argument(
            "--observed-at",
            metavar="WHEN",
            help="when the embeddings were taken, ISO 8601 (default: now); the x axis of the dashboard",
        )
        parser.add_argument("--label", default="", help="a name for the snapshot (default: the file's name)")
        add_user_option(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        stream, user = find_stream(options["team"], options["stream"], options["user"])
        observed_at = parse_moment(options["observed_at"]) if options["observed_at"] else None
        path = options["file"]
        common = {"reference": options["reference"], "observed_at": observed_at, "uploaded_by": user}
        try:
            if Path(path).suffix.lower() == ".json":
                label = options["label"] or Path(path).stem
                snapshot = monitors.snapshot_from_vectors(
                    stream=stream, vectors=read_vectors(path), label=label, **common
                )
            else:
                with opened(path) as handle:
                    snapshot = monitors.snapshot_upload(
                        stream=stream, upload=handle, label=options["label"], **common
                    )
        except monitors.MonitorInputError as error:
            raise CommandError(
                str(error) if str(error).startswith(Path(path).name) else f"{path}: {error}"
            ) from None
        run = snapshot.monitor_runs.first() if options["reference"] else None
        if options["json"]:
            self.stdout.write(json.dumps(snapshot_summary(snapshot, run)))
            return
        self.stdout.write(
            f"Uploaded snapshot {snapshot.pk} {snapshot.label!r} to the stream {stream.team.slug}/{stream.slug} "
            f"({snapshot.rows:,} x {snapshot.dimension} {snapshot.dtype}, observed {snapshot.observed_at:%Y-%m-%d %H:%M %Z})."
        )
        if run is not None and run.status == "failed":
            raise CommandError(
                f"It is the stream's reference, but its run could not be queued: {run.error} "
                f"Compute it here with `monitor_stream {stream.team.slug} {stream.slug} --sync`."
            )
        if run is not None:
            self.stdout.write(f"It is the stream's reference; its run {run.pk} is queued on the worker.")
        else:
            self.stdout.write(
                f"It waits for the stream's schedule ({monitors.schedule_text(stream)}); "
                f"`monitor_stream {stream.team.slug} {stream.slug}` monitors it now."
            )
