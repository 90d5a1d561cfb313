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


def test_a_card_names_the_strongest_attacker_of_the_family_and_its_figures():
    shape = {"top1": 0.98, "top1_ci": [0.97, 0.99], "top5": 1.0, "top5_ci": [0.99, 1.0], "n": 900}
    summary = {"top1": 0.05, "top1_ci": [0.04, 0.07], "top5": 0.2, "top5_ci": [0.17, 0.23],
               "n": 900}  # fmt: skip
    strongest = {"name": "shape", "knows": "the whole series by shape", **shape, "bound": 0.1,
                 "refused_by": ["shape"], "within": False}  # fmt: skip
    linkage = {
        **LINKAGE,
        "family": {
            "summary": {"knows": "statistics", "release": {"0": summary}},
            "shape": {"knows": "the whole series by shape", "release": {"0": shape}},
        },
        "strongest": strongest,
    }
    card = release_card("stays", POINT, CHECK, linkage, None)
    assert card["refused_by_family_only"] is False  # the strong attacker is above, too
    linkage["bound"] = {**LINKAGE["bound"], "strong_top1": 0.05, "strong_within": True}
    assert release_card("stays", POINT, CHECK, linkage, None)["refused_by_family_only"] is True
    assert card["attacker_family"] == {
        "summary": {"knows": "statistics", **summary},
        "shape": {"knows": "the whole series by shape", **shape},
    }
    assert card["strongest_attacker"] == strongest
    # without the family (a run from before it) both are empty
    plain = release_card("stays", POINT, CHECK, LINKAGE, None)
    assert plain["attacker_family"] == {} and plain["strongest_attacker"] is None
    assert plain["refused_by_family_only"] is False
