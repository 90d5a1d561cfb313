"""The release card (evaluate.card) and its report table."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from doc_schemas import documented_schema, schema_paths, schema_problems

from mimic_deid.core.atomic import write_json
from mimic_deid.core.errors import InputDataError
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
    """A trust_settings.csv of one task: ROC-AUC by setting, +0.01 gap-filled, -0.05 on test."""
    rows = []
    for setting, auc in (("orig. / orig.", 0.88), ("de-id. / de-id.", 0.83),
                         ("orig. / de-id.", 0.55), ("de-id. / orig.", 0.8)):  # fmt: skip
        for cross, shift in (("shipped", 0.0), ("gap_filled", 0.01)):
            for split, drop in (("train", 0.0), ("test", 0.05)):
                value = round(auc + shift - drop, 2)
                rows.append(dict(task="mortality", variables="released", cross=cross,
                                 setting=setting, split=split, roc_auc=value,
                                 roc_auc_lo=value - 0.02, roc_auc_hi=value + 0.02, pr_auc=0.4,
                                 pr_auc_lo=0.35, pr_auc_hi=0.45, n=300, positives=40))  # fmt: skip
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
    assert card["plausible_values"] is None  # the check's figures hold no claim 16
    plausible = {"variables": 16, "values": 900, "discrete": ["gcs_total"], "static": ["height"]}
    checked = dict(CHECK, checks={"plausible_values": plausible})
    assert release_card("stays", POINT, checked, LINKAGE, None)["plausible_values"] == plausible


def test_an_ihm48_card_holds_seed_tables_6_3_and_6_4_and_the_like_for_like_rows():
    card = release_card("ihm48", POINT, CHECK, LINKAGE, 2, _utility())
    assert card["l"] == 2
    assert len(card["utility"]) == 16  # every row of the table: 4 settings x 2 sides x 2 splits

    def rows(**where):
        return [(u["setting"], u["roc_auc"], u["seed_roc_auc"], u["seed_pr_auc"])
                for u in card["utility"] if all(u[k] == v for k, v in where.items())]  # fmt: skip

    # Table 6.3: the training split, the original side as recorded, beside the seed's figures
    assert (
        rows(seed_table="6.3")
        == rows(split="train", cross="shipped")
        == [
            ("orig. / orig.", 0.88, 0.87, 0.54),
            ("de-id. / de-id.", 0.83, 0.87, 0.54),
            ("orig. / de-id.", 0.55, 0.86, 0.51),
            ("de-id. / orig.", 0.8, 0.64, 0.22),
        ]
    )
    # Table 6.4: the test split
    assert (
        rows(seed_table="6.4")
        == rows(split="test", cross="shipped")
        == [
            ("orig. / orig.", 0.83, 0.85, 0.49),
            ("de-id. / de-id.", 0.78, 0.83, 0.45),
            ("orig. / de-id.", 0.5, 0.82, 0.40),
            ("de-id. / orig.", 0.75, 0.64, 0.22),
        ]
    )
    # like-for-like: the original side gap-filled, both splits; the seed has no such figure
    assert rows(cross="gap_filled", split="test") == [
        ("orig. / orig.", 0.84, None, None),
        ("de-id. / de-id.", 0.79, None, None),
        ("orig. / de-id.", 0.51, None, None),
        ("de-id. / orig.", 0.76, None, None),
    ]
    assert {u["seed_table"] for u in card["utility"] if u["cross"] == "gap_filled"} == {None}
    first = card["utility"][0]
    assert (first["pr_auc_lo"], first["pr_auc_hi"], first["n"], first["positives"]) == (
        0.35, 0.45, 300, 40)  # fmt: skip


def _pairing() -> pd.DataFrame:
    """A cross_release.csv: this release against a (k,P) one, and two other releases."""
    this = "ihm48_50_10_range_adhoc-it50-ns0.01"
    row = dict(targets=200, candidates=900, paired=12.5, rate=0.0625, rate_lo=0.04,
               rate_hi=0.1, chance=1 / 90, chance_columns="duration_class;age;gender",
               features=20, shape_rate=0.08, shape_rate_lo=0.05, shape_rate_hi=0.12,
               strongest_attacker="shape", strongest_rate=0.08)  # fmt: skip
    return pd.DataFrame(
        [
            dict(release_a=this, release_b="stays_50_10_range_adhoc-it50-ns0.01",
                 certified_a=True, certified_b=True, **row),
            dict(release_a="ihm48_50_10_range_kapra-k10-P2", release_b=this, certified_a=True,
                 certified_b=True, **row, groups_below_k_pct_max=4.5,
                 groups_below_k_column="k_group_glucose"),
            # a refused release: published by no one, so never on this release's card
            dict(release_a=this, release_b="stays_50_10_range_genetic-x", certified_a=True,
                 certified_b=False, **row),
            dict(release_a="stays_50_10_range_kapra-k10-P2", release_b="stays_x",
                 certified_a=True, certified_b=True, **row),
        ]
    )  # fmt: skip


def test_the_card_lists_the_pairings_with_certified_releases_only():
    pairing = _pairing()
    card = release_card("ihm48", POINT, CHECK, LINKAGE, 2, _utility(), pairing)
    assert [p["other"] for p in card["pairing"]] == [
        "stays_50_10_range_adhoc-it50-ns0.01",
        "ihm48_50_10_range_kapra-k10-P2",
    ]
    # every release A refused: left is this release (A) with its certified B
    refused = pairing.assign(certified_a=False)
    card = release_card("ihm48", POINT, CHECK, LINKAGE, 2, _utility(), refused)
    assert [p["other"] for p in card["pairing"]] == ["stays_50_10_range_adhoc-it50-ns0.01"]
    with pytest.raises(InputDataError) as err:
        release_card("ihm48", POINT, CHECK, LINKAGE, 2, None, pairing.drop(columns="certified_b"))
    assert str(err.value) == (
        "cross-release table: missing column(s) ['certified_b']; expected whether each release "
        "of a pair is certified (rule cross_release)"
    )


def test_docs_give_the_cards_whole_schema(tmp_path):
    """docs/outputs.md, "The release card": every key and type of a card as written, and no
    key a card does not have (the workflow tests check the tiny run's cards too)."""
    check = {**CHECK, "checks": {"demographics": {"columns": ["age", "gender"], "classes": 12,
                                                  "smallest": 10},
                                 "plausible_values": {"variables": 2,
                                                      "values": 4200, "discrete": [],
                                                      "static": ["height"]}}}  # fmt: skip
    check["unpublished"] = [{"group": "test", "series": 36, "parameter": "deid.dk", "value": 50,
                             "largest": 36, "reason": "split 'test': 36 series, fewer than "
                             "deid.dk = 50"}]  # fmt: skip
    shape = {"top1": 0.98, "top1_ci": [0.97, 0.99], "top5": 1.0, "top5_ci": [0.99, 1.0], "n": 900}
    linkage = {
        **LINKAGE,
        "alternative": LINKAGE["strong"],
        "family": {"shape": {"knows": "the whole series by shape", "release": {"0": shape}}},
        "strongest": {
            "name": "shape",
            "knows": "the whole series by shape",
            **shape,
            "bound": 0.1,
            "within": False,
            "refused_by": ["shape"],
        },  # fmt: skip
        "bound": {
            **LINKAGE["bound"],
            "strong_within": False,
            "strongest_attacker": "shape",
            "strongest_top1": 0.98,
            "strongest_top1_ci": [0.97, 0.99],
            "refused_by": ["strong", "shape"],
        },  # fmt: skip
    }
    path = tmp_path / "card.json"
    write_json(release_card("ihm48", POINT, check, linkage, 2, _utility(), _pairing()), path)
    card = json.loads(path.read_text())
    assert len(card["pairing"]) == 2 and card["pairing"][0]["groups_below_k_pct_max"] is None
    schema = documented_schema("The release card")
    assert schema_problems(card, schema) == []
    assert schema_paths(card, schema) == set(schema)
    stays = json.loads(json.dumps(release_card("stays", POINT, CHECK, LINKAGE, None)))
    assert schema_problems(stays, schema) == []  # the nulls of a stays card are documented
    genetic = {**POINT, "method": "genetic-NA-pop8-tour3-par2-msd3-mp0.2-isd1-pat10-max30-norm0"
               "-layseries_dimension-initmean_shift"}  # fmt: skip
    card = json.loads(json.dumps(release_card("stays", genetic, CHECK, LINKAGE, None)))
    assert card["method"]["params"]["normalise_features"] is False
    assert schema_problems(card, schema) == []  # a boolean parameter


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
    by_setting = {
        u["setting"]: u
        for u in card["utility"]
        if (u["task"], u["variables"], u["cross"], u["split"])
        == ("mortality", "released", "shipped", "test")
    }
    assert by_setting["de-id. / de-id."]["not_computable"] == why
    assert by_setting["de-id. / orig."]["not_computable"] is None
    assert by_setting["de-id. / orig."]["roc_auc"] == 0.75
    # a card from an older check.json (no unpublished) and a stays card: nothing refused
    assert release_card("stays", POINT, CHECK, LINKAGE, None)["unpublished"] == []
    assert release_card("stays", POINT, CHECK, LINKAGE, None)["utility_not_computable"] == []


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


CERTIFIED = {"passed": True, "verdict": "certified"}
OTHER = "stays_50_10_range_adhoc-it50-ns0.01"


def _pair(rate: float, shape: float, certified_other: bool = True, other: str = OTHER):
    """A cross_release.csv of one pair: this ihm48 release (A) and ``other`` (B)."""
    return pd.DataFrame(
        [dict(release_a="ihm48_50_10_range_adhoc-it50-ns0.01", release_b=other,
              certified_a=True, certified_b=certified_other, targets=200, candidates=900,
              paired=200 * rate, rate=rate, rate_lo=rate / 2, rate_hi=rate * 1.5,
              chance=1 / 90, chance_columns="duration_class", features=20, shape_rate=shape,
              shape_rate_lo=shape - 0.02, shape_rate_hi=shape + 0.02)]
    )  # fmt: skip


def test_a_certified_release_paired_above_1_over_k_with_a_certified_other_is_refused():
    card = release_card("ihm48", POINT, CERTIFIED, LINKAGE, 2, None, _pair(0.02, 0.35))
    assert (card["passed"], card["check_passed"], card["check_verdict"]) == (
        False, True, "certified")  # fmt: skip
    assert card["verdict"] == (
        "refused: pairing: with stays_50_10_range_adhoc-it50-ns0.01: attacker 'shape' pairs "
        "35.0 % (95 % interval 33.0 to 37.0 %) of the series > bound 1/10 = 10.0 %"
    )
    # the stricter k of the two releases bounds the pair, the same on both cards
    other = "stays_50_20_range_adhoc-it50-ns0.01"
    card = release_card("ihm48", POINT, CERTIFIED, LINKAGE, 2, None, _pair(0.06, 0.01, other=other))
    assert card["verdict"] == (
        f"refused: pairing: with {other}: attacker 'summary' pairs 6.0 % (95 % interval 3.0 "
        "to 9.0 %) of the series > bound 1/20 = 5.0 %"
    )


def test_a_pairing_with_a_refused_release_or_within_1_over_k_does_not_refuse():
    refused_other = _pair(0.9, 0.9, certified_other=False)
    card = release_card("ihm48", POINT, CERTIFIED, LINKAGE, 2, None, refused_other)
    assert (card["passed"], card["verdict"], card["pairing"]) == (True, "certified", [])
    for rate in (0.1, 0.001):  # at the bound 1/10 (point estimate), and far below it
        card = release_card("ihm48", POINT, CERTIFIED, LINKAGE, 2, None, _pair(rate, rate))
        assert (card["passed"], card["verdict"]) == (True, "certified")
        assert [p["other"] for p in card["pairing"]] == [OTHER]
    # a release its check refused keeps the check's verdict, whatever its pairings
    card = release_card("ihm48", POINT, CHECK, LINKAGE, 2, None, _pair(0.9, 0.9))
    assert (card["passed"], card["verdict"]) == (False, CHECK["verdict"])
    assert card["check_verdict"] == CHECK["verdict"]


def test_a_card_of_a_release_of_no_series_says_why_no_attack_ran():
    """Issue 48: every split below dk: the card carries the linkage's reason, no attack
    figure, no bound and no strongest attacker; a measured release's reason is null."""
    from mimic_deid.evaluate.privacy import NO_SERIES

    check = {"passed": False, "verdict": "refused: not formed at the configured sizes: ..."}
    card = release_card("stays", POINT, check, {"not_computable": NO_SERIES, "details": {}}, None)
    assert card["privacy_not_computable"] == NO_SERIES
    assert (card["attackers"], card["attacker_family"]) == ({}, {})
    assert (card["bound"], card["strongest_attacker"], card["refused_by_family_only"]) == (
        None, None, False,
    )  # fmt: skip
    assert release_card("stays", POINT, CHECK, LINKAGE, None)["privacy_not_computable"] is None
