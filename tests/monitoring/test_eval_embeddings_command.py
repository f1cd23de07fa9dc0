"""`eval_embeddings` on real .npy files: the JSON contract, the alerts, and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
import torch
from django.core.management import call_command
from django.core.management.base import CommandError

from evalcore.embeddings import quality_metrics

ROOT = Path(__file__).resolve().parents[2]
QUALITY_KEYS = {
    "partition_isotropy", "effective_dim_ratio", "top10_variance_ratio", "avg_cosine_similarity",
    "uniformity", "dead_dim_ratio", "effective_rank", "stable_rank",
}  # fmt: skip
DRIFT_KEYS = {"mmd2", "mmd_p_value", "mean_cosine_distance", "drifted_dim_share", "classifier_auc"}
SMALL = ("--sample-size", "400", "--mmd-sample-size", "200", "--device", "cpu")


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """Seed 004's healthy and collapsed embeddings, as float32 .npy files."""
    torch.manual_seed(42)
    healthy = torch.randn(1000, 256)
    collapsed = torch.randn(1000, 256)
    collapsed[:, 50:] = 0.01 * torch.randn(1000, 206)
    np.save(tmp_path / "healthy.npy", healthy.numpy())
    np.save(tmp_path / "collapsed.npy", collapsed.numpy())
    return tmp_path / "healthy.npy", tmp_path / "collapsed.npy"


def run_command(*args: str) -> str:
    out = StringIO()
    call_command("eval_embeddings", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


class TestEvalEmbeddings:
    def test_it_prints_the_reference_metrics_as_json(self, files) -> None:
        healthy, _ = files
        data = json.loads(run_command("--reference", str(healthy), "--json", *SMALL))
        assert set(data) == {"reference", "alerts"}
        assert set(data["reference"]) >= QUALITY_KEYS
        assert data["reference"]["dead_dims"] == 0 and isinstance(data["reference"]["dead_dims"], int)
        expected = quality_metrics(np.load(healthy), sample_size=400, device="cpu")
        assert data["reference"] == pytest.approx(expected)
        assert data["alerts"] == []

    def test_it_adds_current_drift_and_the_default_alerts(self, files) -> None:
        healthy, collapsed = files
        data = json.loads(
            run_command("--reference", str(healthy), "--current", str(collapsed), "--json", *SMALL)
        )
        assert set(data) == {"reference", "current", "drift", "alerts"}
        assert set(data["drift"]) == DRIFT_KEYS
        assert data["current"]["dead_dims"] == 206
        assert f"{data['current']['effective_rank']:.1f}" == "61.5"
        alerts = {(alert["section"], alert["rule"]): alert for alert in data["alerts"]}
        assert {"rule", "metric", "value", "threshold", "severity"} <= set(
            alerts["current", "dead_dimensions"]
        )
        assert alerts["current", "dead_dimensions"]["severity"] == "critical"
        assert alerts["current", "low_effective_rank"]["metric"] == "effective_rank_ratio"
        drift = alerts["drift", "mmd_drift"]
        assert drift["value"] < 0.01 and drift["effect_value"] > drift["effect_threshold"]

    def test_it_prints_text_by_default(self, files) -> None:
        healthy, collapsed = files
        text = run_command("--reference", str(healthy), "--current", str(collapsed), *SMALL)
        assert "reference:" in text and "drift:" in text and "effect thresholds" in text
        assert "[critical] current: dead_dimensions: dead_dim_ratio 0.8047 > 0.1" in text

    def test_it_writes_nan_as_null(self, tmp_path) -> None:
        np.save(tmp_path / "constant.npy", np.ones((20, 4), dtype=np.float32))
        data = json.loads(run_command("--reference", str(tmp_path / "constant.npy"), "--json", *SMALL))
        assert data["reference"]["effective_rank"] is None and data["reference"]["dead_dims"] == 4

    @pytest.mark.parametrize(
        ("name", "content", "message"),
        [
            ("missing.npy", None, "missing.npy: no such file"),
            ("text.txt", b"query\tdoc\n", "text.txt: not a .npy file"),
            (
                "ints.npy",
                np.arange(12).reshape(6, 2),
                "ints.npy: dtype int64: embeddings must be floating point",
            ),
            ("flat.npy", np.ones(8, dtype=np.float32), "flat.npy: shape (8,): embeddings must be a 2-d"),
        ],
    )
    def test_it_stops_with_one_line_on_a_bad_file(self, tmp_path, name, content, message) -> None:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif content is not None:
            np.save(path, content)
        with pytest.raises(CommandError) as error:
            run_command("--reference", str(path), *SMALL)
        assert message in str(error.value) and "\n" not in str(error.value)

    def test_it_refuses_sets_of_different_dimensions(self, files, tmp_path) -> None:
        healthy, _ = files
        np.save(tmp_path / "small.npy", np.ones((10, 3), dtype=np.float32))
        with pytest.raises(CommandError, match="dimension 256 but the current set has 3"):
            run_command("--reference", str(healthy), "--current", str(tmp_path / "small.npy"), *SMALL)

    @pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
    def test_it_says_when_cuda_is_not_available(self, files) -> None:
        with pytest.raises(CommandError, match="CUDA is not available"):
            run_command("--reference", str(files[0]), "--device", "cuda")

    def test_it_prints_no_traceback_from_manage_py(self, tmp_path) -> None:
        np.save(tmp_path / "ints.npy", np.arange(12).reshape(6, 2))
        env = {**os.environ, "DEBUG": os.environ.get("DEBUG", "true")}
        result = subprocess.run(
            [sys.executable, "manage.py", "eval_embeddings", "--reference", str(tmp_path / "ints.npy")],
            cwd=ROOT, capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        assert result.returncode == 1
        assert result.stderr.strip().splitlines() == [
            f"CommandError: {tmp_path / 'ints.npy'}: dtype int64: embeddings must be floating point "
            "(float16, float32 or float64)"
        ]

    def test_it_has_help(self) -> None:
        result = subprocess.run(
            [sys.executable, "manage.py", "eval_embeddings", "--help"],
            cwd=ROOT, capture_output=True, text=True, env={**os.environ, "DEBUG": "true"}, check=True,
        )  # fmt: skip
        assert "--reference FILE" in result.stdout and "--device {auto,cpu,cuda}" in result.stdout
