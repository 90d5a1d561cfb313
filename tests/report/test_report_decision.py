"""The report's first screen decides (issue 44.5, 45.3): one sentence per release from its
card, certified or refused, and the public report draws certified releases only."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from test_report import fake_card
from test_report_audience import _write_inputs

from mimic_deid.report import build_report, load_report_data
from mimic_deid.report.decision import (
    certified_names,
    decision_section,
    release_sentence,
    strongest_attacker,
)
from mimic_deid.report.sweep import sweep_overview
from mimic_deid.stages import REPORT_MODULES

POINT = {"dk": 5, "fk": 3, "heuristic": "range", "method": "adhoc-it50-ns0.01"}
OTHER = {"dk": 5, "fk": 3, "heuristic": "range", "method": "genetic-p20"}
FOLDERS = {
    f"{release}_5_3_range_{p['method']}": f"results/{release}/dk5/fk3/range/{p['method']}/release"
    for p in (POINT, OTHER)
    for release in ("stays", "ihm48")
}
REFUSAL = (
    "linkage bound: strong attacker's top-1 12.0 % > bound 1/10 = 10.0 % (95 % interval "
    "10.0 % to 14.0 %, 900 series)"
)
STAYS_FIGURES = (
    "summary_disagreement_mean",
    "summary_disagreement_min",
    "summary_disagreement_normalised",
    "disagreement_curves",
    "disagreement_example",
    "first_disagreement_cdf",
    "linkage",
    "linkage_strong",
)
IHM48_ITEMS = ("trust_settings", "trust_settings_long_stay")
IHM48_TABLES = ("trust_settings_train", "trust_settings_test", "trust_settings_long_stay_test")


def test_a_certified_release_names_attacker_figure_bound_utility_and_folder():
    card = fake_card("ihm48", POINT)
    assert release_sentence(card, FOLDERS["ihm48_5_3_range_adhoc-it50-ns0.01"]) == (
        "CERTIFIED: release ihm48, method adhoc-it50-ns0.01 at dk=5, fk=3 (range heuristic): "
        "the strong attacker (every published variable's statistics) re-identifies 4.2 % "
        "(95 % interval 2.0 to 8.1 %), within the bound 1/k = 1/10 = 10.0 %; mortality test "
        "ROC-AUC de-id./de-id. 0.830 [0.805, 0.855] and de-id./orig. 0.640 [0.615, 0.665], "
        "against the data owner's orig./orig. 0.900 [0.875, 0.925]; hand out "
        "results/ihm48/dk5/fk3/range/adhoc-it50-ns0.01/release/."
    )
    # stays has no utility task: no utility clause
    assert release_sentence(fake_card("stays", POINT)) == (
        "CERTIFIED: release stays, method adhoc-it50-ns0.01 at dk=5, fk=3 (range heuristic): "
        "the strong attacker (every published variable's statistics) re-identifies 4.2 % "
        "(95 % interval 2.0 to 8.1 %), within the bound 1/k = 1/10 = 10.0 %; hand out its "
        "release/ folder."
    )


def test_a_refused_release_gives_its_reasons_and_no_folder_to_hand_out():
    card = fake_card("stays", POINT, passed=False)
    assert release_sentence(card, FOLDERS["stays_5_3_range_adhoc-it50-ns0.01"]) == (
        "REFUSED: release stays, method adhoc-it50-ns0.01 at dk=5, fk=3 (range heuristic), "
        "not to be published (results/stays/dk5/fk3/range/adhoc-it50-ns0.01/release/ holds "
        f"only refused.txt): {REFUSAL}. Figures: the strong attacker (every published "
        "variable's statistics) re-identifies 12.0 % (95 % interval 10.0 to 14.0 %), ABOVE "
        "the bound 1/k = 1/10 = 10.0 %."
    )
    # a card that lists its reasons gives each of them
    listed = dict(card, reasons=["claim 14: linkage bound", "claim 16: shape attacker"])
    assert release_sentence(listed).endswith(
        "not to be published: claim 14: linkage bound; claim 16: shape attacker. Figures: the "
        "strong attacker (every published variable's statistics) re-identifies 12.0 % (95 % "
        "interval 10.0 to 14.0 %), ABOVE the bound 1/k = 1/10 = 10.0 %."
    )
    # a certified card whose strongest attacker is above 1/k says so plainly
    above = fake_card("stays", POINT)
    above["attackers"]["seed"].update(top1=0.38, top1_ci=[0.33, 0.43])
    assert release_sentence(above).startswith(
        "CERTIFIED: release stays, method adhoc-it50-ns0.01 at dk=5, fk=3 (range heuristic): "
        "the seed's attacker (de-identified features) re-identifies 38.0 % (95 % interval "
        "33.0 to 43.0 %), ABOVE the bound 1/k = 1/10 = 10.0 %;"
    )


@pytest.mark.parametrize(
    "change, clause",
    [
        ({"utility": None}, "utility not computable: its card holds no test ROC-AUC"),
        (
            {"utility": None, "utility_reason": "the test split has no death (12 series)"},
            "utility not computable: the test split has no death (12 series)",
        ),
        (
            {"utility": {"computable": False, "reason": "3 series in the test split"}},
            "utility not computable: 3 series in the test split",
        ),
        (
            {
                "utility": [
                    {
                        "task": "mortality",
                        "variables": "released",
                        "setting": "de-id. / de-id.",
                        "roc_auc": None,
                    }
                ]
            },
            "utility not computable: its card holds no test ROC-AUC",
        ),  # fmt: skip
        (
            {
                "utility": [
                    {
                        "task": "mortality",
                        "variables": "released",
                        "cross": "shipped",
                        "split": "test",
                        "setting": "de-id. / de-id.",
                        "roc_auc": float("nan"),
                        "not_computable": "not computable: no death in the test split",
                    }
                ],
                "utility_not_computable": ["not computable: no death in the test split"],
            },
            "utility not computable: no death in the test split",
        ),  # fmt: skip
    ],
)
def test_a_card_without_utility_says_so_and_why(change, clause):
    card = dict(fake_card("ihm48", POINT, passed=False), **change)
    text = release_sentence(card)
    assert f"10.0 %; {clause}." in text, text


def test_utility_is_read_from_the_test_split_with_the_original_side_as_recorded():
    """A card that lists every row of the utility table (both splits, both original sides)
    gives the test split's, original side as recorded."""
    card = fake_card("ihm48", POINT)
    decoys = [
        dict(e, split=split, cross=cross, roc_auc=0.5, roc_auc_lo=0.4, roc_auc_hi=0.6)
        for e in card["utility"]
        for split, cross in (("train", "shipped"), ("test", "gap_filled"))
    ]
    test = [dict(e, split="test", cross="shipped") for e in card["utility"]]
    text = release_sentence(dict(card, utility=decoys + test))
    assert (
        "de-id./de-id. 0.830 [0.805, 0.855] and de-id./orig. 0.640 [0.615, 0.665], against "
        "the data owner's orig./orig. 0.900 [0.875, 0.925]" in text
    )


