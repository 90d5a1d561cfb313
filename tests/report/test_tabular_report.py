"""Report tables and figures of the tabular stage (items tabular_* of report.tabular.ITEMS)."""

from __future__ import annotations

import pandas as pd
import pytest
from test_tabular import HIERARCHIES, synthetic_sources

from mimic_deid.core.seeding import derive_rng
from mimic_deid.report import content
from mimic_deid.report import tabular as tab
from mimic_deid.stages import REPORT_MODULES
from mimic_deid.tabular import (
    DEMOGRAPHIC_QIS,
    check_tabular_release,
    concealing_grid,
    demographic_uniqueness,
    demographics,
    dps_summary,
    epsilon_la_grid,
    inverse_grid,
    load_hierarchies,
    ola_grid,
    procedure_uniqueness,
    release_table,
)
from mimic_deid.tabular.stage import REPORT_INPUTS as TABULAR_REPORT_INPUTS


@pytest.fixture(scope="module")
def outputs() -> dict:
    src = synthetic_sources(800, 5)
    hier = load_hierarchies(HIERARCHIES)
    tables = {
        n: demographics(
            src["patients"], src["admissions"], src["procedures"], n, derive_rng(1, "y")
        )
        for n in (0, 1)
    }
    qis = [*DEMOGRAPHIC_QIS, "proc_1"]
    grid, summary = dps_summary([0.1, 0.5], [1.0, 2.0], [5, 50], len(tables[1]), 1e-4)
    return {
        "uniqueness": {
            "demographics": demographic_uniqueness(tables[0], 3, lambda r: derive_rng(1, "u", r)),
            "procedures": procedure_uniqueness(src["procedures"]),
        },
        "ola": ola_grid(tables[1], hier, qis, [2, 5], [0, 10], ["prec", "entropy"]),
        "inverse": inverse_grid(tables[1], hier, {"all": qis}, [0.5], [0, 50]),
        "concealing": concealing_grid(
            {1: tables[1]}, hier, {"A": [0.01], "B": [0.05]}, [0.5], [0, 10]
        ),
        "dps_grid": grid,
        "dps": summary,
        "epsilon_la": epsilon_la_grid(
            tables[1],
            hier,
            ["yob", "gender"],
            3,
            0.75,
            5,
            [0.0, 0.1],
            [0.5, 1.0],
            2,
            1,
        ),
    }


def test_tabular_items_are_registered():
    names = [i.name for i in content.stage_items(REPORT_MODULES) if i.name.startswith("tabular_")]
    assert names == [
        "tabular_uniqueness", "tabular_loss_vs_suppression", "tabular_nodes_checked",
        "tabular_inverse_ola", "tabular_concealing", "tabular_dps", "tabular_epsilon_la",
        "tabular_release", "tabular_joint_risk",
    ]  # fmt: skip
    assert set(TABULAR_REPORT_INPUTS.values()) == {
        "uniqueness", "ola", "inverse", "concealing", "dps_grid", "dps", "epsilon_la", "release",
        "check", "joint_risk",
    }  # fmt: skip


def test_tables(outputs):
    uniq = tab.uniqueness_table(outputs)
    assert uniq["view"].tolist()[:3] == [
        "demographics, YOB ~ N(mean, sd) (3 draws)",
        "demographics, age uniform 0-99 (3 draws)",
        "demographics without YOB",
    ]
    checked = tab.nodes_checked_table(outputs)
    assert checked.columns.tolist() == ["k", "lattice nodes", "max_sup 0", "max_sup 10"]
    assert checked["k"].tolist() == [2, 5]
    conc = tab.concealing_table(outputs)
    assert {"1/m model A", "1/m model B"} <= set(conc.columns) and len(conc) == 2
    dps = tab.dps_table(outputs)
    assert dps["beta"].iloc[-1] == (
        "smallest k of those tried with delta <= 0.0001 everywhere: 50; smallest integer k: 41"
    )
    assert tab.inverse_table(outputs)["procedures kept"].str.startswith("proc_1: ").all()


def test_the_ola_release_row_by_row_with_the_verdict_of_its_check(outputs):
    table = demographics(*(synthetic_sources(800, 5)[k] for k in ("patients", "admissions",
                         "procedures")), 1, derive_rng(1, "y"))  # fmt: skip
    hier = load_hierarchies(HIERARCHIES)
    qis = [*DEMOGRAPHIC_QIS, "proc_1"]
    release, summary = release_table(table, hier, qis, 3, 10, "prec")
    check = check_tabular_release(release, summary, table, hier, qis, k=3, max_sup=10)
    shown = tab.ola_release_table({"release": summary, "check": check})
    rows = dict(zip(shown["OLA release"], shown["value"], strict=True))
    assert rows["k"] == "3" and rows["max_sup (% of records)"] == "10"
    assert rows["level of yob"] == str(summary["levels"]["level_yob"])
    assert rows["records released"] == str(summary["rows_released"])
    assert rows["verdict of its check"] == "certified"
    assert tab.ola_release_table({"release": summary})["value"].iloc[-1] == "not checked"
    assert tab.ola_release_table({}).equals(pd.DataFrame({"note": ["tabular stage not run"]}))


def test_figures_and_not_run(outputs, tmp_path):
    info = tab.plot_loss_vs_suppression(outputs, tmp_path / "a.png")
    assert [a["title"] for a in info["axes"]] == ["prec", "entropy"]
    assert info["axes"][0]["legend"] == ["k = 2", "k = 5"]
    info = tab.plot_epsilon_la(outputs, tmp_path / "b.png")
    assert info["axes"][0]["legend"] == ["eps' = 0.5", "eps' = 1", "uniform node"]
    assert (tmp_path / "b.png").stat().st_size > 5000
    for make in (tab.uniqueness_table, tab.inverse_table, tab.dps_table):
        assert make({}).equals(pd.DataFrame({"note": ["tabular stage not run"]}))
    info = tab.plot_loss_vs_suppression({}, tmp_path / "c.png")
    assert info["axes"][0]["legend"] == []
    # a k above the table's rows (issue 48): no point drawn for it, nothing fails
    grid = outputs["ola"].copy()
    grid.loc[grid["k"] == 5, ["loss_normalised", "checked"]] = float("nan")
    grid.loc[grid["k"] == 5, "not_computable"] = "not computable: k = 5 exceeds ..."
    info = tab.plot_loss_vs_suppression(dict(outputs, ola=grid), tmp_path / "d.png")
    assert info["axes"][0]["legend"] == ["k = 2"]
    la = outputs["epsilon_la"].assign(p_good=float("nan"), not_computable="not computable: ...")
    info = tab.plot_epsilon_la(dict(outputs, epsilon_la=la), tmp_path / "e.png")
    assert all(a["legend"] == [] for a in info["axes"])
