"""Helpers of the cohort-size family (tests/workflow/test_cohort_size*.py): the shipped config at
every cohort size (issue 48), and a real user's path (issue 44.1).

`config/config.yaml`, every stage, on generated copies of 100, 300, 600 and 1,000 subjects.
Only what costs time without changing any size is lowered (:data:`COST`: the bootstrap
resamples); dk, fk, outcome_l, the splits and every stage's k stay
the shipped ones, so each run meets the refusals a user of that cohort meets. Each size is its
own test (pytest-xdist spreads them); none shares an extraction, as no two sizes share a copy.

- 300 subjects run as a real user's: a CSV copy written by ``python -m mimic_deid synth``
  (with the generator's real-MIMIC quirks), source kind ``csv`` and ``seed: null``, under a
  secret master seed of 63 bits (planted where the run keeps it, so the crash of issue 44, a
  seed out of scikit-learn's range, is met on every run).
- Every size completes; every release a size cannot form is refused, its card and the
  report saying which split, how many series, which parameter and the largest value that fits
  (the report's first screen: why nothing of that release is published, and the values that
  fit), and its utility rows say why they are not computable.
- 100 subjects form no ``ihm48`` class at dk 50 (nothing of it is published: its attacks are
  not computable either), and the tabular k of 100 exceeds the demographics table: the OLA
  grid keeps those points as not computable, with the reason (the demo preset, which
  ``test_demo_preset.py`` runs on the same copy size, fits every size).

docs/cohort-sizes.md quotes these runs' figures. One file per size group, so that
pytest-xdist (``--dist loadfile``) runs them on different workers.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import yaml
from workflow_helpers import ROOT, snakemake

from mimic_deid.deid.sizes import sizes_advice
from mimic_deid.evaluate.privacy import NO_SERIES

#: Cost-only overrides of the shipped config (no size, k or split changes).
COST = ("evaluate={'utility': {'bootstrap': 50}}",)
#: A secret master seed of 63 bits, beyond every library's 32-bit range.
SECRET_SEED = 2**63 - 25


#: The page whose table quotes these runs' sizes (issue 44.2: checked against the runs).
DOC = ROOT / "docs" / "cohort-sizes.md"
#: A size cell of that table: series (train / validation / test), optionally the deaths.
SIZES = re.compile(r"^(\d[\d,]*) \((\d+) / (\d+) / (\d+)\)(?:, (\d+) deaths)?$")


def doc_row(subjects: int) -> list[str]:
    """The cells of docs/cohort-sizes.md's table row for ``subjects``."""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and re.match(rf"{subjects:,}(\D|$)", cells[0]):
            return cells
    raise AssertionError(f"docs/cohort-sizes.md has no table row for {subjects:,} subjects")


def assert_doc_sizes(workdir: Path, subjects: int) -> None:
    """The cohort stays and the ``ihm48`` series per split (and the deaths, where quoted)
    that docs/cohort-sizes.md's row for ``subjects`` quotes are this run's."""
    row = doc_row(subjects)
    private = workdir / "results/private/series"
    stays = pd.read_parquet(private / "stays/meta.parquet")
    ihm48 = pd.read_parquet(private / "ihm48/meta.parquet")
    splits = ihm48["split"].value_counts()
    parsed = SIZES.match(row[2])
    assert parsed, f"docs/cohort-sizes.md, {subjects:,} subjects: unreadable cell {row[2]!r}"
    quoted = {
        "cohort stays": row[1],
        "ihm48 series": parsed[1],
        **{
            f"ihm48 {s} series": parsed[i] for i, s in enumerate(("train", "validation", "test"), 2)
        },
    }
    run = {
        "cohort stays": f"{len(stays):,}",
        "ihm48 series": f"{len(ihm48):,}",
        **{f"ihm48 {s} series": str(splits.get(s, 0)) for s in ("train", "validation", "test")},
    }
    if parsed[5] is not None:
        quoted["ihm48 deaths"] = parsed[5]
        run["ihm48 deaths"] = str(int(ihm48["mortality"].sum()))
    differ = [
        f"{name}: the page quotes {quoted[name]}, the run gives {run[name]}"
        for name in quoted
        if quoted[name] != run[name]
    ]
    assert differ == [], f"docs/cohort-sizes.md, {subjects:,} subjects: " + "; ".join(differ)


