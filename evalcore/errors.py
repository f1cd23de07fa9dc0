"""Errors raised by the evaluation core."""

from __future__ import annotations


class EvalCoreError(Exception):
    """Base class for every error the evaluation core raises on purpose."""


class FormatError(EvalCoreError, ValueError):
    """A malformed input file: names the file, the 1-based line number and the reason."""

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")
