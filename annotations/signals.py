"""`qrels_build_done`: sent once a qrels build is done and committed (`QrelsBuild.on_done`), with the
build's id. What follows a new version outside the judging project (a linked team's runs re-scored on
it) listens here: `monitoring` connects its receiver in its AppConfig, and nothing here knows it."""

from __future__ import annotations

from django.dispatch import Signal

#: kwargs: build_id (int).
qrels_build_done = Signal()
