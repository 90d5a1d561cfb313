"""The privacy-utility frontier (evaluate.frontier) assembled from real release cards."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from frontier_helpers import documented_problems, sweep

from mimic_deid.core.atomic import write_csv, write_json
from mimic_deid.core.errors import InputDataError
from mimic_deid.evaluate.frontier import (
    BOTH,
    FRONTIER_SETTINGS,
    METRICS,
    best_certified,
    frontier_columns,
    frontier_row,
    frontier_table,
    knob_of,
)
from mimic_deid.evaluate.utility import TASKS


def test_the_frontier_has_a_row_per_release_with_knob_verdict_attacker_and_utility():
    table = frontier_table(sweep())
    assert list(table.columns) == frontier_columns()
    assert len(table) == 6
    assert list(table["release"]) == ["stays", "ihm48"] * 3  # the cards' order
    assert list(table["method"]) == ["mdav"] * 4 + ["noise"] * 2
    assert list(table["knob"]) == ["fk"] * 4 + ["scale"] * 2
    assert list(table["knob_value"]) == [5.0, 5.0, 10.0, 10.0, 4.0, 4.0]
    assert list(table["k"]) == [5, 5, 10, 10, 10, 10]
    assert table["bound"].tolist() == pytest.approx([0.2, 0.2, 0.1, 0.1, 0.1, 0.1])
    verdicts = ["certified", "refused", "certified", "certified", "refused", "certified"]
    assert list(table["verdict"]) == verdicts
    ihm = table.iloc[3]
    assert (ihm["attacker"], ihm["attacker_n"]) == ("shape", 245)
    assert (ihm["attacker_top1"], ihm["attacker_top1_lo"], ihm["attacker_top1_hi"]) == (
        pytest.approx(0.06),
        pytest.approx(0.03),
        pytest.approx(0.09),
    )
    # the test split, original side as recorded; the owner's baseline on every variable
    assert ihm["mortality_orig_orig_all_roc_auc"] == pytest.approx(0.86)
    assert ihm["mortality_deid_deid_roc_auc"] == pytest.approx(0.72)
    assert ihm["mortality_deid_deid_roc_auc_lo"] == pytest.approx(0.68)
    assert ihm["mortality_deid_deid_roc_auc_hi"] == pytest.approx(0.75)
    assert ihm["mortality_deid_orig_roc_auc"] == pytest.approx(0.77)
    assert ihm["mortality_deid_orig_pr_auc"] == pytest.approx(0.385)
    assert ihm["mortality_deid_deid_roc_auc_ceiling"] == pytest.approx(0.79)  # the release's test
    assert ihm["long_stay_deid_deid_roc_auc_ceiling"] == pytest.approx(0.69)
    assert ihm["long_stay_deid_orig_roc_auc"] == pytest.approx(0.67)
    assert ihm["long_stay_orig_orig_all_roc_auc"] == pytest.approx(0.76)
    assert (table["utility_cross"] == "shipped").all()
    # a stays release has no utility task
    utility = [c for c in frontier_columns() if c.startswith(tuple(TASKS))]
    # each metric with its interval, and the de-id. / de-id. ROC-AUC ceiling of each task
    assert len(utility) == len(TASKS) * (len(FRONTIER_SETTINGS) * len(METRICS) * 3 + 1)
    assert "mortality_deid_deid_roc_auc_ceiling" in utility
    assert table.loc[table["release"] == "stays", utility].isna().all().all()
    assert table.loc[table["release"] == "ihm48", utility].notna().all().all()


def test_the_like_for_like_frontier_reads_the_gap_filled_rows_but_the_owner_as_recorded():
    row = frontier_row(sweep()[3], cross="gap_filled")
    assert row["utility_cross"] == "gap_filled"
    assert row["mortality_deid_orig_roc_auc"] == pytest.approx(0.78)  # gap-filled: + 0.01
    assert row["mortality_deid_deid_roc_auc"] == pytest.approx(0.72)
    assert row["mortality_orig_orig_all_roc_auc"] == pytest.approx(0.86)
    with pytest.raises(InputDataError) as err:
        frontier_row(sweep()[3], cross="filled")
    assert str(err.value) == "frontier: cross 'filled', expected one of ['shipped', 'gap_filled']"


def test_a_card_without_the_family_or_a_utility_row_is_named():
    plain = sweep()[3]
    plain["strongest_attacker"] = None
    with pytest.raises(InputDataError) as err:
        frontier_table([plain])
    assert str(err.value) == (
        "release card of 'ihm48_50_10_range_mdav': no 'strongest_attacker' with a 'top1' (the "
        "attacker family was not measured); the frontier places a release by its strongest "
        "attacker"
    )
    bare = {k: v for k, v in sweep()[3].items() if k != "passed"}
    bare["point"] = {k: v for k, v in bare["point"].items() if k != "heuristic"}
    with pytest.raises(InputDataError) as err:
        frontier_table([bare])
    assert str(err.value) == (
        "release card of 'ihm48 {'dk': 50, 'fk': 10, 'method': 'mdav'}': missing passed, "
        "point.heuristic (a card of evaluate.card)"
    )
    short = sweep()[3]
    short["utility"] = [u for u in short["utility"] if u["task"] != "long_stay"]
    with pytest.raises(InputDataError) as err:
        frontier_table([short])
    assert str(err.value) == (
        "release card of 'ihm48_50_10_range_mdav': no utility entry of task 'long_stay', "
        "variables 'all', setting 'orig. / orig.', split 'test', cross 'shipped' (expected "
        "every row of trust_settings.csv)"
    )


def test_a_metric_the_card_says_is_not_computable_is_empty():
    ihm = sweep()[3]
    for entry in ihm["utility"]:
        if entry["setting"] == "de-id. / de-id." and entry["task"] == "long_stay":
            entry.update(roc_auc=None, roc_auc_lo=None, roc_auc_hi=None,
                         not_computable="not computable: the split holds one label")  # fmt: skip
    row = frontier_row(ihm)
    assert np.isnan(row["long_stay_deid_deid_roc_auc"])
    assert row["long_stay_deid_deid_pr_auc"] == pytest.approx(0.31)


def test_a_release_of_no_series_has_no_attacker_and_keeps_its_row():
    """Issue 48: a release that publishes no series has no attack to place it by; its row
    keeps its point and verdict, its attacker cells empty, and it is never the best."""
    from mimic_deid.evaluate.registry import NO_SERIES

    ihm = sweep()[3]
    ihm.update(strongest_attacker=None, attackers={}, privacy_not_computable=NO_SERIES)
    row = frontier_row(ihm)
    assert row["attacker"] == "" and row["verdict"] == frontier_row(sweep()[3])["verdict"]
    assert all(np.isnan(row[c]) for c in ("attacker_top1", "attacker_top1_lo", "attacker_n"))
    ihm.pop("privacy_not_computable")
    with pytest.raises(InputDataError, match="no 'strongest_attacker' with a 'top1'"):
        frontier_row(ihm)


def test_knob_of_each_method():
    assert knob_of("mdav", 20) == ("fk", 20.0)
    assert knob_of("adhoc-it50-ns0.01", 5) == ("fk", 5.0)
    assert knob_of("kapra-P5-paa4-sax10-none", 10) == ("fk", 10.0)
    assert knob_of("noise-sc16", 10) == ("scale", 16.0)


def test_the_best_certified_release_per_task_and_setting():
    table = frontier_table(sweep())
    # mdav fk 5 (0.75) is refused; mdav fk 10 and noise tie at 0.72: the lower top-1 wins
    best = best_certified(table, "mortality", "deid_deid")
    assert (best["method_label"], best["fk"]) == ("noise-sc4", 10)
    assert best["mortality_deid_deid_roc_auc"] == pytest.approx(0.72)
    refused = table.assign(verdict="refused")
    assert best_certified(refused, "mortality", "deid_orig") is None
    # each setting its own best, and the mean of the two a third: mdav fk 10
    table.loc[5, ["mortality_deid_deid_roc_auc", "mortality_deid_orig_roc_auc"]] = [0.73, 0.60]
    table.loc[3, ["mortality_deid_deid_roc_auc", "mortality_deid_orig_roc_auc"]] = [0.70, 0.76]
    table.loc[1, ["verdict", "mortality_deid_orig_roc_auc"]] = ["certified", 0.78]
    table.loc[1, "mortality_deid_deid_roc_auc"] = 0.50
    picked = {tag: best_certified(table, "mortality", tag) for tag in ("deid_deid", "deid_orig")}
    assert picked["deid_deid"]["method_label"] == "noise-sc4"
    assert (picked["deid_orig"]["method_label"], picked["deid_orig"]["fk"]) == ("mdav", 5)
    both = best_certified(table, "mortality", BOTH)
    assert (both["method_label"], both["fk"]) == ("mdav", 10)  # 0.73 against 0.665, 0.64
    # a release missing either setting is not ranked by both
    table.loc[3, "mortality_deid_deid_roc_auc"] = float("nan")
    assert best_certified(table, "mortality", BOTH)["method_label"] == "noise-sc4"
    with pytest.raises(InputDataError) as err:
        best_certified(table, "mortality", "orig_deid")
    assert str(err.value) == (
        "frontier table: no column 'mortality_orig_deid_roc_auc' (task 'mortality', setting "
        "'orig_deid'); expected the columns of mimic_deid.evaluate.frontier.frontier_columns"
    )


def test_docs_give_the_frontier_schema_and_the_csv_is_byte_deterministic(tmp_path):
    cards = sweep()
    paths = []
    for i in range(2):
        for j, c in enumerate(cards):
            write_json(c, tmp_path / f"card{i}{j}.json")
        out = tmp_path / f"frontier{i}.csv"
        write_csv(frontier_table(json.loads((tmp_path / f"card{i}{j}.json").read_text())
                                 for j in range(len(cards))), out)  # fmt: skip
        paths.append(out)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    back = pd.read_csv(paths[0])
    assert documented_problems(frontier_table(cards)) == []
    assert documented_problems(back) == []
    assert list(back.columns) == frontier_columns()
    assert best_certified(back, "mortality", "deid_deid")["method_label"] == "noise-sc4"
