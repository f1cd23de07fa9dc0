"""`eval_embeddings`: quality and collapse of a reference embedding set, and drift to a current one."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from evalcore.embeddings import MonitorParams
from evalcore.errors import EvalCoreError
from evalcore.jsonable import json_number
from monitoring.common import cli

if TYPE_CHECKING:
    from evalcore.embeddings import EmbeddingReport

#: Metrics printed as whole numbers.
INTEGER_METRICS = {"dead_dims"}


class Program(cli.FileCommand):
    help = (
        "Embedding monitors on .npy files of shape (rows, dim): partition isotropy, effective "
        "dimensionality, top-10/50 variance share, average cosine, uniformity, dead dimensions, "
        "effective and stable rank of the reference (and of --current); with --current also drift: "
        "MMD² with a permutation p-value, mean-embedding cosine distance, share of drifted dimensions "
        "and a domain classifier's ROC-AUC, and the default alert rules. Files are streamed in chunks, "
        "so any number of rows fits in memory."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        defaults = MonitorParams()
        parser.add_argument("--reference", required=True, metavar="FILE", help="reference embeddings (.npy)")
        parser.add_argument("--current", metavar="FILE", help="current embeddings (.npy), for drift")
        parser.add_argument(
            "--device",
            choices=("auto", "cpu", "cuda"),
            default="auto",
            help="where to compute (default: auto, CUDA when available, else the CPU)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
        parser.add_argument(
            "--sample-size",
            type=int,
            default=defaults.sample_size,
            metavar="N",
            help=f"rows sampled per file (seeded) for uniformity and drift tests (default {defaults.sample_size})",
        )
        parser.add_argument(
            "--mmd-sample-size",
            type=int,
            default=defaults.mmd_sample_size,
            metavar="N",
            help=f"rows a side for the MMD test (default {defaults.mmd_sample_size})",
        )
        parser.add_argument(
            "--permutations",
            type=int,
            default=defaults.n_permutations,
            metavar="P",
            help=f"permutations of the MMD test (default {defaults.n_permutations})",
        )
        parser.add_argument(
            "--dimension-test",
            choices=("ks", "psi"),
            default=defaults.dimension_test,
            help="per-dimension drift test: KS with Benjamini-Hochberg, or PSI (default ks)",
        )
        parser.add_argument(
            "--dead-threshold",
            type=float,
            default=defaults.dead_threshold,
            metavar="X",
            help="a coordinate is dead when its variance is below X times the mean coordinate variance "
            f"(default {defaults.dead_threshold})",
        )
        parser.add_argument(
            "--absolute-dead-threshold",
            action="store_true",
            help="compare the variance with X itself, as seed 004 does (depends on the embeddings' scale)",
        )
        parser.add_argument("--seed", type=int, default=defaults.seed, help="sampling seed (default 0)")
        parser.add_argument(
            "--chunk-rows",
            type=int,
            default=defaults.chunk_rows,
            metavar="N",
            help=f"rows read at a time (default {defaults.chunk_rows})",
        )

    def handle(self, **options: Any) -> None:
        paths = [options["reference"]] + ([options["current"]] if options["current"] else [])
        for path in paths:
            cli.require_file(path)
        try:
            params = MonitorParams(
                sample_size=options["sample_size"],
                mmd_sample_size=options["mmd_sample_size"],
                n_permutations=options["permutations"],
                dimension_test=options["dimension_test"],
                dead_threshold=options["dead_threshold"],
                dead_relative=not options["absolute_dead_threshold"],
                seed=options["seed"],
                chunk_rows=options["chunk_rows"],
            )
            report = self._evaluate(paths, params, options["device"])
        except (EvalCoreError, OSError) as exc:
            raise cli.CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(cli.dump_json(as_json(report)))
        else:
            self.stdout.write(format_text(report), ending="")

    def _evaluate(self, paths: list[str], params: MonitorParams, device: str) -> EmbeddingReport:
        # torch loads here, not at import: `manage.py help` and the web process never pay for it.
        from evalcore.embeddings import evaluate_embeddings, open_npy

        files = [open_npy(path) for path in paths]
        show = sys.stderr.isatty() and sum(f.nbytes for f in files) >= cli.PROGRESS_MIN_BYTES
        total = sum(f.rows for f in files)
        with tqdm(total=total, file=sys.stderr, disable=not show, unit="rows", leave=False) as bar:
            bar.set_description("reading")
            report = evaluate_embeddings(
                files[0],
                files[1] if len(files) > 1 else None,
                params=params,
                device=device,
                progress=bar.update,
            )
        return report


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def _values(values: dict[str, float]) -> dict[str, float | int | None]:
    return {name: json_number(value, integer=name in INTEGER_METRICS) for name, value in values.items()}


def _alerts(report: EmbeddingReport) -> list[dict[str, Any]]:
    alerts = []
    for section, firing in report.alerts():
        entry = firing.to_dict()
        for key in ("value", "threshold", "effect_value", "effect_threshold"):
            if isinstance(entry.get(key), float):
                entry[key] = json_number(entry[key])
        entry["section"] = section
        alerts.append(entry)
    return alerts


def as_json(report: EmbeddingReport) -> dict[str, Any]:
    data: dict[str, Any] = {name: _values(values) for name, values in report.sections().items()}
    data["alerts"] = _alerts(report)
    return data


def format_text(report: EmbeddingReport) -> str:
    lines = []
    for section, values in report.sections().items():
        lines.append(f"{section}:")
        for name, value in values.items():
            shown = f"{value:.0f}" if name in INTEGER_METRICS and value == value else f"{value:.6g}"
            lines.append(f"  {name:<24}{shown}")
    if report.calibration is not None:
        lines.append("effect thresholds (reference-versus-reference splits):")
        for name, value in report.calibration.thresholds.items():
            lines.append(f"  {name:<24}{value:.6g}")
    alerts = report.alerts()
    lines.append(f"alerts: {len(alerts) or 'none'}")
    for section, firing in alerts:
        effect = (
            f" and {firing.effect_metric} {firing.effect_value:.4g} > {firing.effect_threshold:.4g}"
            if firing.effect_metric is not None
            else ""
        )
        lines.append(
            f"  [{firing.severity}] {section}: {firing.rule}: {firing.metric} "
            f"{firing.value:.4g} {firing.comparator} {firing.threshold:g}{effect}"
        )
    return "\n".join(lines) + "\n"
