"""Every file-only command runs from the shell without the project's settings (no SECRET_KEY, DEBUG or
database) and answers a bad file in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from manage import STANDALONE_COMMANDS  # noqa: E402

MISSING_FILE_ARGS = {
    "eval_retrieval": ["--qrels", "absent.qrels", "--run", "absent.run"],
    "compare_runs": ["--qrels", "absent.qrels", "--run", "a.run", "--run", "b.run", "-m", "map"],
    "eval_agreement": ["--annotations", "absent.csv"],
    "eval_recsys": ["--recs", "absent.csv", "--interactions", "absent.csv"],
    "eval_fraud": ["--scores", "absent.csv"],
    "eval_embeddings": ["--reference", "absent.npy"],
    "simulate_pooling": ["--qrels", "absent.qrels", "--run", "a.run", "--strategy", "mtf", "--budget", "10"],
    "calibrate_judge": ["--human", "absent.qrels", "--machine", "absent.jsonl"],
    "ppi_evaluate": ["--run", "absent.run", "--machine", "m.qrels", "--human", "h.qrels", "-m", "map"],
    "derive_click_judgments": ["--log", "absent.csv", "--model", "coec"],
    "run_overlap": ["--run", "absent.run", "--run", "b.run"],
    "fuse_runs": ["--run", "absent.run", "--method", "sum", "--out", "out.run"],
}


def bare_environment() -> dict[str, str]:
    unset = {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
    return {key: value for key, value in os.environ.items() if key not in unset}


def test_it_lists_a_missing_file_case_for_every_standalone_command() -> None:
    assert set(MISSING_FILE_ARGS) == set(STANDALONE_COMMANDS)


@pytest.mark.parametrize("command", sorted(STANDALONE_COMMANDS))
def test_it_answers_help_and_a_missing_file_without_settings(command: str, tmp_path: Path) -> None:
    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), command, *args],
            capture_output=True, text=True, env=bare_environment(), cwd=tmp_path, timeout=120,
        )  # fmt: skip

    assert manage("--help").returncode == 0
    failed = manage(*MISSING_FILE_ARGS[command])
    assert failed.returncode != 0
    assert "Traceback" not in failed.stderr and len(failed.stderr.strip().splitlines()) == 1, failed.stderr
    assert "absent" in failed.stderr


#: What no file command of `STARTS_LIGHT` may load, not even for a real run: Django (its management
#: package alone costs a fifth of a second of CPU), and the heavy libraries none of them needs.
HEAVY_MODULES = ("django", "rest_framework", "celery", "torch", "scipy", "plotly", "pandas", "sklearn")


def tiny_files(directory: Path) -> dict[str, list[str]]:
    """A real run of each light command on files of a few lines."""
    (directory / "scores.csv").write_text("id,score,label\na,0.9,1\nb,0.4,0\nc,0.2,0\nd,0.7,1\n")
    (directory / "recs.csv").write_text("user,item,rank\nu1,i1,1\nu1,i2,2\nu2,i2,1\nu2,i3,2\n")
    (directory / "interactions.csv").write_text("user,item\nu1,i2\nu2,i1\n")
    (directory / "items.csv").write_text("item,category\ni1,a\ni2,b\ni3,a\n")
    (directory / "q.qrels").write_text("1 0 d1 1\n1 0 d2 0\n2 0 d3 1\n")
    (directory / "r.run").write_text("1 Q0 d2 1 2.0 r\n1 Q0 d1 2 1.0 r\n2 Q0 d3 1 1.0 r\n")
    (directory / "s.run").write_text("1 Q0 d1 1 2.0 s\n1 Q0 d2 2 1.0 s\n3 Q0 d4 1 1.0 s\n")
    labels = [("1", "d1", 1), ("1", "d2", 1), ("2", "d3", 0), ("3", "d4", 1)]
    (directory / "m.jsonl").write_text(
        "".join(f'{{"qid": "{q}", "doc_id": "{d}", "label": {g}, "confidence": 0.5}}\n' for q, d, g in labels)
    )
    (directory / "clicks.csv").write_text("session,query,doc,position,clicked\ns1,q,a,1,1\ns1,q,b,2,0\n")
    (directory / "labels.csv").write_text("item,annotator,label\nq1,ann,2\nq1,bob,2\nq2,ann,1\nq2,bob,0\n")
    return {
        "derive_click_judgments": ["--log", "clicks.csv", "--model", "dbn", "--min-impressions", "1"],
        "eval_agreement": ["--annotations", "labels.csv", "--json"],
        "eval_fraud": ["--scores", "scores.csv", "--json"],
        "eval_recsys": ["--recs", "recs.csv", "--interactions", "interactions.csv", "--items", "items.csv"],
        "eval_retrieval": ["--qrels", "q.qrels", "--run", "r.run", "-m", "map", "-m", "ndcg_cut_10"],
        "calibrate_judge": ["--human", "q.qrels", "--machine", "m.jsonl", "--run", "r.run", "--run", "s.run"],
        "ppi_evaluate": [
            "--run",
            "r.run",
            "--machine",
            "m.jsonl",
            "--human",
            "q.qrels",
            "-m",
            "map",
            "--json",
        ],
    }


STARTS_LIGHT = (
    "derive_click_judgments",
    "eval_agreement",
    "eval_fraud",
    "eval_recsys",
    "eval_retrieval",
    "calibrate_judge",
    "ppi_evaluate",
)
#: The CSV readers call Arrow's kernels without `pyarrow.compute`, whose import alone builds a wrapper
#: for each of its few hundred functions (`evalcore.arrow`).
WITHOUT_PYARROW_COMPUTE = ("derive_click_judgments", "eval_fraud", "eval_recsys")


@pytest.mark.parametrize("command", STARTS_LIGHT)
@pytest.mark.parametrize("run", ["--help", "a real run"])
def test_it_starts_without_django_or_heavy_libraries(command: str, run: str, tmp_path: Path) -> None:
    args = ["--help"] if run == "--help" else tiny_files(tmp_path)[command]
    script = (
        f"import sys; sys.argv = {['manage.py', command, *args]!r}; sys.path.insert(0, {str(ROOT)!r})\n"
        "import manage\n"
        "try:\n    manage.main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
        f"loaded = sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY_MODULES)!r})\n"
        f"loaded += ['pyarrow.compute'] * ({command in WITHOUT_PYARROW_COMPUTE} and 'pyarrow.compute' in sys.modules)\n"
        "print('loaded:', loaded, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=bare_environment(), cwd=tmp_path,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "the command printed nothing"
    assert done.stderr.strip().splitlines()[-1] == "loaded: []"


@pytest.mark.parametrize("command", sorted(STANDALONE_COMMANDS))
def test_it_answers_help_as_djangos_command_does(command: str) -> None:
    from importlib import import_module

    from evalcore.filecommands import command_parser

    module = import_module(STANDALONE_COMMANDS[command])
    program = module.Program  # what the shell runs, without Django
    ours = command_parser(program(), "manage.py", command).format_help()
    assert ours == module.Command().create_parser("manage.py", command).format_help()
    assert module.Command.requires_system_checks == []


def test_it_prints_djangos_version_without_importing_it(tmp_path: Path) -> None:
    import django

    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "eval_agreement", "--version"],
        capture_output=True, text=True, env=bare_environment(), cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, django.get_version() + "\n", "")


def test_it_makes_djangos_command_only_when_asked_for_it() -> None:
    from importlib import import_module

    module = import_module(STANDALONE_COMMANDS["eval_agreement"])
    assert not hasattr(module, "Comand")
    assert module.Command is module.Command  # made once
    assert module.Command.__module__ == module.__name__
