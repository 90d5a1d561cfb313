"""End-to-end: the noise release method through real `snakemake` on tiny data.

Noise at two scales releases the ``stays`` and ``ihm48`` duration classes of a copy of the
session's tiny run (only its point outputs are built); the check, privacy and utility rules run
on it unchanged. The method has no bound of its own, so its verdicts must be the attacker
family's: certified exactly where every member links at most 1/fk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_helpers import copy_run, published_files, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

SCALES = ("1", "16")
RELEASES = ("stays", "ihm48")


def point(release: str, scale: str) -> str:
    return f"results/{release}/dk10/fk3-range/noise-sc{scale}"


def targets() -> list[str]:
    out = []
    for release in RELEASES:
        for scale in SCALES:
            out += [f"{point(release, scale)}/{f}" for f in ("check.json", "card.json", "release")]
    out += [f"{point('ihm48', s)}/utility/trust_settings.csv" for s in SCALES]
    return out


@pytest.fixture(scope="module")
def noise_run(tiny_run, tmp_path_factory) -> Path:
    """A copy of the session's tiny run with the noise points at scales 1 and 16 built."""
    workdir, config = copy_run(tiny_run[0], tmp_path_factory.mktemp("noiserun") / "run")
    values = yaml.safe_load(config.read_text())
    values["deid"]["methods"] = {"noise": {"scale": [float(s) for s in SCALES]}}
    config.write_text(yaml.safe_dump(values))
    snakemake(workdir, "--cores", "2", *targets(), config=config)
    return workdir


@pytest.mark.parametrize("release", RELEASES)
def test_the_verdicts_are_the_attacker_familys(noise_run, release):
    """Certified exactly where the family's strongest member is within 1/3; at one sd of noise
    an attacker who knows the target's series still finds it (refused by a member of the
    family while the statistics attacker is within the bound); the larger scale links less."""
    strongest = {}
    for scale in SCALES:
        folder = noise_run / point(release, scale)
        check = json.loads((folder / "check.json").read_text())
        bound = json.loads((folder / "privacy/linkage.json").read_text())["bound"]
        card = json.loads((folder / "card.json").read_text())
        assert bound["k"] == 3 and bound["top1"] == pytest.approx(1 / 3)
        within = bound["strongest_top1"] <= bound["top1"]
        assert bound["within"] == within and (check["verdict"] == "certified") == within
        assert card["strongest_attacker"]["name"] == bound["strongest_attacker"]
        assert card["method"]["name"] == "noise"
        assert card["method"]["promises"].startswith("nothing by construction")
        assert "mdav_clusters" not in check["checks"]  # no claim 11 of its own
        public = published_files(folder / "release")  # withheld when refused
        assert ("series.parquet" in public) == within and ("refused.txt" in public) != within
        if not within:
            assert check["verdict"].startswith(
                f"refused: linkage bound: attacker '{bound['strongest_attacker']}' links top-1 "
            )
            assert bound["strong_within"] and bound["refused_by"]
        strongest[scale] = bound["strongest_top1"]
    assert strongest["16"] < strongest["1"]
    one = json.loads((noise_run / point(release, "1") / "check.json").read_text())
    assert one["verdict"] != "certified"


def test_the_family_certifies_ihm48_at_scale_16_and_its_utility_is_measured(noise_run):
    """Recorded on the tiny run: ihm48 at 16 sds is certified (the shape member 18 % against
    the bound 33.3 %); its trust settings are computed as for every method."""
    check = json.loads((noise_run / point("ihm48", "16") / "check.json").read_text())
    assert check["verdict"] == "certified"
    trust = pd.read_csv(noise_run / point("ihm48", "16") / "utility/trust_settings.csv")
    assert {"orig. / orig.", "de-id. / de-id.", "orig. / de-id.", "de-id. / orig."} <= set(
        trust["setting"]
    )
    # method.json is owner-only (computed from the release's values): results/private
    private = noise_run / "results/private" / point("ihm48", "16").removeprefix("results/")
    method = json.loads((private / "method.json").read_text())
    assert method["distortion_mean"] > 0 and sum(method["projected_values"].values()) > 0
