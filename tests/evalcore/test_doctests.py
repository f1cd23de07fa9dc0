"""Every docstring example of evalcore runs in the default `pytest` (the root conftest.py collects them)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

from tests.conftest import ROOT

#: Collects evalcore's doctests in a fresh interpreter and reports which modules they came from and
#: whether collecting imported torch.
COLLECT = """
import json, sys, pytest

class Collected:
    modules = set()
    def pytest_collection_modifyitems(self, items):
        self.modules |= {item.path.relative_to(sys.argv[1]).as_posix() for item in items}

plugin = Collected()
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "evalcore"], plugins=[plugin])
print(json.dumps({"code": int(code), "modules": sorted(plugin.modules), "torch": "torch" in sys.modules}))
"""


def modules_with_examples() -> list[str]:
    return sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "evalcore").rglob("*.py")
        if ">>>" in path.read_text(encoding="utf-8")
    )


def test_it_is_part_of_the_default_run() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["testpaths"] == ["tests", "evalcore"]


def test_it_collects_every_module_with_an_example_and_imports_no_torch() -> None:
    result = subprocess.run(
        [sys.executable, "-c", COLLECT, str(ROOT)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    collected = json.loads(result.stdout.strip().splitlines()[-1])
    assert collected["code"] == 0
    assert len(modules_with_examples()) >= 25
    assert collected["modules"] == modules_with_examples()
    assert collected["torch"] is False
