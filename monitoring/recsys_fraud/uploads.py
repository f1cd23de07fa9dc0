"""Uploading recommendation sets and fraud score sets, checked on their first lines.

Before a set is kept, the first `SNIFF_LINES` lines of each file are read with the core's own readers
(`evalcore.recsys.read_recsys_files`, `evalcore.fraud.read_scores`), so a file in the wrong format is
refused at once with the file's name, the line and the reason (`UploadError`), and nothing is stored. A
problem further down fails the evaluation job with the same kind of message.
"""

from __future__ import annotations

import csv
import hashlib
import math
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.db import transaction

from evalcore.errors import EvalCoreError, FormatError
from evalcore.fraud import read_scores
from evalcore.recsys import read_recsys_files
from evalplatform.auth import User
from evalplatform.models import Team
from evalplatform.uploads import stored_file, upload_chunks, upload_name
from monitoring.files.uploads import SNIFF_LINES, UploadError, size_check
from monitoring.models import FraudScoreSet, RecommendationSet


class FileRefused(UploadError):
    """An upload refused; `role` says which of the set's files is at fault (None: the set as a whole)."""

    def __init__(self, message: str, *, role: str | None) -> None:
        super().__init__(message)
        self.role = role


@dataclass(frozen=True)
class Head:
    """An upload's first lines, written to `path`; its size and hash are the whole file's."""

    role: str
    name: str
    path: str
    truncated: bool
    size: int
    sha256: str

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size, "sha256": self.sha256}


def read_head(upload: Any, *, folder: str, role: str) -> Head:
    """Write the upload's first `SNIFF_LINES` lines to `folder`, hashing and measuring the whole file."""
    name = upload_name(upload)
    _size_check(upload, role=role)
    digest, size, pending, truncated = hashlib.sha256(), 0, b"", False
    head: list[bytes] = []
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
    if pending and len(head) < SNIFF_LINES:
        head.append(pending)
    elif pending:
        truncated = True
    if size == 0 or not any(line.strip() for line in head):
        raise FileRefused(f"{name}: the file is empty", role=role)
    _size_check(upload, role=role, size=size)
    path = str(Path(folder) / f"{role}.csv")
    Path(path).write_bytes(b"\n".join(head) + b"\n")
    return Head(role, name, path, truncated, size, digest.hexdigest())


def _size_check(upload: Any, *, role: str, size: int | None = None) -> None:
    try:
        size_check(upload, size=size)
    except UploadError as error:
        raise FileRefused(str(error), role=role) from None


def _refusal(error: Exception, heads: Iterable[Head]) -> FileRefused:
    """The reader's error with the uploaded file's name instead of the temporary path, and its role."""
    by_path = {head.path: head for head in heads}
    if isinstance(error, FormatError):
        head = by_path.get(error.path)
        name = head.name if head else Path(error.path).name
        where = f"{name}:{error.line}" if error.line else name
        return FileRefused(f"{where}: {error.reason}", role=head.role if head else None)
    message, role = str(error), None
    for path, head in by_path.items():
        if path in message:
            message, role = message.replace(path, head.name), head.role
    return FileRefused(message, role=role)


@contextmanager
def _refused_as_upload_errors(heads: Iterable[Head]) -> Iterator[None]:
    try:
        yield
    except UploadError:
        raise
    except (EvalCoreError, UnicodeDecodeError, ValueError) as error:
        raise _refusal(error, heads) from None


def _header(path: str) -> list[str]:
    with open(path, newline="", encoding="utf-8", errors="replace") as handle:
        rows = csv.reader(handle)
        return [column.strip() for column in next(rows, [])]


def _first_value(path: str, column: str) -> str:
    with open(path, newline="", encoding="utf-8", errors="replace") as handle:
        rows = csv.DictReader(handle)
        first = next(rows, None)
        return "" if first is None else (first.get(column) or "").strip()


# --- uploading ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecsysCounts:
    num_users: int | None
    num_items: int | None
    depth: int | None


def recsys_files_check(heads: dict[str, Head]) -> RecsysCounts:
    """Read the files' first lines as the evaluation will; the counts when every file was read whole.

    An items file cut short cannot be the catalog of the other files' first lines (their items may lie
    further down it), so it is then checked on its own, against a list file with no rows.
    """
    items = heads.get("items")
    whole = not any(head.truncated for head in heads.values())
    with _refused_as_upload_errors(heads.values()):
        files = read_recsys_files(
            heads["recs"].path,
            heads["interactions"].path,
            items=items.path if items is not None and not items.truncated else None,
            history=heads["history"].path if "history" in heads else None,
        )
        if items is not None and items.truncated:
            no_lists = str(Path(items.path).with_name("no-lists.csv"))
            Path(no_lists).write_text("user,item,rank\n")
            read_recsys_files(no_lists, items=items.path)
    if files.data.lists.n_users == 0:
        raise FileRefused(f"{heads['recs'].name}: the file holds no recommendations", role="recs")
    if files.n_interaction_rows == 0:
        raise FileRefused(
            f"{heads['interactions'].name}: the file holds no interactions", role="interactions"
        )
    if not whole:
        return RecsysCounts(None, None, None)
    lists = files.data.lists
    return RecsysCounts(lists.n_users, lists.n_items, int(lists.lengths.max()))


@transaction.atomic
def recommendation_set_upload(
    *,
    team: Team,
    recs: IO[bytes] | Any,
    interactions: IO[bytes] | Any,
    items: IO[bytes] | Any | None = None,
    history: IO[bytes] | Any | None = None,
    name: str = "",
    description: str = "",
    uploaded_by: User | None = None,
) -> RecommendationSet:
    """Store a recommendation set for the team after checking each file's first lines."""
    uploads = {"recs": recs, "interactions": interactions, "items": items, "history": history}
    given = {role: upload for role, upload in uploads.items() if upload is not None}
    with tempfile.TemporaryDirectory() as folder:
        heads = {role: read_head(upload, folder=folder, role=role) for role, upload in given.items()}
        counts = recsys_files_check(heads)
    recommendation_set = RecommendationSet(
        team=team, name=(name or Path(heads["recs"].name).stem)[:200], description=description,
        files={role: head.info() for role, head in heads.items()}, num_users=counts.num_users,
        num_items=counts.num_items, depth=counts.depth, uploaded_by=uploaded_by,
    )  # fmt: skip
    for role, upload in given.items():
        getattr(recommendation_set, role).save(heads[role].name, stored_file(upload), save=False)
    recommendation_set.save()
    return recommendation_set


@transaction.atomic
def fraud_score_set_upload(
    *,
    team: Team,
    scores: IO[bytes] | Any,
    name: str = "",
    description: str = "",
    uploaded_by: User | None = None,
) -> FraudScoreSet:
    """Store a fraud score set for the team after checking the file's first lines."""
    with tempfile.TemporaryDirectory() as folder:
        head = read_head(scores, folder=folder, role="scores")
        with _refused_as_upload_errors([head]):
            examples = read_scores(head.path)
        columns = _header(head.path)
        dated = "timestamp" in columns and not _is_number(_first_value(head.path, "timestamp"))
    score_set = FraudScoreSet(
        team=team, name=(name or Path(head.name).stem)[:200], description=description,
        original_name=head.name, size=head.size, sha256=head.sha256, columns=columns,
        time_unit="seconds" if dated else "", uploaded_by=uploaded_by,
        num_rows=None if head.truncated else examples.n,
        num_frauds=None if head.truncated else int(examples.labels.sum()),
    )  # fmt: skip
    score_set.file.save(head.name, stored_file(scores), save=False)
    score_set.save()
    return score_set


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