def shipped_points() -> int:
    """The sweep points of the shipped config: its three methods (mdav-spread, mdav, ad hoc)
    at every fk of its frontier sweep (docs/configuration.md)."""
    deid = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["deid"]
    assert list(deid["methods"]) == ["mdav-spread", "mdav", "adhoc"], deid["methods"]
    return len(deid["methods"]) * len(deid["dk"]) * len(deid["fk"]) * len(deid["heuristic"])


def run_shipped(workdir: Path, source: str, check: bool = True, *extra: str):
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "config", workdir / "config", dirs_exist_ok=True)
    return snakemake(workdir, "--cores", "2", *extra, "--config", source, *COST, check=check)


def synthetic(subjects: int) -> str:
    return f'source={{"kind": "synthetic", "synthetic": {{"subjects": {subjects}}}}}'


def cards_of(workdir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(workdir.glob("results/*/dk*/*/*/card.json"))]


def assert_refusals_explained(workdir: Path) -> list[dict]:
    """Every card names the groups its duration classes left out (as duration.json counts
    them), refuses the release on them, and the report shows every refusal."""
    report = (workdir / "results/report/index.html").read_text()
    cards = cards_of(workdir)
    assert {c["release"] for c in cards} == {"stays", "ihm48"}
    for card in cards:
        dk = card["dk"]
        duration = json.loads(
            (workdir / f"results/{card['release']}/dk{dk}/duration.json").read_text()
        )
        empty = [
            (group, g["series_in"])
            for group, g in sorted(duration["groups"].items())
            if g["series_in"] and not g["released"]
        ]
        assert [(u["group"], u["series"]) for u in card["unpublished"]] == empty
        for u in card["unpublished"]:
            assert u["largest"] < u["value"] or u["parameter"] == "deid.outcome_l", u
            assert u["parameter"] in ("deid.dk", "deid.outcome_l")
        if empty:
            assert card["passed"] is False
            assert card["verdict"] == (
                "refused: not formed at the configured sizes: "
                + "; ".join(u["reason"] for u in card["unpublished"])
            )
        if card["release"] == "ihm48":
            lost = {g for g, _ in empty}
            if "train" in lost:  # no model is fitted: the validation split is never reached
                lost.discard("validation")
            assert set(card["utility_not_computable"]) >= {
                f"not computable: the de-identified data hold no series of split '{g}'"
                for g in lost
            }
            # every utility row without figures says why, and only those rows do
            for u in card["utility"]:
                assert (u["roc_auc"] is None) == bool(u["not_computable"]), u
        if len(empty) == len(duration["groups"]):  # nothing published: no attack measured
            assert card["privacy_not_computable"] == NO_SERIES
            assert card["attackers"] == {} and card["strongest_attacker"] is None
        else:
            assert card["privacy_not_computable"] is None
        if empty:  # the first screen: why nothing of it is published, what would fit
            advice = sizes_advice(card["release"], dk, card["unpublished"])
            assert html.escape(advice) in report.split("<nav", 1)[0], advice
        if not card["passed"]:  # a refused release publishes its verdict only
            assert html.escape(card["verdict"]) in report, card["verdict"]
            p = card["point"]
            point = f"dk{dk}/fk{p['fk']}-{p['heuristic']}/{p['method']}"
            public = workdir / "results" / card["release"] / point / "release"
            assert public.joinpath("refused.txt").read_text() == card["verdict"] + "\n"
    return cards
