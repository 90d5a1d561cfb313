"""The tiny run's privacy-utility frontier: results/frontier.csv, its figure and the first
screen's best certified releases (issue 49.2)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from frontier_helpers import documented_problems

from mimic_deid.evaluate.frontier import frontier_columns, frontier_table
from mimic_deid.evaluate.pairing import release_name

pytestmark = [pytest.mark.workflow, pytest.mark.slow]


def test_the_frontier_has_a_row_per_release_as_its_cards_say(tiny_run):
    workdir, _ = tiny_run
    table = pd.read_csv(workdir / "results" / "frontier.csv")
    assert list(table.columns) == frontier_columns()
    assert documented_problems(table) == []
    # the tiny sweep: dk 10, fk 3, mdav, adhoc, genetic, mdav-spread; stays before ihm48 at
    # each point
    methods = ["mdav", "adhoc", "genetic", "mdav-spread"]
    assert list(table["method"]) == [m for m in methods for _ in range(2)]
    assert list(table["release"]) == ["stays", "ihm48"] * 4
    assert (table["knob"] == "fk").all() and (table["knob_value"] == 3).all()
    assert list(table["verdict"]) == ["certified"] * 2 + ["refused"] * 4 + ["certified"] * 2
    # every row is its card's: recomputed from the run's cards, in the table's order
    cards = []
    for row in table.itertuples():
        point = {"dk": row.dk, "fk": row.fk, "heuristic": row.heuristic}
        folder = f"results/{row.release}/dk{row.dk}/fk{row.fk}-{row.heuristic}/{row.method_label}"
        card = json.loads((workdir / folder / "card.json").read_text())
        assert release_name(row.release, {**point, "method": row.method_label}) == release_name(
            card["release"], card["point"]
        )
        cards.append(card)
    again = frontier_table(cards)
    pd.testing.assert_frame_equal(table, again, check_dtype=False, rtol=1e-5)
    ihm = table[table["release"] == "ihm48"]
    assert ihm["mortality_deid_deid_roc_auc"].notna().all()
    assert ihm["mortality_orig_orig_all_roc_auc"].nunique() == 1  # the owner's, one model
    assert table.loc[table["release"] == "stays", "mortality_deid_deid_roc_auc"].isna().all()


def test_the_report_draws_the_frontier_and_names_the_best_certified_release(tiny_run):
    workdir, _ = tiny_run
    report = workdir / "results" / "report"
    assert (report / "figures" / "frontier.png").stat().st_size > 0
    text = (report / "index.html").read_text()
    assert "<h2>Privacy-utility frontier</h2>" in text
    assert "Every ihm48 release of the sweep (frontier.csv)" in text  # the figure's caption
    first = text[text.index("<h1>") : text.index('<nav class="toc">')]
    best = re.findall(r'<li class="(best|none)">(.*?)</li>', first)
    assert [b[0] for b in best] == ["best"] * 2  # one line per task, the mdav methods certified
    assert best[0][1].startswith(
        "BEST CERTIFIED for in-hospital mortality (test ROC-AUC; the data owner&#x27;s "
    )
    assert "): de-id. / de-id.: mdav-spread at fk 3 (dk 10, range), " in best[0][1]
    assert "; de-id. / orig.: mdav at fk 3 (dk 10, range), " in best[0][1]
    assert "; both (their mean): mdav at fk 3 (dk 10, range), de-id. / de-id. " in best[0][1]
    assert " within 1/3 = 33.3 %." in best[0][1]
