"""Every model change has its migration: `makemigrations --check` finds nothing to write (a field added to a
model without one would reach a database that lacks its column)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_lacks_a_migration() -> None:
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exit_:
        pytest.fail(f"makemigrations would write migrations (exit {exit_.code}):\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()
