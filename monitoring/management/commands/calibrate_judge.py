"""`calibrate_judge`: a machine judge's labels against people's, on the pairs both graded."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalCoreError
from evalcore.jsonable import json_number, json_numbers
from monitoring.common import cli

if TYPE_CHECKING:
    from evalcore.machine_judges import JudgeCalibration, MachineLabels, RankingAgreement
    from evalcore.retrieval import Qrels


class Program(cli.FileCommand):
    help = (
        "Calibrate a machine judge (an LLM grader, a click model) against human labels, on the (query, "
        "document) pairs both graded: Cohen's kappa (unweighted, linear, quadratic), Krippendorff's "
        "alpha (ordinal), the confusion matrix of human by machine grade, the bias (mean machine minus "
        "human grade) overall, per human grade and per topic. With --run, also Kendall's tau between the "
        "rankings of the runs on the machine's and on the humans' labels."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--human", required=True, metavar="FILE", help="human qrels: qid iter docno grade"
        )
        parser.add_argument(
            "--machine",
            required=True,
            metavar="FILE",
            help="the machine's labels: TREC qrels, or JSON Lines with qid, doc_id, label and optional "
            "confidence and rationale (told apart by content)",
        )
        parser.add_argument(
            "--run",
            action="append",
            dest="runs",
            default=[],
            metavar="FILE",
            help="a run to rank on both judges' labels; repeat for each (two or more give a tau)",
        )
        parser.add_argument(
            "-m",
            "--measure",
            default="ndcg_cut_10",
            metavar="MEASURE",
            help="the measure that ranks the runs (default ndcg_cut_10)",
        )
        parser.add_argument(
            "-l",
            "--level",
            type=int,
            default=1,
            metavar="LEVEL",
            help="relevance level of binary measures for --run (trec_eval -l; default 1)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        from evalcore.machine_judges import calibrate_judge, pair_labels, ranking_agreement

        human = cli.read_qrels(options["human"], fmt=None, on_duplicate="error")
        machine = read_machine(options["machine"])
        runs = [cli.read_run(path, fmt=None, on_duplicate="error") for path in options["runs"]]
        pairs = pair_labels(human, machine.qrels)
        if not len(pairs):
            raise cli.CommandError(
                f"{options['human']} and {options['machine']} share no graded (query, document) pair"
            )
        ranking = None
        try:
            confidence = machine.confidence[pairs.machine_rows]
            report = calibrate_judge(
                pairs.human,
                pairs.machine,
                topics=pairs.topic_codes,
                topic_ids=pairs.topic_ids,
                confidence=confidence,
            )
            if runs:
                names = [
                    run.run_id or Path(path).name for run, path in zip(runs, options["runs"], strict=True)
                ]
                ranking = ranking_agreement(
                    runs, human, machine.qrels, measure=options["measure"], rel_level=options["level"],
                    names=names if len(set(names)) == len(names) else options["runs"],
                )  # fmt: skip
        except (EvalCoreError, ValueError) as exc:
            raise cli.CommandError(str(exc)) from exc
        coverage = {"human_only_pairs": _graded(human) - len(pairs), "machine_only_pairs": _graded(machine.qrels) - len(pairs)}  # fmt: skip
        if options["json"]:
            self.stdout.write(cli.dump_json(as_json(report, ranking, **coverage)))
        else:
            self.stdout.write(as_text(report, ranking, **coverage), ending="")


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def read_machine(path: str) -> MachineLabels:
    """A machine judge's labels, a malformed file being the command's one-line error."""
    from evalcore.machine_judges import read_machine_labels

    try:
        return read_machine_labels(cli.require_file(path))
    except (EvalCoreError, UnicodeDecodeError) as exc:
        raise cli.CommandError(str(exc)) from exc
    except OSError as exc:
        raise cli.CommandError(f"{path}: {exc.strerror or exc}") from exc


def _graded(qrels: Qrels) -> int:
    return int((qrels.rels >= 0).sum())


def as_json(report: JudgeCalibration, ranking: RankingAgreement | None, **coverage: int) -> dict[str, object]:
    """The figures as one object (`evalcore.machine_judges.calibration_json`), with the ranking agreement
    when runs were given; undefined figures are null."""
    from evalcore.machine_judges import calibration_json

    data = calibration_json(report, **coverage)
    if ranking is not None:
        data["ranking"] = {
            "measure": ranking.measure,
            "topics": ranking.topics,
            "kendall_tau": json_number(ranking.kendall_tau),
            "tau_ap": json_number(ranking.tau_ap),
            "runs": [
                {"name": name, "human": h, "machine": m}
                for name, h, m in zip(
                    ranking.names, json_numbers(ranking.human_scores), json_numbers(ranking.machine_scores),
                    strict=True,
                )
            ],
        }  # fmt: skip
    return data


def _number(value: float | None, spec: str = ".4f") -> str:
    number = json_number(value)
    return "-" if number is None else format(number, spec)


def _grade(value: float) -> str:
    return f"{value:g}"


def as_text(report: JudgeCalibration, ranking: RankingAgreement | None, **coverage: int) -> str:
    lines = [
        f"pairs graded by both: {report.pairs} (human only: {coverage['human_only_pairs']}, "
        f"machine only: {coverage['machine_only_pairs']})",
        f"  exact agreement                 {_number(report.exact_agreement)}",
        f"  Cohen's kappa                   {_number(report.cohen_kappa)}",
        f"  Cohen's kappa, linear weights   {_number(report.cohen_kappa_linear)}",
        f"  Cohen's kappa, quadratic        {_number(report.cohen_kappa_quadratic)}",
        f"  Krippendorff's alpha, ordinal   {_number(report.krippendorff_alpha_ordinal)}",
        f"  bias (machine - human grade)    {_number(report.bias, '+.4f')}  {report.leaning}",
        "",
        "confusion (rows: human grade, columns: machine grade)",
    ]
    grades = [_grade(g) for g in report.grades]
    width = max(6, *(len(g) + 1 for g in grades), *(len(str(c)) + 1 for c in report.confusion.ravel()))
    lines.append("human\\machine" + "".join(f"{g:>{width}}" for g in grades))
    lines.extend(f"{g:<13}" + "".join(f"{c:>{width}}" for c in row) for g, row in zip(grades, report.confusion.tolist(), strict=True))  # fmt: skip
    per = report.per_grade
    lines += ["", "per human grade", f"{'grade':<8}{'pairs':>8}{'machine':>10}{'bias':>9}{'stricter':>10}{'agreeing':>10}{'lenient':>9}"]  # fmt: skip
    for i, g in enumerate(grades):
        lines.append(
            f"{g:<8}{per.pairs[i]:>8}{_number(per.mean_machine[i], '.3f'):>10}{_number(per.bias[i], '+.3f'):>9}"
            f"{_number(per.stricter[i], '.3f'):>10}{_number(per.agreeing[i], '.3f'):>10}{_number(per.lenient[i], '.3f'):>9}"
        )  # fmt: skip
    topic = report.per_topic
    if topic is not None:
        wide = max(8, *(len(str(t)) + 2 for t in topic.topics))
        lines += [
            "",
            "per topic",
            f"{'topic':<{wide}}{'pairs':>7}{'exact':>8}{'kappa':>8}{'kappa_q':>9}{'bias':>8}",
        ]
        for i, t in enumerate(topic.topics.tolist()):
            lines.append(
                f"{t!s:<{wide}}{topic.pairs[i]:>7}{_number(topic.exact_agreement[i], '.3f'):>8}"
                f"{_number(topic.cohen_kappa[i], '.3f'):>8}{_number(topic.cohen_kappa_quadratic[i], '.3f'):>9}"
                f"{_number(topic.bias[i], '+.3f'):>8}"
            )  # fmt: skip
    bands = report.per_confidence
    if bands is not None:
        lines += ["", "per band of the machine's confidence", f"{'confidence':<12}{'pairs':>7}{'mean':>8}{'exact':>8}{'|error|':>9}"]  # fmt: skip
        for i in range(bands.pairs.size):
            closing = "]" if i == bands.pairs.size - 1 else ")"
            lines.append(
                f"{f'[{bands.edges[i]:.1f}, {bands.edges[i + 1]:.1f}{closing}':<12}{bands.pairs[i]:>7}"
                f"{_number(bands.mean_confidence[i], '.3f'):>8}{_number(bands.exact_agreement[i], '.3f'):>8}"
                f"{_number(bands.mean_abs_error[i], '.3f'):>9}"
            )  # fmt: skip
    if ranking is not None:
        lines += [
            "",
            f"{len(ranking.names)} runs ranked by {ranking.measure} on the {ranking.topics} topics both judged: "
            f"Kendall's tau {_number(ranking.kendall_tau)}, tau_AP {_number(ranking.tau_ap)}",
        ]
        wide = max(8, *(len(n) + 2 for n in ranking.names))
        lines.append(f"{'run':<{wide}}{'human':>9}{'machine':>9}")
        order = sorted(range(len(ranking.names)), key=lambda i: -ranking.human_scores[i])
        lines.extend(
            f"{ranking.names[i]:<{wide}}{_number(ranking.human_scores[i]):>9}{_number(ranking.machine_scores[i]):>9}"
            for i in order
        )
    return "\n".join(lines) + "\n"
