"""Every shell command block of README.md and of the manual's pages (docs/*.md) works as shown after
`make demo`, typed in another shell.

One demo is started the way `make demo` starts it (`bin/demo --setup` with DEBUG=true for its processes
only; its own var folder and a free port). The blocks then run, the README's first and then each page's
in the order of mkdocs.yml's nav, in one bash session whose environment is a new user's: the virtualenv
activated as the README says, and no DEBUG, SECRET_KEY, DATABASE_URL, broker or SITE_URL, so every
`manage.py` command reads the demo's settings from the file `bin/demo` left in the var folder. Every
command must succeed without a traceback, and every curl call must get a 2xx (curl runs with
--fail-with-body), which holds only if the TOKEN line yields a token.

The address `http://127.0.0.1:8000` is replaced by the demo's, and the session starts in a scratch folder
holding `manage.py` and `.venv` (links to the checkout's and to this virtualenv) and the files the
examples call the reader's own (`bm25.run`, `labels.csv`, ...), written from the demo's data and the
repository's fixtures (USER_FILES).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.evalplatform.test_demo_script import RunningDemo

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MKDOCS = ROOT / "mkdocs.yml"
FIXTURES = ROOT / "tests" / "fixtures"
README_SITE = "http://127.0.0.1:8000"

#: Blocks that are not run against the demo, by their first line, with the reason.
EXCLUDED = {
    "make demo": "the two commands themselves: the fixture starts the demo as `make demo` does",
    "python manage.py import_topics": (  # docs/judging.md
        "imports the reader's own collection into a project of their own (PROJECT, topics.txt, ...); "
        "tests/annotations/test_import_commands.py runs these commands"
    ),
    "cp .env.example .env": "docker compose: needs Docker and a build, not the demo",
}

#: A new user's shell lacks what `make demo` sets for its own processes.
DEMO_ONLY = {
    "DEBUG",
    "SECRET_KEY",
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "REDIS_URL",
    "SITE_URL",
    "HEALTHZ_TOKEN",
}

#: Labels for eval_agreement (CSV header item,annotator,label): three raters, ordinal 0-3.
LABELS_CSV = "item,annotator,label\n" + "".join(
    f"i{item},{rater},{(item + shift) % 4}\n"
    for item in range(12)
    for rater, shift in (("ann", 0), ("bob", item % 2), ("cat", 0))
)


@dataclass(frozen=True)
class Block:
    source: str  # README.md or docs/<page>.md
    line: int  # of the opening fence
    code: str

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.code.splitlines()[0]


def sh_blocks(path: Path) -> list[Block]:
    text = path.read_text()
    source = path.relative_to(ROOT).as_posix()
    return [
        Block(source=source, line=text.count("\n", 0, match.start()) + 1, code=match.group(1))
        for match in re.finditer(r"^```sh\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)
    ]


def nav_pages(nav: list[Any]) -> list[str]:
    """The pages of mkdocs.yml's nav, in order (sections nest lists of {title: page})."""
    pages: list[str] = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += nav_pages(value) if isinstance(value, list) else [str(value)]
    return pages


def documents() -> list[Path]:
    """README.md, then every page of the manual in the nav's order."""
    docs = ROOT / "docs"
    return [README] + [docs / page for page in nav_pages(yaml.safe_load(MKDOCS.read_text())["nav"])]


def all_blocks() -> list[Block]:
    return [block for path in documents() for block in sh_blocks(path)]


def excluded(block: Block) -> bool:
    return any(block.first_line.startswith(start) for start in EXCLUDED)


def new_user_env(var_dir: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in DEMO_ONLY}
    env.pop("VIRTUAL_ENV", None)
    # The only setting a reader's shell carries: this test's demo has its own var folder.
    return {**env, "EVALPLATFORM_VAR_DIR": str(var_dir)}


