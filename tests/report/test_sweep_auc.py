"""Sweep summary: the smallest Δ-AUC per class and the share of series whose Δ-AUC fell."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mimic_deid.report.sweep import auc_change_negative_pct, sweep_row


def per_series(auc, pseudonyms=False):
    frame = pd.DataFrame(
        {
            "group": "all",
            "class_length": [5, 5, 5, 9, 9],
            "auc": auc,
            "first_threshold": 0.0,
            "first_disagreement": [0.0, 1.0, 2.0, np.nan, 3.0],
        }
    )
    if pseudonyms:
        frame.insert(0, "pseudonym", [f"p{i}" for i in range(5)])
    return frame


def test_class_minimum_and_negative_change() -> None:
    baseline = per_series([10.0, 20.0, 30.0, 5.0, np.nan])
    release = per_series([12.0, 15.0, 31.0, 4.0, 8.0], pseudonyms=True)
    linkage = {"baseline": {}, "release": {}}
    utility = pd.DataFrame({"split": [], "setting": [], "roc_auc": [], "pr_auc": []})
    row = sweep_row(
        {"dk": 5, "fk": 2, "heuristic": "range", "method": "adhoc-it1-ns0"},
        {"moved": 0, "suppressed": 0, "records_lost_mean": 0.0, "records_lost_pct_mean": 0.0},
        {"unfeasibility_mean": 0.0, "distortion_mean": 0.0, "iterations_mean": 1.0},
        release,
        baseline,
        linkage,
        utility,
    )
    # class minima: release 12 (5 h) and 4 (9 h); baseline 10 and 5
    assert row["auc_class_min_lowest"] == 4.0
    assert row["auc_class_min_median"] == pytest.approx(8.0)
    assert row["baseline_auc_class_min_lowest"] == 5.0
    assert row["baseline_auc_class_min_median"] == pytest.approx(7.5)
    # changes +2, -5, +1, -1 (the fifth has no baseline value): 2 of 4 fell
    assert row["auc_change_negative_pct"] == pytest.approx(50.0)


def test_misaligned_tables_give_nan() -> None:
    baseline = per_series([1.0] * 5)
    release = per_series([0.0] * 5).iloc[::-1].reset_index(drop=True)
    assert np.isnan(auc_change_negative_pct(release, baseline))
    assert np.isnan(auc_change_negative_pct(release.iloc[:3], baseline))


def test_alternative_attacker_columns_only_when_configured() -> None:
    baseline = per_series([10.0, 20.0, 30.0, 5.0, np.nan])
    release = per_series([12.0, 15.0, 31.0, 4.0, 8.0], pseudonyms=True)
    args = (
        {"dk": 5, "fk": 2, "heuristic": "range", "method": "adhoc-it1-ns0"},
        {"moved": 0, "suppressed": 0, "records_lost_mean": 0.0, "records_lost_pct_mean": 0.0},
        {"unfeasibility_mean": 0.0, "distortion_mean": 0.0, "iterations_mean": 1.0},
    )
    utility = pd.DataFrame({"split": [], "setting": [], "roc_auc": [], "pr_auc": []})
    linkage = {"baseline": {}, "release": {"0": {"top1": 0.2, "top5": 0.6}}}
    plain = sweep_row(*args, release, baseline, linkage, utility)
    assert not any(k.startswith("alt_") for k in plain)
    release = release.assign(auc_alt=[1.0, 2.0, 3.0, 4.0, 5.0], first_disagreement_alt=0.0)
    linkage["alternative"] = {"baseline": {}, "release": {"0": {"top1": 0.5, "top5": 1.0}}}
    row = sweep_row(*args, release, baseline, linkage, utility)
    assert row["alt_auc_median"] == 3.0
    assert row["alt_exact_reconstruction_pct"] == 100.0
    assert row["alt_release_top1_pct_err0"] == pytest.approx(50.0)
    assert row["release_top1_pct_err0"] == pytest.approx(20.0)


def _trust_table() -> pd.DataFrame:
    """A utility/trust_settings.csv: the owner's baseline and every setting, both crosses."""
    from mimic_deid.evaluate.utility import SETTINGS

    rows = [("all", "shipped", "orig. / orig.", "orig", "orig", 0.90)]
    for cross, base in (("shipped", 0.80), ("gap_filled", 0.70)):
        for i, (label, train, test) in enumerate(SETTINGS):
            value = 0.85 if label == "de-id. / de-id." else base - i / 100
            rows.append(("released", cross, label, train, test, value))
    frame = pd.DataFrame(
        rows, columns=["variables", "cross", "setting", "train_data", "test_data", "roc_auc"]
    )
    return pd.concat(
        [
            frame.assign(split="test", pr_auc=frame["roc_auc"] / 2),
            frame.assign(split="train", roc_auc=1.0, pr_auc=1.0),
        ]
    ).assign(task="mortality")


