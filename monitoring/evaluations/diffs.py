"""The leaderboard diff between two qrels sources of a team (typically consecutive versions of a judging
project's qrels): per measure and run, the old and new score with their CIs, the change, the old and new
rank and the rank change; per measure, Kendall's tau-b and tau_ap between the two system rankings.

Read from the two leaderboards (`selectors.leaderboard`: per run and measure, the newest done evaluation
that has the measure). Ranks are
competition ranks (1 + the runs strictly better by the measure's direction; a tie shares the better
rank) among the runs with a value on that board. The correlations take the runs with a value on both;
tau_ap (Yilmaz, Aslam and Robertson 2008) takes the new version's ranking as the truth, the old as the
estimate: a swap at the top of the new ranking costs more. Both are None where undefined (fewer than two
runs, or a ranking all tied). The only arithmetic is over one value per run and measure, already stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalcore.coverage import COVERAGE_MEASURES
from evalcore.stats import kendall_tau, tau_ap
from evalplatform.errors import InputError
from monitoring.evaluations.selectors import (
    Leaderboard,
    MeasureResult,
    leaderboard,
    measure_key,
    metric_spec,
)
from monitoring.models import QrelsSource, Run


@dataclass(frozen=True)
class DiffRow:
    run: Run
    old: MeasureResult | None
    new: MeasureResult | None
    old_rank: int | None
    new_rank: int | None

    @property
    def change(self) -> float | None:
        if self.old is None or self.new is None or self.old.value is None or self.new.value is None:
            return None
        return self.new.value - self.old.value

    @property
    def rank_change(self) -> int | None:
        """Places moved up (positive) or down (negative) from the old ranking to the new one."""
        if self.old_rank is None or self.new_rank is None:
            return None
        return self.old_rank - self.new_rank

    def as_dict(self) -> dict[str, Any]:
        def value(result: MeasureResult | None) -> dict[str, float | None] | None:
            return (
                None
                if result is None
                else {"value": result.value, "ci_low": result.ci_low, "ci_high": result.ci_high}
            )

        return {
            "run": {"id": self.run.pk, "name": self.run.name, "label": self.run.label},
            "old": value(self.old), "new": value(self.new), "change": self.change,
            "old_rank": self.old_rank, "new_rank": self.new_rank, "rank_change": self.rank_change,
        }  # fmt: skip


@dataclass(frozen=True)
class MeasureDiff:
    measure: str
    rows: list[DiffRow]  # by new rank, then old rank, then run name
    runs_compared: int  # runs with a value on both boards
    kendall_tau: float | None
    tau_ap: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "measure": self.measure, "runs_compared": self.runs_compared, "kendall_tau": self.kendall_tau,
            "tau_ap": self.tau_ap, "rows": [row.as_dict() for row in self.rows],
        }  # fmt: skip


@dataclass(frozen=True)
class LeaderboardDiff:
    old: QrelsSource
    new: QrelsSource
    measures: list[MeasureDiff]

    def as_dict(self) -> dict[str, Any]:
        def source(qrels: QrelsSource) -> dict[str, Any]:
            return {"id": qrels.pk, "name": qrels.name}

        return {
            "from": source(self.old),
            "to": source(self.new),
            "measures": [m.as_dict() for m in self.measures],
        }


def competition_ranks(values: dict[int, float], *, descending: bool) -> dict[int, int]:
    """1 + the number of strictly better values, per key.

    >>> competition_ranks({1: 0.5, 2: 0.7, 3: 0.5}, descending=True)
    {1: 2, 2: 1, 3: 2}
    """
    keys = list(values)
    scores = np.array([values[key] for key in keys], dtype=float) * (-1.0 if descending else 1.0)
    ranks = 1 + np.count_nonzero(scores[None, :] < scores[:, None], axis=1)
    return dict(zip(keys, ranks.tolist(), strict=True))


def _values(board: Leaderboard, measure: str) -> dict[int, float]:
    found = {}
    for row in board.rows:
        result = row.results.get(measure)
        if result is not None and result.value is not None:
            found[row.run.pk] = result.value
    return found


def measure_diff(old: Leaderboard, new: Leaderboard, measure: str) -> MeasureDiff:
    spec = metric_spec(measure)
    descending = spec.sort_descending() if spec else True
    old_values, new_values = _values(old, measure), _values(new, measure)
    old_ranks = competition_ranks(old_values, descending=descending)
    new_ranks = competition_ranks(new_values, descending=descending)
    runs: dict[int, Run] = {row.run.pk: row.run for row in (*old.rows, *new.rows)}
    old_rows = {row.run.pk: row for row in old.rows}
    new_rows = {row.run.pk: row for row in new.rows}
    rows = [
        DiffRow(
            run=run,
            old=old_rows[pk].results.get(measure) if pk in old_rows else None,
            new=new_rows[pk].results.get(measure) if pk in new_rows else None,
            old_rank=old_ranks.get(pk),
            new_rank=new_ranks.get(pk),
        )
        for pk, run in runs.items()
    ]
    big = len(runs) + 1
    rows.sort(key=lambda row: (row.new_rank or big, row.old_rank or big, row.run.name.lower(), row.run.pk))
    both = sorted(set(old_values) & set(new_values))
    a = [old_values[pk] for pk in both]
    b = [new_values[pk] for pk in both]
    if not descending:  # the correlations rank best first by higher values
        a, b = [-x for x in a], [-x for x in b]
    return MeasureDiff(
        measure=measure,
        rows=rows,
        runs_compared=len(both),
        kendall_tau=kendall_tau(a, b) if len(both) >= 2 else None,
        tau_ap=tau_ap(b, a) if len(both) >= 2 else None,
    )


def diff_measures(old: Leaderboard, new: Leaderboard) -> list[str]:
    """The measures a diff can show: those on both boards (in the new board's order), then coverage."""
    return [m for m in new.measures if m in old.measures] + list(COVERAGE_MEASURES)


def leaderboard_diff(
    *, old: QrelsSource, new: QrelsSource, measures: list[str] | None = None
) -> LeaderboardDiff:
    """The diff of the team's leaderboards on `old` and `new` for `measures` (by default every measure
    on both boards, then coverage). Raises `InputError` for a measure not on both boards."""
    old_board, new_board = leaderboard(qrels=old), leaderboard(qrels=new)
    available = diff_measures(old_board, new_board)
    chosen = list(dict.fromkeys(map(measure_key, measures))) if measures else available
    if unknown := [m for m in chosen if m not in available]:
        raise InputError(
            f"{', '.join(unknown)}: not on both leaderboards; choose among {', '.join(available)}."
        )
    return LeaderboardDiff(old=old, new=new, measures=[measure_diff(old_board, new_board, m) for m in chosen])
