"""Builders for the evaluation service's tests: a team with an editor and a viewer, and small TREC files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import BytesIO
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from evalplatform.models import Team
from evalplatform.teams import team_create, team_member_set
from tests.conftest import THEO, Persona, make_user

VERA = Persona("vera", "vera-password-123", "team_member")  # a viewer
OTTO = Persona("otto", "otto-password-123", "team_member")  # a member of another team only


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def vera(db: None) -> User:
    return make_user(VERA)


@pytest.fixture
def otto(db: None) -> User:
    return make_user(OTTO)


@pytest.fixture
def team(theo: User, vera: User) -> Team:
    """The search team: theo edits, vera views."""
    team = team_create(slug="search", name="Search", creator=theo)
    team_member_set(team=team, user=vera, role="viewer")
    return team


@pytest.fixture
def other_team(otto: User) -> Team:
    return team_create(slug="fraud", name="Fraud", creator=otto)


def synthetic_collection(
    *, queries: int = 20, docs: int = 30, seed: int = 0, shuffle: bool = True
) -> tuple[str, Callable[[int, float], str]]:
    """TREC qrels text, and a function making a run's text for a seed and a quality (0 random, 1 ideal).

    Graded relevance 0-3; runs rank every judged document and some unjudged ones, with score ties.
    """
    rng = np.random.default_rng(seed)
    rels = rng.choice([0, 0, 1, 2, 3], size=(queries, docs))
    qrels = "".join(
        f"q{q} 0 d{q}-{d} {rels[q, d]}\n" for q in range(queries) for d in range(docs) if (q + d) % 4 != 0
    )

    def run(run_seed: int, quality: float, tag: str = "sys") -> str:
        local = np.random.default_rng(run_seed)
        lines = []
        for q in range(queries):
            scores = quality * rels[q] + local.normal(0, 1, docs)
            scores = np.round(scores, 1)  # ties
            lines += [f"q{q} Q0 d{q}-{d} 0 {scores[d]:.1f} {tag}" for d in range(docs)]
        if shuffle:
            local.shuffle(lines)
        return "\n".join(lines) + "\n"

    return qrels, run


def upload(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="text/plain")


def as_file(name: str, text: str) -> BytesIO:
    handle = BytesIO(text.encode())
    handle.name = name
    return handle


__all__ = ["OTTO", "THEO", "VERA", "as_file", "synthetic_collection", "upload"]


@contextmanager
def alerts_checked() -> Iterator[None]:
    """`with alerts_checked():` the values written inside are announced when it ends (a test's transaction
    never commits), and their series' alert rules checked in this process, as the worker's task would."""
    from django.test import TestCase

    from monitoring.alerts.services import alerts_checked_here

    with alerts_checked_here(), TestCase.captureOnCommitCallbacks(execute=True):
        yield
