"""Deleting a run: the service of `monitoring.editing.services`, named for the API's callers."""

from __future__ import annotations

from monitoring.editing.services import item_delete
from monitoring.models import Run


def run_delete(*, run: Run) -> None:
    """Delete a run with its evaluations, the comparisons it took part in and its stored file."""
    item_delete(item=run)
