"""The API's one write that no service offered yet: deleting a run (uploads and jobs go through
`monitoring.files.uploads` and `monitoring.evaluations.services`)."""

from __future__ import annotations

from functools import partial

from django.db import transaction

from monitoring.models import Comparison, Run


@transaction.atomic
def run_delete(*, run: Run) -> None:
    """Delete a run with its evaluations and the comparisons it took part in (they would be left with
    some of their rows gone), and its stored file once the deletion commits.

    A worker still computing one of those jobs finds its row gone when it stores, and discards its result.
    """
    Comparison.objects.filter(runs=run).delete()
    storage, name = run.file.storage, run.file.name
    run.delete()
    if name:
        transaction.on_commit(partial(storage.delete, name))