def test_the_public_sweep_row_withholds_what_a_refused_release_s_values_give():
    """Issue 45.3: a refused stays release's perturbation and disagreement cells, and a refused
    ihm48 release's utility, are empty; verdicts, attack figures and baselines stay."""
    baseline = per_series([10.0, 20.0, 30.0, 5.0, np.nan])
    release = per_series([12.0, 15.0, 31.0, 4.0, 8.0], pseudonyms=True)
    release = release.assign(auc_alt=[1.0, 2.0, 3.0, 4.0, 5.0], first_disagreement_alt=0.0)
    linkage = {"baseline": {}, "release": {"0": {"top1": 0.2, "top5": 0.6}},
               "alternative": {"baseline": {}, "release": {"0": {"top1": 0.5, "top5": 1.0}}}}  # fmt: skip
    args = (
        {"dk": 5, "fk": 2, "heuristic": "range", "method": "mdav-k2"},
        {"moved": 0, "suppressed": 1, "records_lost_mean": 0.5, "records_lost_pct_mean": 2.0},
        {"unfeasibility_mean": 0.3, "distortion_mean": 0.4, "iterations_mean": 1.0,
         "sweep": {"mdav_sse_sst": 0.2}},
        release, baseline, linkage, _trust_table(), "shipped",
    )  # fmt: skip
    refused = {"verdict": "refused: linkage bound: ..."}
    certified = {"verdict": "certified"}
    full = sweep_row(*args, {"stays": certified, "ihm48": certified}, withhold_refused=True)
    assert full == sweep_row(*args, {"stays": certified, "ihm48": certified})
    stays_values = [
        "unfeasibility_mean", "distortion_mean", "iterations_mean", "mdav_sse_sst", "auc_median",
        "first_disagreement_median", "exact_reconstruction_pct", "auc_class_min_lowest",
        "auc_class_min_median", "auc_change_negative_pct", "alt_auc_median",
        "alt_first_disagreement_median", "alt_exact_reconstruction_pct",
    ]  # fmt: skip
    assert all(pd.notna(full[c]) for c in stays_values)
    row = sweep_row(*args, {"stays": refused, "ihm48": certified}, withhold_refused=True)
    assert list(row) == list(full)  # the same columns, in the same order
    empty = [c for c in row if pd.isna(row[c]) and pd.notna(full[c])]
    assert empty == stays_values
    assert row["verdict_stays"] == refused["verdict"] and row["release_top1_pct_err0"] == 20.0
    row = sweep_row(*args, {"stays": certified, "ihm48": refused}, withhold_refused=True)
    empty = {c for c in row if pd.isna(row[c]) and pd.notna(full[c])}
    utility = {c for c in full if c.startswith(("test_", "delta_roc_auc"))}
    assert empty == {c for c in utility if "orig_orig" not in c}
    assert {"delta_roc_auc", "delta_roc_auc_all"} <= empty
    assert row["test_roc_auc_orig_orig_all"] == 0.90  # the owner's baseline stays
    with pytest.raises(ValueError) as err:
        sweep_row(*args, withhold_refused=True)
    assert str(err.value) == "sweep_row: withhold_refused needs the point's checks"


def test_utility_columns_name_the_baselines_and_pick_the_headline_cross():
    from mimic_deid.report.sweep import utility_columns

    utility = _trust_table()
    expected = {
        "test_roc_auc_orig_orig_all": 0.90,
        "test_roc_auc_orig_orig_released_shipped": 0.80,
        "test_roc_auc_orig_orig_released_gap_filled": 0.70,
        "test_roc_auc_deid_deid": 0.85,
        "test_roc_auc_orig_deid_shipped": 0.78,
        "test_roc_auc_orig_deid_gap_filled": 0.68,
        "test_roc_auc_deid_orig_shipped": 0.77,
        "test_roc_auc_deid_orig_gap_filled": 0.67,
    }
    for cross in ("shipped", "gap_filled"):
        cols = utility_columns(utility, cross)
        headline = {
            f"test_roc_auc_{name}": expected[f"test_roc_auc_{name}_{cross}"]
            for name in ("orig_orig_released", "orig_deid", "deid_orig")
        }
        roc = {k: v for k, v in cols.items() if k.startswith("test_roc_auc")}
        assert roc == pytest.approx({**expected, **headline})
        assert cols["utility_cross"] == cross
        assert cols["test_pr_auc_orig_orig_all"] == pytest.approx(0.45)
        # the ΔROC-AUC columns: de-id./orig. against each baseline, of the headline cross
        assert cols["delta_roc_auc"] == pytest.approx(
            headline["test_roc_auc_deid_orig"] - headline["test_roc_auc_orig_orig_released"]
        )
        assert cols["delta_roc_auc_all"] == pytest.approx(
            headline["test_roc_auc_deid_orig"] - expected["test_roc_auc_orig_orig_all"]
        )
        assert len(cols) == 1 + 2 * (len(expected) + len(headline)) + 2
