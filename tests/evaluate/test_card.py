"""The release card (evaluate.card) and its report table."""

from __future__ import annotations

import pandas as pd

from mimic_deid.evaluate.card import NOT_PROTECTED, release_card
from mimic_deid.report.tables import card_table

POINT = {"dk": 50, "fk": 10, "heuristic": "range", "method": "adhoc-it50-ns0.01"}
LINKAGE = {
    "release": {"0": {"top1": 0.03, "top1_ci": [0.02, 0.04], "top5": 0.1, "top5_ci": [0.08,
                                                                                    0.12], "n": 900},
                "0.1": {"top1": 0.01, "top1_ci": [0.0, 0.02], "top5": 0.05, "top5_ci": [0.04,
                                                                                     0.07], "n": 900}},
    "strong": {"release": {"0": {"top1": 0.12, "top1_ci": [0.10, 0.14], "top5": 0.3,
                                 "top5_ci": [0.27, 0.33], "n": 900}}},
    "bound": {"error": 0.0, "k": 10, "top1": 0.1, "strong_top1": 0.12,
              "strong_top1_ci": [0.10, 0.14], "n": 900, "within": False},
}  # fmt: skip
CHECK = {"passed": False, "verdict": "refused: linkage bound: strong attacker's top-1 12.0 % > "
         "bound 1/10 = 10.0 % (95 % interval 10.0 % to 14.0 %, 900 series)"}  # fmt: skip


def _utility() -> pd.DataFrame:
    rows = []
    for setting, auc in (("orig. / orig.", 0.88), ("de-id. / de-id.", 0.83),
                         ("orig. / de-id.", 0.55), ("de-id. / orig.", 0.8)):  # fmt: skip
        for cross in ("shipped", "gap_filled"):
            for split in ("train", "test"):
                rows.append(dict(task="mortality", variables="released", cross=cross,
                                 setting=setting, split=split, roc_auc=auc, roc_auc_lo=auc - 0.02,
                                 roc_auc_hi=auc + 0.02, pr_auc=0.4))  # fmt: skip
    return pd.DataFrame(rows)


def test_a_card_holds_promises_attacks_against_the_bound_and_the_verdict():
    card = release_card("stays", POINT, CHECK, LINKAGE, None)
    assert card["release"] == "stays" and card["point"] == POINT
    assert (card["passed"], card["verdict"]) == (False, CHECK["verdict"])
    assert card["method"]["name"] == "adhoc"
    assert card["method"]["params"] == {"iterations": 50, "noise_sd": 0.01}
    assert "at most 1/fk" in card["method"]["promises"] and card["method"]["not_promised"]
    assert (card["k"], card["dk"], card["l"]) == (10, 50, None)
    # each attacker at its most precise knowledge, with both intervals
    assert card["attackers"] == {
        "seed": {"error": 0.0, "top1": 0.03, "top1_ci": [0.02, 0.04], "top5": 0.1,
                 "top5_ci": [0.08, 0.12], "n": 900},
        "strong": {"error": 0.0, "top1": 0.12, "top1_ci": [0.10, 0.14], "top5": 0.3,
                   "top5_ci": [0.27, 0.33], "n": 900},
    }  # fmt: skip
    assert card["bound"] == LINKAGE["bound"] and card["utility"] is None
    assert card["not_protected"] == list(NOT_PROTECTED)


def test_an_ihm48_card_shows_the_test_utility_beside_the_seeds_figures():
    card = release_card("ihm48", POINT, CHECK, LINKAGE, 2, _utility())
    assert card["l"] == 2
    assert [(u["setting"], u["roc_auc"], u["seed_roc_auc"]) for u in card["utility"]] == [
        ("orig. / orig.", 0.88, 0.85),
        ("de-id. / de-id.", 0.83, 0.83),
        ("orig. / de-id.", 0.55, 0.82),
        ("de-id. / orig.", 0.8, 0.64),
    ]  # test split, original side as recorded, seed Table 6.4


def test_the_card_table_prints_rates_with_intervals_and_the_verdict():
    table = card_table([release_card("stays", POINT, CHECK, LINKAGE, None)])
    assert table.iloc[0].to_dict() == {
        "release": "stays",
        "method": "adhoc-it50-ns0.01",
        "dk": 50,
        "k": 10,
        "l": "-",
        "seed top-1": "3.0 [2.0, 4.0] %",
        "strong top-1": "12.0 [10.0, 14.0] %",
        "strong top-5": "30.0 [27.0, 33.0] %",
        "bound 1/k": "10.0 %",
        "verdict": CHECK["verdict"],
    }
    assert card_table([]).to_dict("list") == {"note": ["no release card in this run"]}


def test_a_card_of_a_release_refused_for_its_size_names_split_counts_and_what_fits():
    """Issue 48: the card carries the groups the release could not form (from check.json) and
    the utility rows that could not be computed, with their reasons and null metrics."""
    reason = (
        "split 'test': 36 series, fewer than deid.dk = 50 (a duration class needs dk series of "
        "one group); the largest dk that fits: 36"
    )
    unpublished = [{"group": "test", "series": 36, "parameter": "deid.dk", "value": 50,
                    "largest": 36, "reason": reason}]  # fmt: skip
    check = {
        "passed": False,
        "verdict": f"refused: not formed at the configured sizes: {reason}",
        "unpublished": unpublished,
    }
    why = "not computable: the de-identified data hold no series of split 'test'"
    utility = _utility().assign(not_computable="")
    lost = utility["setting"].isin(["de-id. / de-id.", "orig. / de-id."]) & (
        utility["split"] == "test"
    )
    utility.loc[lost, ["roc_auc", "roc_auc_lo", "roc_auc_hi", "pr_auc"]] = float("nan")
    utility.loc[lost, "not_computable"] = why
    card = release_card("ihm48", POINT, check, LINKAGE, 2, utility)
    assert (card["passed"], card["verdict"]) == (False, check["verdict"])
    assert card["unpublished"] == unpublished
    assert card["utility_not_computable"] == [why]
    by_setting = {u["setting"]: u for u in card["utility"]}
    assert by_setting["de-id. / de-id."]["not_computable"] == why
    assert "not_computable" not in by_setting["de-id. / orig."]
    assert by_setting["de-id. / orig."]["roc_auc"] == 0.8
    # a card from an older check.json (no unpublished) and a stays card: nothing refused
    assert release_card("stays", POINT, CHECK, LINKAGE, None)["unpublished"] == []
    assert release_card("stays", POINT, CHECK, LINKAGE, None)["utility_not_computable"] == []