def test_a_card_without_attack_figures_says_so():
    card = dict(fake_card("stays", POINT), attackers={}, bound=None)
    assert release_sentence(card).startswith(
        "CERTIFIED: release stays, method adhoc-it50-ns0.01 at dk=5, fk=3 (range heuristic): "
        "no attack figures on its card (the bound 1/k = 1/10 = 10.0 %)"
    )


def test_a_release_of_no_series_says_why_and_which_sizes_fit():
    """Issue 48: nothing of ihm48 can be formed at dk 50: the first screen says why nothing of
    it is published and the largest dk that fits, and its sentence why no attack ran."""
    unpublished = [
        {"group": g, "series": n, "parameter": "deid.dk", "value": 50, "largest": n,
         "reason": f"split '{g}': {n} series, fewer than deid.dk = 50 (a duration class needs "
                   f"dk series of one group); the largest dk that fits: {n}"}
        for g, n in (("test", 5), ("train", 27))
    ]  # fmt: skip
    empty = dict(
        fake_card("ihm48", POINT, passed=False),
        attackers={}, bound=None, strongest_attacker=None, unpublished=unpublished,
        privacy_not_computable="not computable: the release publishes no series (why)",
    )  # fmt: skip
    cards = [fake_card("stays", POINT), empty, dict(empty, point=OTHER)]
    section = decision_section(cards, FOLDERS)
    assert section["text"].split("\n\n") == [
        "1 of 3 releases certified: hand out the folder each CERTIFIED sentence names, and "
        "nothing else. Everything below is drawn from certified releases only, but the "
        "frontier, which places every release by its public card's figures (refused ones "
        "hollow).",
        # once per release and dk, whatever the methods
        "Nothing of ihm48 is published at dk=5: "
        + "; ".join(u["reason"] for u in unpublished)
        + ". The largest dk with which every group forms a class: 5; or run with --configfile "
        "config/presets/demo.yaml for a cohort of about 100 subjects (docs/cohort-sizes.md "
        "gives the sizes that fit each cohort size).",
    ]
    assert "Figures: attacks not computable: the release publishes no series (why); " in (
        release_sentence(empty)
    )


