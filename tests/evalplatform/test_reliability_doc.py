"""docs/reliability.md names the test behind each row; every one of them must exist."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT

DOC = ROOT / "docs" / "reliability.md"
NODE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def defined_tests(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


def test_every_test_the_reliability_table_names_exists() -> None:
    named = NODE.findall(DOC.read_text())
    assert len(named) >= 20
    missing = [f"{path}::{name}" for path, name in named if name not in defined_tests(path)]
    assert missing == []
