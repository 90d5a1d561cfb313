"""End-to-end: the kapra and pc-kapra release methods through real `snakemake` on tiny data.

Both (k,P) methods release the ``stays`` and ``ihm48`` duration classes; the check, privacy
and utility rules run on them unchanged (only their point outputs are built, not the other
methods of the default sweep), in a copy of the session's tiny run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from doc_schemas import documented_schema, schema_problems
from workflow_helpers import copy_run, prepare, published_files, snakemake

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

KP = {"P": [2], "paa": [2], "level": [6], "impute": ["none"]}
LABELS = ("kapra-P2-paa2-sax6-none", "pc-kapra-P2-paa2-sax6-none")
POINT = "dk10/fk3-range"


def targets() -> list[str]:
    out = []
    for label in LABELS:
        for release in ("stays", "ihm48"):
            out += [
                f"results/{release}/{POINT}/{label}/check.json",
                f"results/{release}/{POINT}/{label}/privacy/linkage.json",
                f"results/{release}/{POINT}/{label}/release",
            ]
        out.append(f"results/ihm48/{POINT}/{label}/utility/trust_settings.csv")
    return out


@pytest.fixture(scope="module")
def kp_run(tiny_run, tmp_path_factory) -> Path:
    """A copy of the session's tiny run (its upstream and Mondrian outputs are the (k,P)
    methods' inputs too) with the two methods' point outputs built."""
    workdir, config = copy_run(tiny_run[0], tmp_path_factory.mktemp("kprun") / "run")
    values = yaml.safe_load(config.read_text())
    values["deid"]["methods"] = {"kapra": KP, "pc-kapra": KP}
    config.write_text(yaml.safe_dump(values))
    snakemake(workdir, "--cores", "2", *targets(), config=config)
    return workdir


@pytest.mark.parametrize("label", LABELS)
def test_kp_release_gets_the_verdict_of_its_claims_and_is_evaluated(kp_run, label):
    """Claim 11 holds for both (k,P) methods; claims 10 (outcomes per k-group, ihm48) and 14
    (the strong attacker and every member of the attacker family within 1/k) decide the
    verdict, and the public folder follows it: the tables with the card and the data
    dictionary, or refused.txt and the card."""
    for release in ("stays", "ihm48"):
        point = kp_run / f"results/{release}/{POINT}/{label}"
        check = json.loads((point / "check.json").read_text())
        kp = check["checks"]["kp_groups"]
        assert check["checks"]["plausible_values"]["static"] == ["height"]  # claim 16 held
        assert kp["k"] == 3 and kp["P"] == 2
        assert kp["smallest_k_group"] >= 3 and kp["smallest_word_share"] >= 2
        assert "heart_rate" in kp["variables"]
        bound = json.loads((point / "privacy/linkage.json").read_text())["bound"]
        assert bound["k"] == 3 and bound["top1"] == pytest.approx(1 / 3)
        published = published_files(point / "release")
        card = json.loads((point / "release" / "card.json").read_text())
        # the card as docs/outputs.md documents it, with the (k,P) pairs' group intersections
        assert schema_problems(card, documented_schema("The release card")) == [], point
        # the (k,P) pairs' group intersections, in the owner's table of every pair (the card
        # lists pairings with certified releases only)
        every = pd.read_csv(kp_run / "results/private/cross_release.csv")
        name = f"{release}_10_3_range_{label}"
        kp_pairs = every[
            ((every["release_a"] == name) & every["release_b"].str.contains("kapra"))
            | ((every["release_b"] == name) & every["release_a"].str.contains("kapra"))
        ]
        assert kp_pairs["groups_below_k_pct_max"].notna().any(), point
        verdict = check["verdict"]
        if verdict.startswith("refused: outcome disclosed: "):
            # (k,P) groups are formed without the outcome: on ihm48 a k-group of one outcome
            # discloses it, and claim 10 refuses the release before the linkage bound
            assert release == "ihm48" and "k-group(s) (k_group_" in verdict, verdict
            assert not check["passed"] and published == ["card.json", "refused.txt"]
        elif bound["within"]:  # the strong attacker and every member of the attacker family
            assert check["passed"] and verdict == "certified"
            assert published == [
                "DICTIONARY.md", "card.json", "dictionary.json", "index.parquet", "series.parquet"
            ]  # fmt: skip
        else:
            assert not check["passed"] and published == ["card.json", "refused.txt"]
            assert verdict.startswith("refused: linkage bound: "), verdict
    trust = pd.read_csv(kp_run / f"results/ihm48/{POINT}/{label}/utility/trust_settings.csv")
    assert set(trust["setting"]) == {
        "orig. / orig.",
        "de-id. / de-id.",
        "orig. / de-id.",
        "de-id. / orig.",
    }


@pytest.mark.parametrize("label", LABELS)
def test_private_groups_hold_envelopes_words_and_the_midpoint_release(kp_run, label):
    private = kp_run / f"results/private/stays/{POINT}/{label}"
    per_series = pd.read_parquet(private / "method.parquet")
    perturbed = pd.read_parquet(private / "perturbed.parquet")
    row = per_series.iloc[0]
    lo, hi = np.asarray(row["lo_heart_rate"]), np.asarray(row["hi_heart_rate"])
    assert len(lo) == row["class_length"] and (lo <= hi).all()
    assert len(row["word_heart_rate"]) == 2  # PAA 2
    mine = perturbed[perturbed["icustay_id"] == row["icustay_id"]].sort_values("hour")
    np.testing.assert_allclose(mine["heart_rate"].to_numpy(), (lo + hi) / 2)
    # the release (staged; published as is when certified) holds no group, word or envelope
    staged = kp_run / f"results/private/stays/{POINT}/{label}/staged/series.parquet"
    public = pd.read_parquet(staged)
    assert not [c for c in public.columns if c.startswith(("k_group", "word", "lo_", "hi_"))]


def test_bad_kp_config_stops_before_any_job_with_the_parameter_named(tmp_path):
    config = prepare(tmp_path)
    values = yaml.safe_load(config.read_text())
    values["deid"]["methods"] = {"kapra": {"P": [4]}}
    config.write_text(yaml.safe_dump(values))
    proc = snakemake(tmp_path, "--cores", "1", "-n", config=config, check=False)
    assert proc.returncode != 0
    assert (
        "config parameters 'deid/methods/kapra/P' and 'deid/fk': every P must be <= every fk "
        "(k < P: a k-group is made of whole P-groups), got P [4] and fk [3]"
    ) in proc.stdout + proc.stderr


def test_a_strict_run_stops_at_the_refused_release(kp_run, tmp_path):
    """`strict: true`: the refusal that the default run records stops the run instead, with
    the verdict's claim and figures, and no check.json is written."""
    work, config = copy_run(kp_run, tmp_path / "run")
    target = f"results/ihm48/{POINT}/{LABELS[0]}/check.json"
    verdict = json.loads((work / target).read_text())["verdict"]
    assert verdict.startswith("refused: ")
    (work / target).unlink()
    proc = snakemake(work, "--cores", "1", target, "--config", "strict=true", config=config,
                     check=False)  # fmt: skip
    assert proc.returncode != 0
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("mimic-deid error")]
    assert errors == [
        f"mimic-deid error in rule 'check_release': {verdict.removeprefix('refused: ')}"
    ]
    assert not (work / target).exists()
