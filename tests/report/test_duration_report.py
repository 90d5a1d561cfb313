"""The §6.1 duration table (rule duration_classes; the report draws it) and
``duration.method`` through the real workflow."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from workflow_helpers import ROOT, prepare, snakemake

from mimic_deid.deid.duration import assign_duration_classes
from mimic_deid.deid.duration_methods import DURATION_COLUMNS, duration_methods_table
from mimic_deid.report.content import item_names, stage_items
from mimic_deid.stages import REPORT_MODULES


def test_duration_table_rows_for_both_methods() -> None:
    lengths = np.array([48] * 7 + [1, 30])
    greedy = assign_duration_classes(lengths, 3, "greedy")
    table = duration_methods_table(lengths, greedy, 3, "greedy")
    assert list(table.columns) == list(DURATION_COLUMNS)
    assert table["method"].tolist() == ["greedy", "algorithm3"]
    assert table["chosen"].tolist() == ["yes", "no"]
    g, a3 = table.iloc[0], table.iloc[1]
    # greedy: 48 h keeps its 7; 30 h and 1 h are two series, too few: both suppressed
    assert (g["moved"], g["suppressed"]) == (0, 2)
    # Algorithm 3: three 48 h stay, three go to 30 h, the last 48 h and the 30 h go to 1 h
    assert (a3["moved"], a3["suppressed"]) == (5, 0)
    lost = lengths - assign_duration_classes(lengths, 3, "algorithm3")
    assert a3["records_lost_mean"] == pytest.approx(lost.mean())
    assert a3["records_lost_sd"] == pytest.approx(lost.std())
    assert a3["records_lost_pct_mean"] == pytest.approx(np.mean(100 * lost / lengths))
    # before de-identification: the 30 h and the 1 h series are each alone in their class
    assert table["unique_before"].tolist() == [2, 2]
    assert table["at_most_5_before"].tolist() == [2, 2]


def test_duration_table_uses_the_released_classes_for_the_chosen_method() -> None:
    lengths = np.array([5, 5, 4, 4])
    released = np.array([4, 4, 4, 4])  # as read from duration.parquet
    table = duration_methods_table(lengths, released, 2, "algorithm3")
    row = table.set_index("method").loc["algorithm3"]
    assert row["moved"] == 2 and row["chosen"] == "yes"
    assert table.set_index("method").loc["greedy", "moved"] == 0


def test_duration_table_is_a_report_item_with_a_caption() -> None:
    assert "duration_methods" in item_names("public", "table", REPORT_MODULES)
    item = next(i for i in stage_items(REPORT_MODULES) if i.name == "duration_methods")
    assert item.section == "Duration classes" and "{duration_method}" in item.caption
    assert (ROOT / "workflow" / "report" / "duration_methods.rst").is_file()


@pytest.mark.workflow
def test_algorithm3_through_the_workflow(tmp_path) -> None:
    config = prepare(tmp_path, {"duration": {"method": "algorithm3"}})
    targets = ["results/stays/dk10/duration.json", "results/private/stays/dk10/duration.parquet"]
    snakemake(tmp_path, "--cores", "2", *targets, config=config)
    meta = pd.read_parquet(tmp_path / "results/private/series/stays/meta.parquet")
    classes = pd.read_parquet(tmp_path / targets[1]).set_index("icustay_id").loc[meta.icustay_id]
    lengths = meta["length"].to_numpy()
    assert np.array_equal(
        classes["class_length"].to_numpy(), assign_duration_classes(lengths, 10, "algorithm3")
    )
    summary = json.loads((tmp_path / targets[0]).read_text())
    # the §6.1 table of both methods and the hours lost, written beside the classes
    methods = pd.read_parquet(tmp_path / "results/private/stays/dk10/duration_methods.parquet")
    pd.testing.assert_frame_equal(
        methods, duration_methods_table(lengths, classes["class_length"], 10, "algorithm3")
    )
    lost = pd.read_parquet(tmp_path / "results/private/stays/dk10/records_lost.parquet")
    assert (
        lost.set_index("icustay_id").loc[meta.icustay_id, "records_lost"].tolist()
        == (lengths - classes["class_length"].to_numpy()).tolist()
    )
    released = classes["class_length"].to_numpy() > 0
    # only the series shorter than the shortest released class are suppressed
    assert summary["suppressed"] == int(np.sum(lengths < lengths[released].min()))
    assert summary["moved"] == int(np.sum(released & (classes["class_length"] < lengths)))
    # switching back to greedy re-runs the duration rule (a changed parameter) and differs
    greedy = prepare(tmp_path, {"duration": {"method": "greedy"}})
    snakemake(tmp_path, "--cores", "2", *targets, config=greedy)
    back = pd.read_parquet(tmp_path / targets[1]).set_index("icustay_id").loc[meta.icustay_id]
    assert np.array_equal(
        back["class_length"].to_numpy(), assign_duration_classes(lengths, 10, "greedy")
    )
