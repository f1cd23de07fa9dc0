"""`annotator_sensitivity --team T --qrels Q`: how much a build's annotators decide the ranking."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evalcore.reuse import SensitivityParams
from monitoring.reuse import cli, services


class Command(BaseCommand):
    help = (
        "Annotator sensitivity (Voorhees 2000) of a team's qrels source built from a judging project: the "
        "runs evaluated on it re-scored under bootstrap resamples of each pair's labels (re-aggregated as "
        "the build did) and under each annotator's labels alone where they cover --min-coverage of the "
        "pairs; Kendall's tau against the published ranking (mean and interval) and each pair's swap rate. "
        "Runs in this process (the web page runs it as a job)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_source_arguments(parser)
        defaults = SensitivityParams()
        parser.add_argument("--resamples", type=int, default=defaults.n_resamples)
        parser.add_argument("--seed", type=int, default=defaults.seed)
        parser.add_argument("--min-coverage", type=float, default=defaults.min_coverage)
        parser.add_argument("-m", "--measure", default=defaults.measure)

    def handle(self, *args: Any, **options: Any) -> None:
        source, runs = cli.source_and_runs(options["team"], options["qrels"])
        if source.build is None:
            raise CommandError("Annotator sensitivity needs qrels built from a judging project.")
        try:
            params = SensitivityParams(
                n_resamples=options["resamples"], seed=options["seed"], min_coverage=options["min_coverage"],
                measure=options["measure"], aggregation=source.build.aggregation,
            )  # fmt: skip
        except ValueError as error:
            raise CommandError(str(error)) from None
        result = services.sensitivity_compute(source, runs, params, cli.quiet)
        if options["json"]:
            self.stdout.write(cli.dump(result))
            return
        interval = result["tau_interval"] or [None, None]
        self.stdout.write(
            f"{source.name}: {params.n_resamples} resamples, Kendall's tau mean {cli.fmt(result['tau_mean'], 3)}, "
            f"{100 * params.confidence:g}% interval [{cli.fmt(interval[0], 3)}, {cli.fmt(interval[1], 3)}]"
        )
        for annotator in result["annotators"]:
            self.stdout.write(
                f"  {annotator['annotator']} alone (covers {100 * annotator['coverage']:.0f}%): tau {cli.fmt(annotator['tau'], 3)}"
            )
        for pair in result["swaps"]:
            self.stdout.write(
                f"  {pair['run_a']} / {pair['run_b']}: swapped in {100 * pair['swap_rate']:.1f}%"
            )
