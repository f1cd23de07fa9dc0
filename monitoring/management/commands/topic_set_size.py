"""`topic_set_size --team T --qrels Q` or `--scores FILE`: Sakai's topic set size design."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evalcore.reuse import DEFAULT_MIN_DIFFS, ReuseParams
from monitoring.reuse import cli, services


class Command(BaseCommand):
    help = (
        "Topic set size design (Sakai, IRJ 2016): the residual variance of a topic-by-system score matrix "
        "(two-way ANOVA without replication), then the topics needed to detect each --min-diff at --alpha "
        "with --power, by the paired t-test and by one-way ANOVA over the systems. The matrix comes from the "
        "runs evaluated on a team's qrels source (--team, --qrels, -m), or from --scores FILE: one row per "
        "topic, one whitespace-separated column per system (a first row or column that is not a number is "
        "taken as names and skipped)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_source_arguments(parser, required=False)
        parser.add_argument(
            "--scores", metavar="FILE", help="a per-topic score matrix instead of --team/--qrels"
        )
        parser.add_argument("-m", "--measure", default=ReuseParams.measure)
        parser.add_argument("--alpha", type=float, default=0.05)
        parser.add_argument("--power", type=float, default=0.8)
        parser.add_argument(
            "--min-diff", type=float, action="append", dest="min_diffs", metavar="D",
            help=f"a minimum difference to detect; repeat for several (default {', '.join(map(str, DEFAULT_MIN_DIFFS))})",
        )  # fmt: skip
        parser.add_argument("--systems", type=int, help="systems in the ANOVA (default: the matrix's)")
        parser.add_argument(
            "--method", choices=("exact", "sakai"), default="exact",
            help="exact noncentral t and F (default), or the normal approximations of Sakai's Excel tools",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        scores = self.matrix(options)
        context = services.planner(
            scores, min_diffs=tuple(options["min_diffs"] or DEFAULT_MIN_DIFFS), alpha=options["alpha"],
            power=options["power"], n_systems=options["systems"], method=options["method"],
        )  # fmt: skip
        planner = context["planner"]
        if planner is None:
            raise CommandError(context["planner_reason"])
        if options["json"]:
            self.stdout.write(cli.dump(planner))
            return
        self.stdout.write(
            f"variance {planner['variance']:.5f} from {planner['pilot_topics']} topics x {scores.shape[1]} systems; "
            f"alpha {planner['alpha']:g}, power {planner['power']:g}, ANOVA over {planner['n_systems']} systems"
        )
        self.stdout.write(f"{'minD':>6} {'t-test':>7} {'ANOVA':>7}")
        for row in planner["rows"]:
            self.stdout.write(f"{row['min_diff']:>6g} {row['ttest']:>7} {row['anova']:>7}")

    def matrix(self, options: dict[str, Any]) -> np.ndarray:
        if options["scores"]:
            return read_matrix(Path(options["scores"]))
        if not (options["team"] and options["qrels"]):
            raise CommandError("Give --scores FILE, or --team and --qrels.")
        source, runs = cli.source_and_runs(options["team"], options["qrels"])
        from monitoring.evaluations.services import read_qrels, read_run

        data = {run.label: read_run(run) for run in runs}
        topics = services.topic_matrix(read_qrels(source), data, measure=options["measure"], rel_level=1)
        return np.asarray(topics["scores"], dtype=np.float64)


def read_matrix(path: Path) -> np.ndarray:
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    rows = [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def number(text: str) -> bool:
        try:
            float(text)
        except ValueError:
            return False
        return True

    if rows and not all(number(v) for v in rows[0]):
        rows = rows[1:]
    if rows and not number(rows[0][0]):
        rows = [row[1:] for row in rows]
    try:
        matrix = np.array([[float(v) for v in row] for row in rows], dtype=np.float64)
    except ValueError as error:
        raise CommandError(f"{path}: {error}") from None
    if matrix.ndim != 2:
        raise CommandError(f"{path}: every row needs the same number of columns")
    return matrix
