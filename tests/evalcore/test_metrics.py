"""The platform-wide metric registry: every family's specs are well formed and resolvable."""

from __future__ import annotations

import math
import re

import pytest

from evalcore.metrics import FAMILIES, MetricRegistry, MetricSpec, UnknownMetricError, metric_registry

REGISTRY = metric_registry()
SPECS = list(REGISTRY)


def test_it_holds_every_family() -> None:
    assert {spec.family for spec in SPECS} == set(FAMILIES)


def test_it_reads_the_registry_without_importing_torch() -> None:
    import subprocess
    import sys

    code = "import sys; from evalcore.metrics import metric_registry; metric_registry(); print('torch' in sys.modules)"
    assert (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        == "False"
    )


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_it_declares_every_metric_completely(spec: MetricSpec) -> None:
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", spec.name), spec.name
    assert spec.label.strip()
    assert spec.definition.strip() and "\n" not in spec.definition
    assert spec.direction in ("higher", "lower", "neutral")
    assert spec.kernel is not None
    if spec.range is not None:
        low, high = spec.range
        assert low is None or high is None or low < high
    assert REGISTRY.resolve(spec.name) is spec
    for alias in spec.aliases:
        assert REGISTRY.resolve(alias) is spec


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_it_orders_values_by_the_direction(spec: MetricSpec) -> None:
    if spec.direction == "neutral":
        assert not spec.better(1.0, 0.0) and not spec.better(0.0, 1.0)
    else:
        assert spec.better(1.0, 0.0) == (spec.direction == "higher")
        assert spec.better(0.0, 1.0) == (spec.direction == "lower")
    assert not spec.better(math.nan, 0.0)


def test_it_resolves_parametrised_retrieval_names() -> None:
    assert REGISTRY.resolve("P_10").name == "P"
    assert REGISTRY.resolve("nDCG@10").name == "ndcg_cut"
    assert REGISTRY.resolve("ndcg_cut_10").name == "ndcg_cut"
    assert "recip_rank" in REGISTRY and "P@10" in REGISTRY


def test_it_suggests_close_names_for_an_unknown_metric() -> None:
    with pytest.raises(UnknownMetricError, match="did you mean 'map'"):
        REGISTRY.resolve("mpa")
    with pytest.raises(UnknownMetricError, match="^unknown metric 'zzz'$"):
        REGISTRY.resolve("zzz")


def test_it_suggests_within_the_family_keeping_the_parameter() -> None:
    with pytest.raises(UnknownMetricError) as caught:
        REGISTRY.resolve("ndgc_cut_10", suggest_from="retrieval")
    assert (
        str(caught.value) == "unknown metric 'ndgc_cut_10'; did you mean 'ndcg_cut_10' or 'ndcg_exp_cut_10'?"
    )
    with pytest.raises(UnknownMetricError, match=r"did you mean 'P_10'\?$"):
        REGISTRY.resolve("Pp_10", suggest_from="retrieval")
    with pytest.raises(UnknownMetricError, match=r"did you mean 'P\.10'\?$"):
        REGISTRY.resolve("Pp.10", suggest_from="retrieval")
    with pytest.raises(UnknownMetricError, match=r"did you mean 'nDCG@10'"):
        REGISTRY.resolve("nDGC@10", suggest_from="retrieval")
    with pytest.raises(UnknownMetricError, match=r"did you mean 'ndcg_at_k' or "):
        REGISTRY.resolve("ndgc_at_k", suggest_from="recsys")


def test_it_puts_the_closest_parametrised_name_first_across_families() -> None:
    with pytest.raises(UnknownMetricError, match=r"did you mean 'ndcg_cut_10' or "):
        REGISTRY.resolve("ndgc_cut_10")


def test_it_refuses_a_name_two_metrics_claim() -> None:
    registry = MetricRegistry()
    registry.register(MetricSpec("a", "A", "fraud", "higher", "One.", kernel=len))
    with pytest.raises(ValueError, match="taken"):
        registry.register(MetricSpec("b", "B", "recsys", "higher", "Two.", kernel=len, aliases=("a",)))


def test_it_describes_a_metric_as_json_ready_data() -> None:
    described = REGISTRY.resolve("fleiss_kappa").describe()
    assert described == {
        "name": "fleiss_kappa",
        "label": "Fleiss' kappa",
        "family": "agreement",
        "direction": "higher",
        "range": [-1.0, 1.0],
        "unit": "",
        "definition": described["definition"],
        "aliases": [],
    }
