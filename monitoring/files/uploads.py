"""Uploading runs and qrels, and picking a judging project's qrels build as a team's qrels source.

An upload is stored as a file under MEDIA_ROOT. A file over UPLOAD_MAX_BYTES is refused before any of it
is read (`evalplatform.uploads`). Before it is kept, its first `SNIFF_LINES` lines are read with the same
readers the evaluation uses, so a file in the wrong format is refused at once with the file, the line and
the reason, and nothing is stored. A query or document id longer than TREC_MAX_ID_CHARS is refused
the same way on any line: the rest of the file is scanned for one as it streams past (`_LongIds`).
Deeper problems (a bad line further down, a document listed twice) fail the evaluation job with the same
kind of message.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
from django.conf import settings
from django.db import transaction

from annotations.models import QrelsBuild
from annotations.qrels import qrels_export_counts
from evalcore import trec
from evalcore.errors import EvalCoreError, FormatError
from evalplatform.auth import User
from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from evalplatform.uploads import stored_file, upload_chunks, upload_name, upload_size, upload_too_large
from monitoring.models import QrelsSource, Run

#: How many leading lines an upload is checked on before it is stored.
SNIFF_LINES = 2_000
SUFFIXES = (".trec", ".txt", ".run", ".qrels", ".tsv", ".jsonl", ".json", "")


class UploadError(InputError, EvalCoreError, ValueError):
    """An upload refused; the message names the file and, where it can, the line."""


@dataclass(frozen=True)
class Sniffed:
    """What the first lines said; the counts are the whole file's only when it fit in those lines."""

    format: str
    num_queries: int | None
    num_rows: int | None
    run_tag: str
    size: int
    sha256: str


def size_check(upload: Any, *, size: int | None = None) -> None:
    """Refuse an upload over UPLOAD_MAX_BYTES: before reading it, or by the `size` read when it could not tell."""
    too_large = upload_too_large(upload_size(upload) if size is None else size)
    if too_large:
        raise UploadError(f"{upload_name(upload)}: {too_large}")


_BLOCK = 1 << 20


def _line_blocks(upload: Any) -> Iterator[bytes]:
    """The upload again, as blocks of about a megabyte of whole lines, each ending in a newline."""
    parts: list[bytes] = []
    size = 0
    for chunk in upload_chunks(upload):
        parts.append(chunk)
        size += len(chunk)
        if size >= _BLOCK and b"\n" in chunk:
            data = b"".join(parts)
            end = data.rfind(b"\n") + 1
            yield data[:end]
            parts, size = [data[end:]], len(data) - end
    rest = b"".join(parts)
    if rest:
        yield rest if rest.endswith(b"\n") else rest + b"\n"


def _long_id(upload: Any, *, kind: str, fmt: str, checked: int) -> tuple[int, str] | None:
    """The first line past the `checked` head whose query or document id is over TREC_MAX_ID_CHARS, and why.

    Such an id is a run of more bytes than the bound without whitespace (a character is at least a
    byte), and a run of at least 2S - 1 bytes covers a whole aligned span of S: a vectorised pass marks
    the spans of S = (bound + 1) / 2 bytes without a byte at or below the space, nearly always none,
    and only the lines holding one are split and checked (`trec.line_id_problem`). Memory: a block,
    or one line if it is longer. (A control byte inside an id counts as a break here; the reader's
    check of the first lines has no such blind spot.)
    """
    max_chars: int = settings.TREC_MAX_ID_CHARS
    span = (max_chars + 1) // 2
    lines = 0
    for block in _line_blocks(upload):
        whole = len(block) // span * span
        spans = np.frombuffer(block, dtype=np.uint8, count=whole).reshape(-1, span)
        counted = 0  # lines of this block counted into `lines` (up to the byte `counted`)
        checked_to = -1  # the end of the last line checked
        for index in np.flatnonzero(~(spans <= 32).any(axis=1)).tolist():
            at = index * span
            if at <= checked_to:
                continue
            start = block.rfind(b"\n", 0, at) + 1
            checked_to = block.find(b"\n", at)
            lines += block.count(b"\n", counted, start)
            counted = start
            if lines + 1 <= checked:
                continue
            line = block[start:checked_to].decode("utf-8", errors="surrogateescape")
            reason = trec.line_id_problem(line, kind=kind, fmt=fmt, max_id_chars=max_chars)  # type: ignore[arg-type]
            if reason:
                return lines + 1, reason
        lines += block.count(b"\n", counted)
    return None


