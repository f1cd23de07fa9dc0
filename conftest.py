"""The suite's root: besides tests/, pytest collects every docstring example (`>>>`) of evalcore.

`pytest` walks `tests` and `evalcore` (pyproject's testpaths). In evalcore it collects a module's
docstring examples as doctests, the way `--doctest-modules` would, but only there (the test modules
are not doctest modules) and only from the modules that hold an example: a module is read as text
first, so collecting imports none of the others (the torch computations of `evalcore.embeddings` are
not imported for this). The examples run on the CPU with small inputs; a GPU-only example would be
marked `gpu` like any GPU test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.doctest import DoctestModule

EVALCORE = Path(__file__).resolve().parent / "evalcore"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if (
        file_path.suffix == ".py"
        and file_path.is_relative_to(EVALCORE)
        and not parent.config.option.doctestmodules  # --doctest-modules collects them itself
        and ">>>" in file_path.read_text(encoding="utf-8")
    ):
        return DoctestModule.from_parent(parent, path=file_path)
    return None
