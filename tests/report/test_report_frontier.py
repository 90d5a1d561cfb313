"""The report's privacy-utility frontier: its figure and the first screen's best releases."""

from __future__ import annotations

import pandas as pd
from frontier_helpers import sweep

from mimic_deid.evaluate.frontier import frontier_table
from mimic_deid.report.frontier import SEED_POINT, best_lines, plot_frontier


def test_the_seed_point_is_table_6_4_ad_hoc_at_fk_10():
    assert SEED_POINT == {"k": 10, "owner": 0.85, "deid_deid": 0.83, "deid_orig": 0.64}


def test_the_figure_puts_risk_on_x_utility_on_y_and_tells_certified_from_refused(tmp_path):
    info = plot_frontier(frontier_table(sweep()), tmp_path / "frontier.png")
    assert (tmp_path / "frontier.png").stat().st_size > 0
    assert info["title"].startswith("Privacy-utility frontier, in-hospital mortality")
    assert [a["title"] for a in info["axes"]] == [
        "trained / tested on de-id. / de-id.",
        "trained / tested on de-id. / orig.",
    ]
    for axes in info["axes"]:
        assert axes["xlabel"] == "strongest attacker's top-1 re-identification (%, 95 % interval)"
        assert axes["ylabel"] == "test ROC-AUC (95 % bootstrap interval)"
    left, right = (a["legend"] for a in info["axes"])
    # mdav: fk 10 certified, fk 5 refused; noise certified (only ihm48 releases are drawn)
    assert left == [
        "owner's baseline 0.860 [0.820, 0.890]",
        "ceiling of each release (a tick in its colour): the best any model of it can reach",
        "seed Table 6.4 (ad hoc, fk 10): 0.83, at its bound 1/10",
        "seed's orig. / orig. 0.85",
        "mdav, certified",
        "mdav, refused",
        "noise, certified",
    ]
    assert (
        "ceiling of each release (a tick in its colour): the best any model of it can reach"
        not in right
    )
    assert right[1] == "seed Table 6.4 (ad hoc, fk 10): 0.64, at its bound 1/10"


def test_an_empty_frontier_draws_a_note(tmp_path):
    info = plot_frontier(pd.DataFrame(), tmp_path / "frontier.png")
    assert [a["legend"] for a in info["axes"]] == [[], []]


def test_the_first_screen_names_the_best_certified_release_per_task_and_setting():
    lines = best_lines(frontier_table(sweep()))
    assert [line["status"] for line in lines] == ["best", "best"]  # one line per task
    assert lines[0]["text"] == (
        "BEST CERTIFIED for in-hospital mortality (test ROC-AUC; the data owner's 0.860 "
        "[0.820, 0.890]): de-id. / de-id.: noise-sc4 at fk 10, scale 4 (dk 50, range), 0.720 "
        "[0.680, 0.750] (ceiling 0.790), its strongest attacker ('shape') 4.0 % (95 % interval 2.0 to 6.0 %) "
        "within 1/10 = 10.0 %; de-id. / orig.: noise-sc4 at fk 10, scale 4 (dk 50, range), "
        "0.770 [0.730, 0.800], its strongest attacker ('shape') 4.0 % (95 % interval 2.0 to "
        "6.0 %) within 1/10 = 10.0 %; both (their mean): noise-sc4 at fk 10, scale 4 (dk 50, "
        "range), de-id. / de-id. 0.720 [0.680, 0.750] (ceiling 0.790), de-id. / orig. 0.770 "
        "[0.730, 0.800], its "
        "strongest attacker ('shape') 4.0 % (95 % interval 2.0 to 6.0 %) within 1/10 = 10.0 %."
    )
    assert lines[1]["text"].startswith(
        "BEST CERTIFIED for length of stay > 7 days (test ROC-AUC; the data owner's 0.760 "
    )
    # mdav at fk 10 is the best certified de-id. / orig. once noise is refused
    table = frontier_table(sweep())
    table.loc[table["method"] == "noise", "verdict"] = "refused"
    assert (
        "de-id. / orig.: mdav at fk 10 (dk 50, range), 0.770 [0.730, 0.800]"
        in (best_lines(table)[0]["text"])
    )
    refused = table.assign(verdict="refused")
    assert best_lines(refused)[0] == {
        "status": "none",
        "text": "BEST CERTIFIED for in-hospital mortality (test ROC-AUC; the data owner's "
        "0.860 [0.820, 0.890]): de-id. / de-id.: none certified; de-id. / orig.: none "
        "certified; both (their mean): none certified.",
    }
    assert best_lines(pd.DataFrame()) == []  # a report without the frontier says nothing
