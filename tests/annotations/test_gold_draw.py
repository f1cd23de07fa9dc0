"""The gold turn's seeded draw: Python's `selectors.gold_draw` and PostgreSQL's `annotations_gold_draw`
(migration 0017_answer_claim) give the same value for every seed and position, so that a claim made in one
call (`hotpath.answer_and_claim`) serves gold where the Python claim would; and the draws are uniform
enough to keep gold at its target share."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.selectors import gold_draw

SEEDS = st.integers(0, 2**62 - 1)  # `models.new_shuffle_seed`
POSITIONS = st.integers(0, 2**31 - 1)


@pytest.mark.django_db
@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(pairs=st.lists(st.tuples(SEEDS, POSITIONS), min_size=1, max_size=20))
def test_python_and_postgresql_draw_alike(pairs: list[tuple[int, int]]) -> None:
    seeds, positions = zip(*pairs, strict=True)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT annotations_gold_draw(s, p) FROM unnest(%s::bigint[], %s::bigint[]) WITH ORDINALITY "
            "u(s, p, n) ORDER BY n",
            [list(seeds), list(positions)],
        )
        drawn = [row[0] for row in cursor.fetchall()]
    assert drawn == [gold_draw(seed, position) for seed, position in pairs]


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**62 - 1])
def test_draws_are_uniform_over_a_queue(seed: int) -> None:
    draws = np.array([gold_draw(seed, position) for position in range(20_000)])
    assert draws.min() >= 0 and draws.max() < 1
    # The share under the default target (0.125) and the deciles, each within 1.5 points of uniform.
    assert abs((draws < 0.125).mean() - 0.125) < 0.015
    counts, _ = np.histogram(draws, bins=10, range=(0, 1))
    assert np.all(np.abs(counts / draws.size - 0.1) < 0.015)
    # Neighbouring positions are not correlated (the gold is not bunched).
    assert abs(np.corrcoef(draws[:-1], draws[1:])[0, 1]) < 0.03
