"""The size limits every upload is held to, read from the settings in one place.

`UPLOAD_MAX_BYTES` bounds a file as it was uploaded (compressed or not), checked before any of it is read
or copied; `UPLOAD_MAX_DECOMPRESSED_BYTES` bounds what a gzipped file may expand to, checked by
`evalcore.textfiles` as it decompresses. Judging imports and the evaluation service's uploads (runs, qrels,
score sets, embedding snapshots) all ask here.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File

from evalcore.textfiles import byte_size


def upload_name(upload: Any, *, default: str = "upload") -> str:
    """The file name an upload (an UploadedFile or an open file) came with, without its folders."""
    return Path(getattr(upload, "name", None) or default).name


def upload_chunks(upload: Any) -> Iterator[bytes]:
    """The upload's bytes from the start, a chunk at a time."""
    if hasattr(upload, "chunks"):
        yield from upload.chunks()
        return
    upload.seek(0)
    while chunk := upload.read(1 << 20):
        yield chunk


def stored_file(upload: Any, *, default: str = "upload") -> Any:
    """What a FileField saves: an UploadedFile as it is, an open file rewound and wrapped in a File."""
    if hasattr(upload, "chunks"):
        return upload
    upload.seek(0)
    return File(upload, name=upload_name(upload, default=default))


def max_decompressed_bytes() -> int:
    return int(settings.UPLOAD_MAX_DECOMPRESSED_BYTES)


def upload_size(upload: Any) -> int | None:
    """The size of an uploaded file, an open file or a path, without reading it; None when it cannot tell."""
    if isinstance(upload, str | os.PathLike):
        return os.path.getsize(upload)
    size = getattr(upload, "size", None)
    if isinstance(size, int):
        return size
    try:
        return os.fstat(upload.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):
        return None


def upload_too_large(size: int | None) -> str | None:
    """Why a file of `size` bytes is refused (UPLOAD_MAX_BYTES), or None."""
    limit = int(settings.UPLOAD_MAX_BYTES)
    if size is None or size <= limit:
        return None
    given, most = byte_size(size), byte_size(limit)
    if given == most:  # rounded to the same figure
        given, most = f"{size:,} bytes", f"{limit:,} bytes"
    return f"{given} is more than the {most} an upload may be"
