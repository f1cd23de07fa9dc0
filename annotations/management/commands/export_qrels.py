"""`export_qrels BUILD --format trec|jsonl`: write a finished qrels build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotations import qrels
from annotations.models import QrelsBuild
from evalcore.judging import QrelsError


class Command(BaseCommand):
    help = (
        "Export a finished qrels build as TREC qrels (qid 0 docno rel) or as JSONL with each label's "
        "provenance (annotator, grade, seconds, time). BUILD is the build id that build_qrels prints, or "
        "PROJECT:VERSION. Lines are sorted by qid, then doc id, in code point order: the same build always "
        "gives the same bytes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "build", metavar="BUILD", help="build id, or PROJECT:VERSION (e.g. python-help:2)"
        )
        parser.add_argument("--format", choices=qrels.EXPORT_FORMATS, default="trec", help="default trec")
        parser.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        build = find_build(options["build"])
        try:
            text = qrels.qrels_export(build, fmt=options["format"])
        except QrelsError as error:
            raise CommandError(str(error)) from error
        if options["output"]:
            Path(options["output"]).write_bytes(text.encode("utf-8"))
            self.stderr.write(f"Wrote {build.pairs_kept} judgments to {options['output']}.")
        else:
            self.stdout.write(text, ending="")


def find_build(reference: str) -> QrelsBuild:
    builds = QrelsBuild.objects.select_related("project")
    if reference.isdigit():
        build = builds.filter(pk=int(reference)).first()
    elif ":" in reference and reference.rsplit(":", 1)[1].isdigit():
        slug, version = reference.rsplit(":", 1)
        build = builds.filter(project__slug=slug, version=int(version)).first()
    else:
        raise CommandError(f"BUILD is a build id or PROJECT:VERSION, not {reference!r}.")
    if build is None:
        raise CommandError(f"There is no qrels build {reference!r}.")
    return build
