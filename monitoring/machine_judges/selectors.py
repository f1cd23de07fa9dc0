"""What a leaderboard shows of a machine judge: the project's judges, the chosen one's newest job and its
done results, and whether they are stale (the judge's labels or the leaderboard's evaluations changed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotations.models import MachineJudge
from evalplatform.jobs import JobStatus
from monitoring.evaluations.selectors import LeaderboardRow
from monitoring.machine_judges.models import MachineJudgeEvaluation
from monitoring.machine_judges.services import board_evaluation_ids, state_fingerprint
from monitoring.models import QrelsSource

#: `?judge=` with this value shows no machine judge (no value: the judge of the board's newest job).
NO_JUDGE = "none"

ESTIMATES = ("human_only", "machine_only", "ppi", "ppi_plus_plus")


@dataclass
class JudgeBoard:
    """A leaderboard's machine-judge block: `judges` of the qrels' project, the `judge` chosen (None:
    none), its newest job (`job`, any status) and newest done one (`done`, whose results are shown)."""

    judges: list[MachineJudge] = field(default_factory=list)
    judge: MachineJudge | None = None
    job: MachineJudgeEvaluation | None = None
    done: MachineJudgeEvaluation | None = None
    stale: bool = False

    @property
    def judge_ref(self) -> dict[str, Any] | None:
        return {"id": self.judge.pk, "name": str(self.judge)} if self.judge else None

    @property
    def param(self) -> str:
        """The `?judge=` value that keeps this choice in a URL."""
        return str(self.judge.pk) if self.judge else (NO_JUDGE if self.judges else "")

    def estimates(self, row: LeaderboardRow, measure: str) -> dict[str, Any] | None:
        """The run's estimates of `measure` (None: no done job, or the run or measure is not in it)."""
        if self.done is None:
            return None
        found: dict[str, Any] | None = self.done.estimates_of(row.run.pk).get(measure)
        return found

    def cells(self, row: LeaderboardRow, measure: str) -> list[dict[str, Any] | None]:
        """Human only, machine only, PPI and PPI++ of the run's `measure`, in `ESTIMATES` order."""
        found = self.estimates(row, measure)
        return [found[name] if found else None for name in ESTIMATES]


def judge_board(*, qrels: QrelsSource, asked: str | None, rows: list[LeaderboardRow]) -> JudgeBoard:
    """The block for `?judge=asked`: a judge's id, `NO_JUDGE`, or None (the judge of the board's newest
    done job). Three queries at most: the judges, the jobs, the state of the labels."""
    if qrels.build is None:
        return JudgeBoard()
    judges = list(MachineJudge.objects.filter(project_id=qrels.build.project_id).order_by("name", "version"))
    by_id = {str(judge.pk): judge for judge in judges}
    jobs = MachineJudgeEvaluation.objects.filter(qrels=qrels).order_by("-created_at", "-pk")
    if asked is None:
        newest = jobs.filter(status=JobStatus.DONE).values_list("judge_id", flat=True).first()
        asked = str(newest) if newest is not None else NO_JUDGE
    judge = by_id.get(asked)
    if judge is None:
        return JudgeBoard(judges)
    mine = list(jobs.filter(judge=judge)[:10])
    done = next((job for job in mine if job.status == JobStatus.DONE), None)
    if done is None and mine and len(mine) == 10:  # many unfinished or failed ones since the last done
        done = jobs.filter(judge=judge, status=JobStatus.DONE).first()
    stale = done is not None and done.fingerprint != state_fingerprint(
        judge=judge, evaluation_ids=board_evaluation_ids(rows)
    )
    return JudgeBoard(judges, judge, mine[0] if mine else None, done, stale)
