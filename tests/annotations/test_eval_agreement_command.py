"""Tests for `manage.py eval_agreement`: JSON and text output, levels, and bad rows named by line.

These run the command in-process with call_command; no database is touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError, call_command, load_command_class

from evalcore.agreement import Level, LongLabels, cohen_kappa_matrix, fleiss_kappa

ROOT = Path(__file__).resolve().parents[2]

KEYS = [
    "n_items",
    "n_annotators",
    "n_labels",
    "exact_agreement",
    "pairwise_agreement",
    "fleiss_kappa",
    "krippendorff_alpha",
    "cohen_kappa",
]
# Krippendorff (2011): 4 coders x 12 units, with missing labels.
RELIABILITY_DATA = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
CODERS = ["ann", "bob", "cyd", "dee"]


def write_csv(path: Path, rows: list[str], header: str = "item,annotator,label") -> Path:
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def run(*args: str) -> str:
    out = StringIO()
    call_command("eval_agreement", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def krippendorff_csv(tmp_path: Path) -> Path:
    rows = [
        f"unit{unit:02d},{CODERS[coder]},{value}"
        for coder, values in enumerate(RELIABILITY_DATA)
        for unit, value in enumerate(values)
        if value is not None
    ]
    return write_csv(tmp_path / "reliability.csv", rows)


def reliability_matrix() -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in RELIABILITY_DATA], dtype=float)


def test_it_prints_exactly_the_contract_keys(krippendorff_csv: Path) -> None:
    result = json.loads(run("--annotations", str(krippendorff_csv), "--json"))
    assert list(result) == KEYS
    assert (result["n_items"], result["n_annotators"], result["n_labels"]) == (12, 4, 41)
    assert list(result["cohen_kappa"]) == ["annotators", "unweighted", "linear", "quadratic"]
    assert result["cohen_kappa"]["annotators"] == CODERS


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_it_computes_alpha_at_the_requested_level(
    krippendorff_csv: Path, level: Level, published: float
) -> None:
    result = json.loads(run("--annotations", str(krippendorff_csv), "--level", level, "--json"))
    expected = krippendorff.alpha(reliability_data=reliability_matrix(), level_of_measurement=level)
    assert result["krippendorff_alpha"] == pytest.approx(expected, abs=1e-9)
    assert round(result["krippendorff_alpha"], 3) == published


def test_it_defaults_to_the_ordinal_level(krippendorff_csv: Path) -> None:
    result = json.loads(run("--annotations", str(krippendorff_csv), "--json"))
    assert round(result["krippendorff_alpha"], 3) == 0.815


def test_it_agrees_with_evalcore_on_every_figure(krippendorff_csv: Path) -> None:
    result = json.loads(run("--annotations", str(krippendorff_csv), "--json"))
    labels = LongLabels.from_matrix(reliability_matrix().T)
    assert result["fleiss_kappa"] == pytest.approx(fleiss_kappa(labels), abs=1e-12)
    for weights, key in [(None, "unweighted"), ("linear", "linear"), ("quadratic", "quadratic")]:
        expected = cohen_kappa_matrix(labels, weights=weights)  # type: ignore[arg-type]
        actual = np.array([[np.nan if x is None else x for x in row] for row in result["cohen_kappa"][key]])
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12, equal_nan=True)


def test_it_writes_null_not_nan_for_undefined_figures(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "apart.csv", ["q1,ann,2", "q1,bob,2", "q2,cyd,3"])
    text = run("--annotations", str(path), "--json")
    assert "NaN" not in text
    result = json.loads(text)
    assert result["krippendorff_alpha"] is None and result["fleiss_kappa"] is None  # all labels equal
    assert result["exact_agreement"] == 1.0
    kappa = result["cohen_kappa"]["unweighted"]
    assert kappa[0][0] is None  # the diagonal
    assert kappa[0][2] is None and kappa[2][0] is None  # ann and cyd share no item
    assert kappa[0][1] is None  # ann and bob agree on one constant label: kappa is undefined


def test_it_says_a_file_with_only_a_header_has_nothing_to_measure(tmp_path: Path) -> None:
    with pytest.raises(
        CommandError, match=r"header\.csv: the file holds the header but no labels: nothing to"
    ):
        run("--annotations", str(write_csv(tmp_path / "header.csv", ["", "  "])), "--json")


def test_it_says_a_directory_is_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r": is a directory, not a file"):
        run("--annotations", str(tmp_path))


def test_it_runs_from_the_shell_without_secret_key_and_fails_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE"}}
    manage = [sys.executable, str(ROOT / "manage.py"), "eval_agreement", "--annotations"]
    header = write_csv(tmp_path / "header.csv", [])
    done = subprocess.run([*manage, str(header)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 1 and done.stdout == ""
    assert (
        done.stderr.strip()
        == f"CommandError: {header}: the file holds the header but no labels: nothing to measure"
    )
    labels = write_csv(tmp_path / "labels.csv", ["q1,ann,2", "q1,bob,2", "q2,ann,1", "q2,bob,0"])
    done = subprocess.run([*manage, str(labels), "--json"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["n_labels"] == 4
    assert load_command_class("annotations", "eval_agreement").requires_system_checks == []


def test_it_prints_a_readable_summary_and_the_kappa_matrix(krippendorff_csv: Path) -> None:
    text = run("--annotations", str(krippendorff_csv), "--level", "interval")
    assert "12 items, 4 annotators, 41 labels" in text
    assert "Krippendorff's alpha  0.8491  (interval)" in text
    assert "Cohen's kappa (unweighted)" in text and "Cohen's kappa (quadratic weights)" in text
    assert any(line.split() == CODERS for line in text.splitlines())  # the matrix header
    assert not text.lstrip().startswith("{")


@pytest.mark.parametrize(
    ("rows", "header", "message"),
    [
        ([], "item,rater,label", r"wrong\.csv:1: expected the header 'item,annotator,label'"),
        (["q1,ann,2", "q1,bob"], "item,annotator,label", r"wrong\.csv:3: expected 3 columns"),
        (["q1,ann,2", "q1,bob,2,extra"], "item,annotator,label", r"wrong\.csv:3: expected 3 columns"),
        (
            ["q1,ann,2", "q2,ann,high"],
            "item,annotator,label",
            r"wrong\.csv:3: the label 'high' is not a finite number",
        ),
        (["q1,ann,nan"], "item,annotator,label", r"wrong\.csv:2: the label 'nan' is not a finite number"),
        (
            ["q1,ann,2", "q2,ann,1", "q1,ann,3"],
            "item,annotator,label",
            r"wrong\.csv:4: item 'q1' already has a label from annotator 'ann' \(line 2\)",
        ),
        ([",ann,1"], "item,annotator,label", r"wrong\.csv:2: the item and the annotator must not be empty"),
    ],
)
def test_it_names_the_line_of_a_bad_row(tmp_path: Path, rows: list[str], header: str, message: str) -> None:
    path = write_csv(tmp_path / "wrong.csv", rows, header=header)
    with pytest.raises(CommandError, match=message):
        run("--annotations", str(path), "--json")


def test_it_reports_an_empty_or_missing_file(tmp_path: Path) -> None:
    empty = tmp_path / "nothing.csv"
    empty.write_text("")
    with pytest.raises(CommandError, match=r"nothing\.csv:1: expected the header .* found an empty file"):
        run("--annotations", str(empty))
    with pytest.raises(CommandError, match=r"absent\.csv: No such file"):
        run("--annotations", str(tmp_path / "absent.csv"))


def test_it_skips_blank_lines_and_accepts_spaces_and_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "loose.csv"
    path.write_text("\ufeffitem, annotator, label\nq1, ann, 2\n\nq1,bob, 2.0\n", encoding="utf-8")
    result = json.loads(run("--annotations", str(path), "--json"))
    assert (result["n_items"], result["n_labels"], result["exact_agreement"]) == (1, 2, 1.0)


def test_it_rejects_an_unknown_level(krippendorff_csv: Path) -> None:
    with pytest.raises(CommandError, match="invalid choice"):
        run("--annotations", str(krippendorff_csv), "--level", "cardinal")


def test_it_has_help() -> None:
    parser = load_command_class("annotations", "eval_agreement").create_parser("manage.py", "eval_agreement")
    text = parser.format_help()
    for option in ("--annotations FILE", "--level", "nominal,ordinal,interval,ratio", "--json"):
        assert option in text