def demo_command(var_dir: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=new_user_env(var_dir), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def user_files(folder: Path, var_dir: Path) -> None:
    """The files the README's examples call the reader's own: runs of their own (the demo's two systems'
    rankings under another run tag, so they are new files to the team), qrels judged by hand (the demo's
    v1), labels, recommendation and fraud files (the repository's fixtures) and embedding snapshots (the
    demo stream's 64 dimensions)."""
    paths = json.loads(
        demo_command(
            var_dir,
            "shell",
            "--no-imports",
            "-c",
            "import json; from monitoring.models import Run; "
            "print(json.dumps({run.name: run.file.path for run in Run.objects.filter(team__slug='search')}))",
        )  # fmt: skip
    )

    def retagged(name: str) -> str:
        return "".join(
            line.rsplit(" ", 1)[0] + " mine\n" for line in Path(paths[name]).read_text().splitlines()
        )

    (folder / "run.txt").write_text(retagged("bm25"))
    (folder / "bm25.run").write_text(retagged("bm25"))
    (folder / "dense.run").write_text(retagged("dense-lsa"))
    demo_command(var_dir, "export_qrels", "python-help:1", "--output", str(folder / "judged.qrels"))
    machine_judge(folder)
    (folder / "labels.csv").write_text(LABELS_CSV)
    for name, fixture in (
        ("recs", "recs"),
        ("test", "interactions"),
        ("items", "items"),
        ("train", "history"),
    ):
        shutil.copy(FIXTURES / "recsys" / f"seed004_{fixture}.csv", folder / f"{name}.csv")
    shutil.copy(FIXTURES / "fraud" / "transactions.csv", folder / "scores.csv")
    for name in ("qrels.test", "results.test"):  # trec_eval's own test files (docs/measures.md)
        shutil.copy(FIXTURES / "trec_eval" / name, folder / name)
    rng = np.random.default_rng(48)
    for name, dimension in (("reference", 64), ("week-48", 64), ("ref", 32), ("today", 32)):
        np.save(folder / f"{name}.npy", rng.normal(size=(300, dimension)).astype(np.float32))


def machine_judge(folder: Path) -> None:
    """docs/machine-judges.md's files: `judge.jsonl`, a machine judge's labels of every judged pair (a
    lenient, noisy copy of judged.qrels with confidences), and `sample.qrels`, people's labels of every
    other topic, the random sample PPI corrects the machine with."""
    rng = np.random.default_rng(24)
    text = (folder / "judged.qrels").read_text()
    rows = [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    with (folder / "judge.jsonl").open("w") as judge:
        for qid, _, doc, grade in rows:
            label = min(2, int(grade) + int(rng.random() < 0.3))
            confidence = round(float(rng.uniform(0.5, 1.0)), 2)
            judge.write(
                json.dumps({"qid": qid, "doc_id": doc, "label": label, "confidence": confidence}) + "\n"
            )
    topics = sorted({qid for qid, *_ in rows})[::2]
    (folder / "sample.qrels").write_text("".join(" ".join(row) + "\n" for row in rows if row[0] in topics))


def session_script(blocks: list[Block], site_url: str) -> str:
    """One bash session: the virtualenv activated, curl failing on any answer but a 2xx, and a marker on
    stderr before each block so that a failure names its block."""
    lines = [
        "set -eo pipefail",
        f". {Path(sys.prefix) / 'bin' / 'activate'}",
        'curl() { command curl --silent --show-error --fail-with-body "$@"; }',
    ]
    for block in blocks:
        lines.append(f"echo '### {block.where}' >&2")
        lines.append(block.code.replace(README_SITE, site_url))
    lines.append('printf %s "$TOKEN" > .token')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDemo]:
    """`make demo`: DEBUG=true for bin/demo --setup only, nothing else configured."""
    var_dir = tmp_path_factory.mktemp("readme-demo-var")
    env = new_user_env(var_dir)
    env.update(PY=sys.executable, DEBUG="true", HOST="127.0.0.1")
    running = RunningDemo(env, var_dir / "demo.out", args=["--setup"])
    try:
        running.wait_until_up(timeout=600)
        yield running
    finally:
        running.kill_all()


class TestReadmeCommands:
    def test_it_reads_the_readme_and_every_page_of_the_manual(self) -> None:
        assert sorted(documents()[1:]) == sorted((ROOT / "docs").glob("*.md"))

    def test_it_runs_or_excludes_with_a_reason_every_sh_block(self) -> None:
        blocks = all_blocks()
        assert len(blocks) > 8
        for start in EXCLUDED:
            assert sum(block.first_line.startswith(start) for block in blocks) == 1, start

    def test_it_lists_the_demo_logins_with_their_passwords_and_names(self) -> None:
        """The README's table of demo logins is the demo's accounts (`portal.demo.DEMO_ACCOUNTS`): each
        login, its password and the name the pages greet it by."""
        from portal.demo import DEMO_ACCOUNTS

        text = README.read_text()
        table = text[text.index("| user | password | name | role |") :].split("\n\n")[0]
        rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| ([^|]+?) \|", table, flags=re.MULTILINE)
        assert rows == [(a.username, a.password, a.first_name) for a in DEMO_ACCOUNTS]

    @pytest.mark.slow
    def test_it_runs_every_command_block_after_make_demo(self, demo: RunningDemo, tmp_path: Path) -> None:
        var_dir = Path(demo.env["EVALPLATFORM_VAR_DIR"])
        (tmp_path / "manage.py").symlink_to(ROOT / "manage.py")
        (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
        user_files(tmp_path, var_dir)
        blocks = [block for block in all_blocks() if not excluded(block)]
        result = subprocess.run(
            ["bash", "-c", session_script(blocks, f"http://127.0.0.1:{demo.port}")],
            cwd=tmp_path, env=new_user_env(var_dir), capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        output = result.stdout + result.stderr
        failed_at = re.findall(r"^### (\S+\.md:\d+)$", result.stderr, flags=re.MULTILINE)
        assert result.returncode == 0, f"{failed_at[-1:]} exited {result.returncode}:\n{output[-6000:]}"
        assert failed_at == [block.where for block in blocks]
        assert "Traceback" not in output, output[-6000:]
        assert re.fullmatch(r"[0-9a-f]{40}", (tmp_path / ".token").read_text())
