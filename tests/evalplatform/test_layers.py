"""The layering rules, held by reading every module's imports (`ast`, so function-local imports and
imports under `if TYPE_CHECKING:` count too).

From the bottom up:
- `evalcore`, the computing core, imports no framework (Django, DRF, Celery) and none of the packages above it;
- `evalplatform`'s toolkit modules import neither app (nor the composition layer): only its composition
  root (`COMPOSITION_ROOT`: settings, urls, celery, wsgi, asgi) may name them;
- `series`, the one table of metric values that both apps write, imports neither app (nor the composition
  layer): values name their jobs by label and id, and the alert rules listen to its signal;
- `annotations` never imports `monitoring` (`monitoring` may read `annotations`: its evaluations use qrels);
- neither app imports `portal`, the composition layer, which may import everything.

Strings that name modules (settings' `INSTALLED_APPS`, Celery task names) are not imports and are not read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The packages of the project, each a layer (or, for the two apps, a slice of one).
PACKAGES = ("evalcore", "evalplatform", "series", "annotations", "monitoring", "portal")

#: The modules of `evalplatform` that put the site together and so may import the apps: the
#: composition root. Every other module of `evalplatform` is the toolkit the apps build on.
COMPOSITION_ROOT = frozenset(
    {
        "evalplatform.settings",
        "evalplatform.urls",
        "evalplatform.celery",
        "evalplatform.wsgi",
        "evalplatform.asgi",
    }
)

FRAMEWORKS = frozenset({"django", "rest_framework", "celery", "drf_spectacular"})


@dataclass(frozen=True)
class Rule:
    """Modules whose dotted name starts with `layer` (less those in `exempt`) import no module whose
    first name is in `forbidden`."""

    layer: str
    forbidden: frozenset[str]
    exempt: frozenset[str] = frozenset()

    def covers(self, module: str) -> bool:
        return (module == self.layer or module.startswith(self.layer + ".")) and module not in self.exempt


RULES = (
    Rule("evalcore", FRAMEWORKS | {"evalplatform", "series", "annotations", "monitoring", "portal"}),
    Rule(
        "evalplatform", frozenset({"series", "annotations", "monitoring", "portal"}), exempt=COMPOSITION_ROOT
    ),
    Rule("series", frozenset({"annotations", "monitoring", "portal"})),
    Rule("annotations", frozenset({"monitoring", "portal"})),
    Rule("monitoring", frozenset({"portal"})),
)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    line: int
    imported: str  # the dotted name imported (for `from a.b import c`, "a.b")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, *, is_package: bool = False) -> Iterator[Import]:
    """Every import statement in `source`, wherever it stands (module level, in a function, under a
    condition), with relative imports resolved against `module`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # `from . import x` in a package's __init__ is relative to the package itself.
                package = module.split(".") if is_package else module.split(".")[:-1]
                base = package[: len(package) - (node.level - 1)]
                yield Import(module, node.lineno, ".".join([*base, *filter(None, [node.module])]))
            else:
                yield Import(module, node.lineno, node.module or "")


def project_imports() -> Iterator[Import]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield from imports_of(path.read_text(), module_name(path), is_package=path.name == "__init__.py")


def violations(rule: Rule, imports: list[Import]) -> list[str]:
    return [
        f"{found.module}:{found.line} imports {found.imported}"
        for found in imports
        if rule.covers(found.module) and found.imported.split(".")[0] in rule.forbidden
    ]


@pytest.fixture(scope="module")
def every_import() -> list[Import]:
    return list(project_imports())


class TestLayers:
    @pytest.mark.parametrize("rule", RULES, ids=[rule.layer for rule in RULES])
    def test_it_keeps_each_layer_from_importing_what_sits_above_it(
        self, rule: Rule, every_import: list[Import]
    ) -> None:
        assert [found for found in every_import if rule.covers(found.module)], f"no module of {rule.layer}"
        assert violations(rule, every_import) == []

    def test_it_reads_every_package_of_the_project(self) -> None:
        top_level = {
            path.parent.name
            for path in ROOT.glob("*/__init__.py")
            if path.parent.name not in {"tests", "benchmarks"}
        }
        assert top_level == set(PACKAGES)

    def test_it_lets_the_composition_root_and_layer_import_both_apps(
        self, every_import: list[Import]
    ) -> None:
        """The allow-list is not dead: the composition root does import the apps, through urls, and the
        composition layer puts both together."""
        rule = next(rule for rule in RULES if rule.layer == "evalplatform")
        assert not rule.covers("evalplatform.urls") and rule.covers("evalplatform.views")
        portal_imports = {
            found.imported.split(".")[0] for found in every_import if found.module.startswith("portal")
        }
        assert {"annotations", "monitoring", "evalplatform"} <= portal_imports
        urls_imports = {found.imported for found in every_import if found.module == "evalplatform.urls"}
        assert "portal" in urls_imports


class TestImportsOf:
    def test_it_finds_function_local_and_type_checking_imports(self) -> None:
        source = (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    from monitoring.models import Team\n"
            "def f():\n"
            "    import django.db\n"
            "    from annotations import hotpath\n"
        )
        found = [(i.line, i.imported) for i in imports_of(source, "evalcore.example")]
        assert found == [(1, "typing"), (3, "monitoring.models"), (5, "django.db"), (6, "annotations")]

    def test_it_resolves_relative_imports(self) -> None:
        assert [
            i.imported
            for i in imports_of("from ..common import x\nfrom . import y\n", "monitoring.alerts.services")
        ] == ["monitoring.common", "monitoring.alerts"]
        assert [
            i.imported for i in imports_of("from . import y\n", "monitoring.alerts", is_package=True)
        ] == ["monitoring.alerts"]

    def test_it_reports_an_import_that_breaks_a_rule(self) -> None:
        rule = next(rule for rule in RULES if rule.layer == "annotations")
        found = list(imports_of("def f():\n    from monitoring import alerts\n", "annotations.views"))
        assert violations(rule, found) == ["annotations.views:2 imports monitoring"]
