"""The shipped config on 100 and 300 subjects (issue 48); 300 as a real user's CSV copy under a
secret 63-bit seed (issue 44.1). Helpers and the family's scope: tests/cohort_sizes.py."""

from __future__ import annotations

import html
import stat
import subprocess
import sys

import pandas as pd
import pytest
from cohort_sizes import (
    NO_SERIES,
    SECRET_SEED,
    assert_doc_sizes,
    assert_refusals_explained,
    run_shipped,
    synthetic,
)

# a whole run of the shipped config: room for a loaded 2-core machine (the suite default is 900 s)
pytestmark = [pytest.mark.workflow, pytest.mark.slow, pytest.mark.timeout(2400)]


def test_100_subjects_complete_and_explain_what_they_cannot_publish(tmp_path):
    """No ihm48 split can fill dk 50 and the tabular k of 100 exceeds the demographics
    table: rule all completes; nothing of ihm48 is published, its card, its attacks and its
    utility rows say why, the report's first screen gives the dk that fits, and the OLA grid
    keeps k = 100 as not computable points with the reason."""
    run_shipped(tmp_path, synthetic(100))
    assert_doc_sizes(tmp_path, 100)
    cards = assert_refusals_explained(tmp_path)
    meta = pd.read_parquet(tmp_path / "results/private/series/ihm48/meta.parquet")
    counts = meta["split"].value_counts()
    reasons = [
        f"split '{s}': {counts[s]} series, fewer than deid.dk = 50 (a duration class needs dk "
        f"series of one group); the largest dk that fits: {counts[s]}"
        for s in sorted(counts.index)
    ]
    ihm48 = [c for c in cards if c["release"] == "ihm48"]
    # mdav-spread, mdav, ad hoc at each shipped fk (10, 20): each refused on the sizes
    assert len(ihm48) == 6
    for card in ihm48:
        assert card["verdict"] == "refused: not formed at the configured sizes: " + "; ".join(
            reasons
        )
        assert card["privacy_not_computable"] == NO_SERIES
    # the frontier keeps every release; one of no series has no attacker to place it by
    frontier = pd.read_csv(tmp_path / "results/frontier.csv")
    rows = frontier[frontier["release"] == "ihm48"]
    assert len(rows) == 6 and (rows["verdict"] == "refused").all()
    assert rows["attacker"].isna().all() and rows["attacker_top1"].isna().all()
    report = (tmp_path / "results/report/index.html").read_text()
    first_screen = report.split("<nav", 1)[0]
    assert (
        html.escape(
            "Nothing of ihm48 is published at dk=50: " + "; ".join(reasons) + ". The largest dk "
            f"with which every group forms a class: {counts.min()}; or run with --configfile "
            "config/presets/demo.yaml for a cohort of about 100 subjects (docs/cohort-sizes.md "
            "gives the sizes that fit each cohort size)."
        )
        in first_screen
    )
    assert (
        html.escape(
            "attacks not computable: the release publishes no series (no duration class formed "
            "at the configured sizes; its check names each group, its series and what would fit)"
        )
        in first_screen
    )
    # the tabular comparator: k = 100 is kept as not computable, the other k computed
    rows = len(pd.read_parquet(tmp_path / "results/private/tabular/demographics_p3.parquet"))
    grid = pd.read_csv(tmp_path / "results/tabular/ola_grid.csv", keep_default_na=False)
    reason = (
        f"not computable: k = 100 exceeds the {rows} rows of the demographics table (config "
        f"parameter 'tabular/ola/k'; the largest k that fits: {rows})"
    )
    assert set(grid.loc[grid["k"] == 100, "not_computable"]) == {reason}
    assert (grid.loc[grid["k"] == 100, "loss"] == "").all()
    assert set(grid.loc[grid["k"] != 100, "not_computable"]) == {""}
    nodes = pd.read_csv(tmp_path / "results/report/tables/tabular_nodes_checked.csv")
    assert nodes.set_index("k").at[100, "not computable"] == reason.removeprefix("not computable: ")


def test_300_subjects_as_a_csv_copy_under_a_secret_seed(tmp_path):
    """Issue 44.1: a real user's path, rule all of the shipped config on a CSV copy under
    seed null (a 63-bit secret seed); issue 48 at 300 subjects."""
    copy = tmp_path / "mimic"
    synth = [sys.executable, "-m", "mimic_deid", "synth", "--subjects", "300", "--seed", "1"]
    subprocess.run([*synth, "--out", str(copy)], check=True, capture_output=True)
    workdir = tmp_path / "run"
    seed_file = workdir / "results/private/master_seed.txt"
    seed_file.parent.mkdir(parents=True)
    seed_file.write_text(f"{SECRET_SEED}\n")
    source = f'source={{"kind": "csv", "csv": {{"path": "{copy}"}}}}'
    proc = run_shipped(workdir, source)
    assert "using the secret seed kept owner-only" in proc.stderr
    assert stat.S_IMODE(seed_file.stat().st_mode) == 0o600
    cards = assert_refusals_explained(workdir)
    assert_doc_sizes(workdir, 300)
    # the secret seed reached every model, and no public file or log shows it
    for public in [*workdir.glob("results/report/**/*.html"), *workdir.glob("logs/**/*.log")]:
        assert str(SECRET_SEED) not in public.read_text(errors="replace"), public
    utility = [u for c in cards if c["release"] == "ihm48" for u in c["utility"]]
    assert any(u["roc_auc"] is not None for u in utility)
