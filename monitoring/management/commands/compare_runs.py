"""`compare_runs`: per-run means with bootstrap CIs, paired significance tests between runs, and the
statistics of many systems (two-way ANOVA and Tukey's HSD with three or more runs, discriminative power),
as a comparison's page shows them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from evalcore.comparison import (
    CORRECTIONS,
    TESTS,
    Comparison,
    ComparisonParams,
    align_results,
    compare_scores,
    mean_rule,
    measure_summary,
    paired_rule,
)
from evalcore.comparison_extras import many_systems_json
from evalcore.errors import EvalCoreError
from evalcore.retrieval import evaluate
from evalcore.stats import DEFAULT_BOOTSTRAP, BootstrapOptions
from monitoring.common import cli


class Program(cli.FileCommand):
    help = (
        "Compare two or more runs on the same qrels: each run's mean with a bootstrap confidence interval, "
        "and for every pair the difference, the p-value of a paired test and its corrected significance. "
        "The t-test (default) and the randomization test are the ones the IR literature recommends for "
        "differences in means (Smucker et al., CIKM 2007). Each run's mean and interval follow trec_eval's "
        "rule, as eval_retrieval and the web: the qrels queries the run answered (with -c, every qrels query, "
        "a missing one as 0). The paired tests run on the queries any run answered (with -c, every qrels "
        "query), a run's missing ones as 0; the output says how many queries each figure averages over. "
        "Then, per measure, the statistics of many systems over the same queries, as the web's comparison: "
        "a two-way ANOVA (runs and topics) and Tukey's HSD with three or more runs, and discriminative "
        "power (Sakai's paired bootstrap test at --alpha, 1,000 resamples, seed 0)."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--qrels", required=True, metavar="FILE")
        parser.add_argument(
            "--run",
            action="append",
            required=True,
            dest="runs",
            metavar="FILE",
            help="a run; give two or more",
        )
        parser.add_argument(
            "-m", "--measure", action="append", required=True, dest="measures", metavar="MEASURE"
        )
        defaults = ComparisonParams()
        parser.add_argument("--test", choices=TESTS, default=defaults.test)
        parser.add_argument(
            "--correction",
            choices=CORRECTIONS,
            default=defaults.correction,
            help=f"multiple-comparison correction over all pairs and measures (default {defaults.correction})",
        )
        parser.add_argument("--alpha", type=float, default=defaults.alpha)
        parser.add_argument(
            "--confidence",
            type=float,
            default=DEFAULT_BOOTSTRAP.confidence,
            help="bootstrap CI level (default 0.95)",
        )
        parser.add_argument(
            "--resamples",
            type=int,
            default=DEFAULT_BOOTSTRAP.n_resamples,
            help=f"bootstrap resamples (default {DEFAULT_BOOTSTRAP.n_resamples}, as the web's)",
        )
        parser.add_argument(
            "--seed",
            type=int,
            default=DEFAULT_BOOTSTRAP.seed,
            help="seed of the bootstrap and randomization test (default 0, as the web's)",
        )
        cli.add_input_options(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        names = [Path(path).name for path in options["runs"]]
        if len(names) < 2:
            raise cli.CommandError("give at least two runs (--run A --run B)")
        if len(set(names)) != len(names):
            raise cli.CommandError(f"runs are named by their file names, which must differ: {names}")
        paths = [options["qrels"], *options["runs"]]
        reading = {"on_duplicate": options["on_duplicate"], "strict": options["strict"]}
        with cli.progress(paths, stages=len(paths) + 1) as bar:
            qrels = cli.read_qrels(options["qrels"], fmt=options["qrels_format"], **reading)
            bar.update()
            results, reported = {}, {}
            for name, path in zip(names, options["runs"], strict=True):
                bar.set_description(name)
                run = cli.read_run(path, fmt=options["run_format"], **reading)
                try:
                    # complete=True aligns the runs for the paired tests; the means follow -c or not.
                    results[name] = evaluate(
                        qrels, run, options["measures"], rel_level=options["level"], complete=True
                    )
                    reported[name] = (
                        results[name]
                        if options["complete"]
                        else evaluate(qrels, run, options["measures"], rel_level=options["level"])
                    )
                except EvalCoreError as exc:
                    raise cli.CommandError(f"{path}: {exc}") from exc
                bar.update()
            # Text measures (runid, relstring) have nothing to test; `specs` holds the numeric ones.
            keys = [spec.key for spec in next(iter(results.values())).specs]
            if not keys:
                raise cli.CommandError("give at least one numeric measure to compare")
            bar.set_description("testing")
            try:
                _, scores = align_results(results, keys, complete=options["complete"])
                bootstrap = BootstrapOptions(
                    n_resamples=options["resamples"], confidence=options["confidence"], seed=options["seed"]
                )
                comparison = compare_scores(
                    scores,
                    test=options["test"],
                    correction=options["correction"],
                    alpha=options["alpha"],
                    confidence=options["confidence"],
                    n_resamples=options["resamples"],
                    seed=options["seed"],
                    runs={
                        name: {key: measure_summary(result, key, bootstrap=bootstrap) for key in keys}
                        for name, result in reported.items()
                    },
                    means_over=mean_rule(complete=options["complete"]),
                    pairs_over=paired_rule(complete=options["complete"]),
                )
            except EvalCoreError as exc:
                raise cli.CommandError(str(exc)) from exc
            many = {
                key: named_runs(
                    many_systems_json(
                        np.array([scores[name][key] for name in names]),
                        range(len(names)),
                        alpha=options["alpha"],
                        confidence=options["confidence"],
                    ),
                    names,
                )
                for key in keys
            }
            bar.update()
        if options["json"]:
            self.stdout.write(cli.dump_json({**comparison.as_dict(), "many_systems": many}))
        else:
            self.stdout.write(format_comparison(comparison) + format_many_systems(many), ending="")


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def format_comparison(comparison: Comparison) -> str:
    confidence = f"{comparison.confidence:.0%}"
    lines = [
        f"means over {comparison.means_over}, with {confidence} bootstrap confidence intervals",
        "",
        f"{'run':<28} {'measure':<16} {'mean':>8}  {confidence + ' CI':>19} {'queries':>8}",
    ]
    for name, measures in comparison.runs.items():
        for measure, summary in measures.items():
            interval = (
                "-" if summary.ci_low != summary.ci_low else f"[{summary.ci_low:.4f}, {summary.ci_high:.4f}]"
            )
            lines.append(
                f"{name:<28} {measure:<16} {summary.mean:>8.4f}  {interval:>19} {summary.n_queries:>8}"
            )
    lines += [
        "",
        f"paired {comparison.test} test, {comparison.correction} correction, alpha {comparison.alpha}, "
        f"over {comparison.n_queries} queries: {comparison.pairs_over}",
        f"{'a':<24} {'b':<24} {'measure':<16} {'diff':>8} {'p':>9} {'p_adj':>9}  sig",
    ]
    for pair in comparison.pairs:
        mark = "*" if pair.significant else ""
        lines.append(
            f"{pair.a:<24} {pair.b:<24} {pair.measure:<16} {pair.diff:>+8.4f} {pair.p_value:>9.4g} "
            f"{pair.p_adjusted:>9.4g}  {mark}"
        )
    return "\n".join(lines) + "\n"


def named_runs(figures: Any, names: list[str]) -> Any:
    """`many_systems_json`'s figures with each run's index (`run_a_id`, `run_b_id`) replaced by its name
    (`run_a`, `run_b`), as the paired tests name them."""
    if isinstance(figures, list):
        return [named_runs(item, names) for item in figures]
    if not isinstance(figures, dict):
        return figures
    renamed = {}
    for key, value in figures.items():
        if key in ("run_a_id", "run_b_id"):
            renamed[key.removesuffix("_id")] = names[value]
        else:
            renamed[key] = named_runs(value, names)
    return renamed


def _figure(value: float | None, spec: str = ".4f") -> str:
    return "-" if value is None else format(value, spec)


def format_many_systems(many: dict[str, dict[str, Any]]) -> str:
    lines: list[str] = []
    for measure, stats in many.items():
        lines += ["", f"statistics of many systems, {measure}"]
        anova, tukey, power = stats["anova"], stats["tukey"], stats["discriminative_power"]
        if anova is not None:
            lines.append(f"{'two-way ANOVA':<16} {'sum sq':>10} {'df':>6} {'mean sq':>10} {'F':>9} {'p':>9}")
            for effect in ("systems", "topics", "residual"):
                row = anova[effect]
                lines.append(
                    f"{effect:<16} {_figure(row['sum_sq']):>10} {row['df']:>6} {_figure(row['mean_sq']):>10} "
                    f"{_figure(row['f'], '.3f'):>9} {_figure(row['p_value'], '.4g'):>9}"
                )
        if tukey is not None:
            level = f"{tukey['confidence']:.0%}"
            lines.append(f"Tukey's HSD ({tukey['design']}, {level} intervals, df {tukey['df']})")
            lines.append(f"{'a':<24} {'b':<24} {'diff':>8} {level + ' interval':>20} {'p':>9}  sig")
            for pair in tukey["pairs"]:
                interval = f"[{_figure(pair['lower'])}, {_figure(pair['upper'])}]"
                mark = "*" if pair["significant"] else ""
                lines.append(
                    f"{pair['run_a']:<24} {pair['run_b']:<24} {_figure(pair['mean_difference'], '+.4f'):>8} "
                    f"{interval:>20} {_figure(pair['p_value'], '.4g'):>9}  {mark}"
                )
        if power is not None:
            lines.append(
                f"discriminative power ({power['test']} test, alpha {power['alpha']}, {power['n_resamples']} "
                f"resamples): {power['significant']} of {power['pairs']} pairs significant "
                f"({_figure(power['share'], '.0%')}), smallest significant difference "
                f"{_figure(power['min_significant_difference'])}"
            )
        lines += [f"note: {note}" for note in stats["notes"]]
    return "\n".join(lines) + "\n"
