"""The manual (docs/, nav in mkdocs.yml) builds with MkDocs in strict mode, as `make docs` builds it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

MKDOCS = Path(sys.executable).parent / "mkdocs"


def build(folder: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(site)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_it_builds_every_page_without_a_warning(tmp_path: Path) -> None:
    result = build(ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stderr
    pages = sorted(path.stem for path in (ROOT / "docs").glob("*.md"))
    built = sorted(path.parent.name for path in (tmp_path / "site").glob("*/index.html"))
    assert built == [page for page in pages if page != "index"]
    assert "fonts.googleapis.com" not in (tmp_path / "site" / "index.html").read_text()


def test_it_fails_on_a_page_left_out_of_the_nav_and_on_a_broken_anchor(tmp_path: Path) -> None:
    shutil.copy(ROOT / "mkdocs.yml", tmp_path)
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n\n[Judging](judging.md#no-such-heading)\n")
    result = build(tmp_path, tmp_path / "site")
    assert result.returncode == 1
    assert "orphan.md" in result.stderr
    assert "does not contain an anchor '#no-such-heading'" in result.stderr


def slug(heading: str) -> str:
    """Python-Markdown's toc anchor for a heading, as MkDocs makes it."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def test_it_links_every_page_from_the_readme_and_every_readme_link_resolves() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#\s]*)(?:#([^)\s]+))?\)", readme)
    for path, anchor in links:
        assert (ROOT / path).exists(), path
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(), flags=re.MULTILINE)
            assert anchor in {slug(heading) for heading in headings}, f"{path}#{anchor}"
    linked = {Path(path).name for path, _ in links}
    pages = {path.name for path in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= linked, pages - linked