def test_the_strongest_attacker_is_the_cards_own_or_the_highest_rate():
    card = fake_card("stays", POINT)
    assert strongest_attacker(card)[0] == "strong"
    card["attackers"]["shape"] = {"top1": 0.98, "top1_ci": [0.97, 0.99]}
    assert strongest_attacker(card)[0] == "shape"
    assert "attacker 'shape' re-identifies 98.0 % (95 % interval 97.0 to 99.0 %)" in (
        release_sentence(card)
    )
    card["strongest"] = "seed"  # the card names its strongest: taken at its word
    assert strongest_attacker(card)[0] == "seed"
    assert strongest_attacker(dict(card, attackers={}, strongest=None)) is None


def test_the_headline_says_what_to_hand_out_or_that_nothing_is_fit():
    cards = [fake_card(r, p, passed=(p is POINT)) for p in (OTHER, POINT) for r in ("ihm48",
                                                                                   "stays")]  # fmt: skip
    section = decision_section(cards, FOLDERS)
    assert section["title"] == "What to hand out" and section["lead"]
    assert section["text"] == (
        "2 of 4 releases certified: hand out the folder each CERTIFIED sentence names, and "
        "nothing else. Everything below is drawn from certified releases only, but the "
        "frontier, which places every release by its public card's figures (refused ones "
        "hollow)."
    )
    # certified first, each in the sweep's order (the folders'), stays before ihm48
    assert [(d["status"], d["text"].split(" at dk")[0]) for d in section["decisions"]] == [
        ("certified", "CERTIFIED: release stays, method adhoc-it50-ns0.01"),
        ("certified", "CERTIFIED: release ihm48, method adhoc-it50-ns0.01"),
        ("refused", "REFUSED: release stays, method genetic-p20"),
        ("refused", "REFUSED: release ihm48, method genetic-p20"),
    ]
    none = decision_section([fake_card("stays", POINT, passed=False)], FOLDERS)
    assert none["text"] == (
        "Nothing in this run is fit to publish: none of its 1 releases is certified, for the "
        "reasons below. No figure or utility table below draws a refused release, but the "
        "frontier, which places every release by its public card's figures (refused ones "
        "hollow)."
    )
    assert decision_section([], {})["text"] == (
        "No release card in this run: nothing is certified, nothing to hand out."
    )
    assert certified_names(cards) == {
        "stays_5_3_range_adhoc-it50-ns0.01",
        "ihm48_5_3_range_adhoc-it50-ns0.01",
    }


def _build(tmp_path: Path, passed: dict[str, bool], **card_changes) -> tuple[Path, str]:
    inputs = {k: v for k, v in _write_inputs(tmp_path, POINT).items() if not k.startswith("ga_")}
    for release in ("stays", "ihm48"):
        card = dict(fake_card(release, POINT, passed=passed[release]), **card_changes)
        Path(inputs[f"card_{release}"]).write_text(json.dumps(card))
    pairs = pd.DataFrame(
        {
            "release_a": ["ihm48_5_3_range_adhoc-it50-ns0.01"],
            "release_b": ["stays_5_3_range_adhoc-it50-ns0.01"],
            "targets": [100], "candidates": [120], "rate": [0.05], "rate_lo": [0.02],
            "rate_hi": [0.1], "chance": [0.0083],
        }
    )  # fmt: skip
    inputs["cross_release"] = str(tmp_path / "cross_release.csv")
    pairs.to_csv(inputs["cross_release"], index=False)
    data = load_report_data(inputs, POINT, duration_method="greedy", series_distance="euclidean")
    out = tmp_path / "report"
    build_report(
        data,
        out / "figures",
        out / "tables",
        out / "index.html",
        folders=FOLDERS,
        modules=REPORT_MODULES,
    )
    return out, (out / "index.html").read_text()


