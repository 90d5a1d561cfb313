"""End-to-end: the mdav release method through real `snakemake` on tiny data.

MDAV releases the ``stays`` and ``ihm48`` duration classes of a copy of the session's tiny
run (only its point outputs are built); the check, privacy and utility rules run on it
unchanged, and its claim 11 is read back from the published files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import copy_run, published_files, snakemake

from mimic_deid.pipeline.cohort import STAY_DEMOGRAPHICS

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

POINT = "dk10/fk3-range/mdav"
RELEASES = ("stays", "ihm48")


def targets() -> list[str]:
    out = []
    for release in RELEASES:
        out += [
            f"results/{release}/{POINT}/check.json",
            f"results/{release}/{POINT}/card.json",
            f"results/{release}/{POINT}/release",
        ]
    out.append(f"results/ihm48/{POINT}/utility/trust_settings.csv")
    return out


@pytest.fixture(scope="module")
def mdav_run(tiny_run, tmp_path_factory) -> Path:
    """A copy of the session's tiny run with the mdav point outputs built."""
    workdir, config = copy_run(tiny_run[0], tmp_path_factory.mktemp("mdavrun") / "run")
    values = yaml.safe_load(config.read_text())
    values["deid"]["methods"] = {"mdav": {}}
    config.write_text(yaml.safe_dump(values))
    snakemake(workdir, "--cores", "2", *targets(), config=config)
    return workdir


@pytest.mark.parametrize("release", RELEASES)
def test_mdav_release_is_certified_with_clusters_of_k_identical_series(mdav_run, release):
    """Claim 11 (groups of >= k identical series) holds, so the strong attacker stays within
    1/k and the release is published; read back from the public tables, every series of a
    (duration class x published demographics) cell has >= 2 identical companions."""
    point = mdav_run / f"results/{release}/{POINT}"
    check = json.loads((point / "check.json").read_text())
    assert check["verdict"] == "certified", check["verdict"]
    clusters = check["checks"]["mdav_clusters"]
    assert clusters["k"] == 3 and clusters["smallest_group"] >= 3
    assert clusters["breach_bound"] == pytest.approx(1 / 3)
    assert check["checks"]["linkage_bound"]["k"] == 3
    assert published_files(point / "release") == [
        "DICTIONARY.md", "card.json", "dictionary.json", "index.parquet", "series.parquet"
    ]  # fmt: skip
    series = pd.read_parquet(point / "release/series.parquet")
    index = pd.read_parquet(point / "release/index.parquet")
    variables = [c for c in series.columns if c not in ("pseudonym", "hour")]
    values = series.sort_values(["pseudonym", "hour"]).groupby("pseudonym")[variables]
    published = values.apply(lambda f: f.to_numpy().round(9).tobytes()).rename("values")
    # the unit MDAV ran on: (split for ihm48, de-identified per split) duration class x cell
    cell = [*(["split"] if release == "ihm48" else []), "duration_class"]
    cell += [c for c in index.columns if c in STAY_DEMOGRAPHICS]
    keyed = index.set_index("pseudonym")[cell].join(published)
    sizes = keyed.groupby(list(keyed.columns), dropna=False).size()
    assert sizes.min() >= 3 and sizes.sum() == len(index)
    card = json.loads((point / "card.json").read_text())
    assert (
        card["method"]["name"] == "mdav" and "whole original series" in card["method"]["promises"]
    )
    if release == "ihm48":
        assert "outcomes_per_cluster" in check["checks"]
        trust = pd.read_csv(mdav_run / f"results/ihm48/{POINT}/utility/trust_settings.csv")
        assert {"orig. / orig.", "de-id. / de-id.", "orig. / de-id.", "de-id. / orig."} <= set(
            trust["setting"]
        )


def test_mdav_private_table_names_each_series_cluster(mdav_run):
    per_series = pd.read_parquet(mdav_run / f"results/private/stays/{POINT}/method.parquet")
    summary = json.loads((mdav_run / f"results/private/stays/{POINT}/method.json").read_text())
    sizes = per_series.groupby(["group", "class_length", "cell", "cluster"]).size()
    assert sizes.min() >= 3 and sizes.max() <= 5  # k .. 2k - 1 without labels
    assert summary["mdav"]["clusters"] == len(sizes)
    assert 0.0 < summary["mdav"]["sse_sst"] < 1.0
