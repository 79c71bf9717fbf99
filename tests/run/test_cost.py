"""Cell costs and longest-first order (:mod:`ltr_bench.run.cost`)."""

from __future__ import annotations

from types import SimpleNamespace

from ltr_bench.run.cost import CellCosts, longest_first


def _record(config, dataset, seconds, ok=True):
    return SimpleNamespace(
        ok=ok, config_key=config, dataset=dataset, stage_seconds={"fit": seconds, "load": 1.0}
    )


def test_unknown_cells_go_first_in_plan_order_then_the_longest():
    assert longest_first([2.0, None, 9.0, None]) == 1
    assert longest_first([2.0, 9.0, 3.0, 9.0]) == 1  # the earliest of equals
    assert longest_first([4.0]) == 0


def test_a_cells_cost_is_the_mean_wall_of_its_configuration_on_its_dataset():
    costs = CellCosts([_record("a", "d", 3.0), _record("a", "d", 5.0), _record("a", "e", 99.0)])
    costs.add(_record("b", "d", 7.0, ok=False))  # a failed cell says nothing of the cost
    assert costs(SimpleNamespace(config_key="a", dataset="d")) == 5.0  # (4 + 6) / 2
    assert costs(SimpleNamespace(config_key="b", dataset="d")) is None
    costs.add(_record("b", "d", 1.0))
    assert costs(SimpleNamespace(config_key="b", dataset="d")) == 2.0