def sniff(upload: Any, *, kind: str, fmt: str | None = None) -> Sniffed:
    """Read the upload's first lines as a run or qrels file; hash and measure the whole file.

    Raises `UploadError` naming the uploaded file's name, the line and the reason.
    """
    name = upload_name(upload)
    size_check(upload)
    digest = hashlib.sha256()
    size = 0
    head: list[bytes] = []
    pending = b""
    truncated = False
    for chunk in upload_chunks(upload):
        digest.update(chunk)
        size += len(chunk)
        if len(head) < SNIFF_LINES:
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            truncated = truncated or len(lines) > SNIFF_LINES - len(head)
            head.extend(lines[: SNIFF_LINES - len(head)])
        else:
            truncated = True
    if len(head) < SNIFF_LINES and pending:
        head.append(pending)
    elif pending:
        truncated = True
    if size == 0 or not any(line.strip() for line in head):
        raise UploadError(f"{name}: the file is empty")
    size_check(upload, size=size)
    suffix = Path(name).suffix.lower() if Path(name).suffix.lower() in SUFFIXES else ""
    with tempfile.NamedTemporaryFile(suffix=suffix or ".txt") as handle:
        handle.write(b"\n".join(head) + b"\n")
        handle.flush()
        try:
            detected = fmt or trec.detect_format(handle.name, kind)  # type: ignore[arg-type]
            reader = trec.read_run if kind == "run" else trec.read_qrels
            data = reader(handle.name, fmt=detected, max_id_chars=settings.TREC_MAX_ID_CHARS)  # type: ignore[arg-type]
        except FormatError as error:
            raise UploadError(
                f"{name}:{error.line}: {error.reason}" if error.line else f"{name}: {error.reason}"
            ) from None
        except (EvalCoreError, UnicodeDecodeError, ValueError) as error:
            raise UploadError(f"{name}: {error}") from None
    long_id = _long_id(upload, kind=kind, fmt=str(detected), checked=len(head)) if truncated else None
    if long_id:
        raise UploadError(f"{name}:{long_id[0]}: {long_id[1]}")
    tag = _run_tag(head, name) if kind == "run" and detected == "trec" else ""
    return Sniffed(
        format=str(detected),
        num_queries=None if truncated else len(data.qids),
        num_rows=None if truncated else len(data),
        run_tag=tag,
        size=size,
        sha256=digest.hexdigest(),
    )


def _run_tag(head: Iterable[bytes], name: str) -> str:
    """The first line's run tag, which becomes the run's name; one with a NUL byte, which no database text
    column holds, is refused (it was a 500)."""
    for number, line in enumerate(head, start=1):
        fields = line.split()
        if len(fields) >= 6:
            if b"\x00" in fields[5]:
                raise UploadError(f"{name}:{number}: the run tag contains a NUL character")
            return fields[5].decode("utf-8", errors="replace")[:200]
    return ""


@transaction.atomic
def run_upload(
    *,
    team: Team,
    upload: IO[bytes] | Any,
    name: str = "",
    description: str = "",
    tags: Iterable[str] = (),
    fmt: str | None = None,
    uploaded_by: User | None = None,
) -> Run:
    """Store an uploaded run file for the team after checking its first lines."""
    sniffed = sniff(upload, kind="run", fmt=fmt)
    original = upload_name(upload)
    run = Run(
        team=team,
        name=(name or sniffed.run_tag or Path(original).stem)[:200],
        description=description,
        original_name=original,
        size=sniffed.size,
        sha256=sniffed.sha256,
        format=sniffed.format,
        run_tag=sniffed.run_tag,
        num_queries=sniffed.num_queries,
        num_rows=sniffed.num_rows,
        tags=sorted({tag.strip() for tag in tags if tag.strip()}),
        uploaded_by=uploaded_by,
    )
    run.file.save(original, stored_file(upload), save=False)
    run.save()
    return run


@transaction.atomic
def qrels_upload(
    *,
    team: Team,
    upload: IO[bytes] | Any,
    name: str = "",
    description: str = "",
    fmt: str | None = None,
    uploaded_by: User | None = None,
) -> QrelsSource:
    """Store an uploaded qrels file for the team after checking its first lines."""
    sniffed = sniff(upload, kind="qrels", fmt=fmt)
    original = upload_name(upload)
    source = QrelsSource(
        team=team,
        kind=QrelsSource.Kind.UPLOAD,
        name=(name or Path(original).stem)[:200],
        description=description,
        original_name=original,
        size=sniffed.size,
        sha256=sniffed.sha256,
        format=sniffed.format,
        num_queries=sniffed.num_queries,
        num_rows=sniffed.num_rows,
        uploaded_by=uploaded_by,
    )
    source.file.save(original, stored_file(upload), save=False)
    source.save()
    return source


def qrels_source_for_build(*, team: Team, build: QrelsBuild, by: User | None = None) -> QrelsSource:
    """The team's qrels source for a finished qrels build, created on first use.

    The build's project must be linked to the team (`Project.team`). Its counts and size are the TREC
    export's, as an uploaded file's are the file's (the team's tables and the API show them alike), and
    it was "uploaded by" whoever made the build, whichever way it reached the team (picked on the page or
    the API by `by`, or by the re-scoring after a new version, with no one): `by` only when the build
    names no one (made by a command).
    """
    if build.project.team_id != team.pk:
        raise UploadError(f"{build.project.slug} is not a judging project of the team {team.slug}")
    if build.status != JobStatus.DONE:
        raise UploadError(
            f"{build.project.slug} v{build.version} is {build.status}; only a done build can be used"
        )
    source = QrelsSource.objects.filter(team=team, build=build).first()
    if source is not None:
        return source
    num_queries, size = qrels_export_counts(build)
    source, _ = QrelsSource.objects.get_or_create(
        team=team,
        build=build,
        defaults={
            "kind": QrelsSource.Kind.BUILD,
            "name": f"{build.project.slug} v{build.version}",
            "description": f"Qrels build v{build.version} of the judging project {build.project.name}.",
            "size": size,
            "sha256": build.content_hash,
            "format": "trec",
            "num_queries": num_queries,
            "num_rows": build.pairs_kept,
            "uploaded_by_id": build.created_by_id or (by.pk if by is not None else None),
        },
    )
    return source