def _notes(page: str) -> list[str]:
    return re.findall(r'<p class="note">(.*?)</p>', page)


def test_the_public_report_draws_certified_releases_only(tmp_path):
    out, page = _build(tmp_path, {"stays": False, "ihm48": True})
    assert page.index("What to hand out") < page.index('<nav class="toc">')  # the first screen
    assert "1 of 2 releases certified: hand out the folder each CERTIFIED sentence" in page
    assert "hand out results/ihm48/dk5/fk3/range/adhoc-it50-ns0.01/release/." in page
    stays_note = (
        "not drawn: release stays_5_3_range_adhoc-it50-ns0.01 was refused (see &#x27;What to "
        "hand out&#x27;); the public report draws certified releases only"
    )
    # said once per section (Disagreement, Linkage attack), then pointed back to
    again = "not drawn, for the reason above"
    assert _notes(page) == [stays_note] + [again] * 5 + [stays_note, again]
    for name in STAYS_FIGURES:  # the rule's outputs exist, and say why they are empty
        assert (out / "figures" / f"{name}.png").stat().st_size > 0
        assert f'src="figures/{name}.png"' not in page
    for name in IHM48_ITEMS:
        assert f'src="figures/{name}.png"' in page
    # the pairing of a refused release is not shown
    cross = pd.read_csv(out / "tables" / "cross_release.csv")
    assert cross.to_dict("list") == {"note": ["no two certified releases of one population"]}

    out, page = _build(tmp_path / "b", {"stays": True, "ihm48": False})
    assert len(_notes(page)) == len(IHM48_ITEMS) + len(IHM48_TABLES)
    for name in IHM48_TABLES:
        table = pd.read_csv(out / "tables" / f"{name}.csv")
        assert table["note"].tolist() == [
            "not drawn: release ihm48_5_3_range_adhoc-it50-ns0.01 was refused (see 'What to "
            "hand out'); the public report draws certified releases only"
        ]
    for name in STAYS_FIGURES:
        assert f'src="figures/{name}.png"' in page
    assert "0.07" not in pd.read_csv(out / "tables" / "trust_settings_test.csv").to_string()


def test_the_report_builds_when_nothing_is_certified_and_utility_is_not_computable(tmp_path):
    out, page = _build(
        tmp_path, {"stays": False, "ihm48": False}, utility=None, utility_reason="too few series"
    )
    assert "Nothing in this run is fit to publish: none of its 2 releases is certified" in page
    assert "utility not computable: too few series" in page
    assert len(_notes(page)) == len(STAYS_FIGURES) + len(IHM48_ITEMS) + len(IHM48_TABLES)
    assert not re.search(r'src="figures/(linkage|trust_settings|summary_)', page)


def test_the_sweep_overview_leaves_a_refused_releases_values_empty():
    summary = pd.DataFrame(
        {
            "method": ["adhoc-it50-ns0.01", "genetic-p20"],
            "dk": [5, 5],
            "fk": [3, 3],
            "heuristic": ["range", "range"],
            "unfeasibility_mean": [0.5, 0.7],
            "strong_release_top1_pct_err0": [4.2, 12.0],
            "verdict_stays": ["certified", "refused: linkage bound"],
            "verdict_ihm48": ["refused: too few series", "certified"],
            "test_roc_auc_deid_deid": [0.8, 0.7],
            "test_roc_auc_deid_orig": [0.75, 0.65],
            "test_roc_auc_orig_orig_released": [0.85, 0.85],
        }
    )
    shown = sweep_overview(summary, certified_only=True)
    assert shown["unfeasibility"].tolist()[0] == 0.5 and pd.isna(shown["unfeasibility"][1])
    assert (
        pd.isna(shown["ROC-AUC de-id. / de-id."][0]) and shown["ROC-AUC de-id. / de-id."][1] == 0.7
    )
    assert shown["re-id top-1 % (strong attacker)"].tolist() == [4.2, 12.0]  # the card's figures
    assert sweep_overview(summary)["unfeasibility"].tolist() == [0.5, 0.7]
