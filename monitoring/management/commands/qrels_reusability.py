"""`qrels_reusability --team T --qrels Q`: the leave-one-run-out test of a team's qrels source."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evalcore.reuse import ReuseParams
from monitoring.reuse import cli, services


class Command(BaseCommand):
    help = (
        "Leave-one-run-out reusability (Zobel 1998; Buckley et al. 2007) of a team's qrels source: each run "
        "evaluated on it, and each group of runs sharing a tag, re-scored with the documents only it pooled "
        "(in its top --depth, in no other run's) unjudged; its full and left-out score, the drop and its rank "
        "shift, bpref and infAP beside the measure, and a verdict per run. Runs in this process."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_source_arguments(parser)
        parser.add_argument(
            "--depth", type=int, default=ReuseParams.depth, help="pool depth (default %(default)s)"
        )
        parser.add_argument(
            "-m", "--measure", default=ReuseParams.measure, help="main measure (default %(default)s)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source, runs = cli.source_and_runs(options["team"], options["qrels"])
        try:
            params = ReuseParams(depth=options["depth"], measure=options["measure"])
        except ValueError as error:
            raise CommandError(str(error)) from None
        result = services.reusability_compute(source, runs, params, cli.quiet)
        if options["json"]:
            self.stdout.write(cli.dump(result))
            return
        m = params.measure
        self.stdout.write(f"{source.name}: pool depth {params.depth}, {m}")
        self.stdout.write(
            f"{'run':<24} {'unique':>6} {'full':>7} {'left out':>8} {'drop':>7} {'rank':>9}  bpref  infAP"
        )
        for label, rows in (("", result["runs"]), ("group ", result["groups"])):
            for row in rows:
                name = (f"[{row['group']}] " if row["group"] else "") + row["run"]
                self.stdout.write(
                    f"{label}{name:<24} {row['unique']:>6} {cli.fmt(row['full'][m]):>7} {cli.fmt(row['left_out'][m]):>8} "
                    f"{cli.fmt(row['drop'][m]):>7} {row['rank_full']:>4}->{row['rank_left_out']:<4} "
                    f"{cli.fmt(row['full']['bpref'])} {cli.fmt(row['full']['infAP'])}"
                )
        for verdict in result["verdicts"]:
            self.stdout.write(f"{verdict['run']}: {verdict['text']}")
