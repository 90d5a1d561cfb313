"""The sequences stage through real Snakemake on a tiny synthetic MIMIC-III."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from workflow_helpers import (
    CONFIG_NAME,
    copy_run,
    planned_jobs,
    prepare,
    published_files,
    snakemake,
)

from mimic_deid.core.numbers import percent

pytestmark = pytest.mark.workflow

SEQ = {
    "sequences": {
        "sweep": {
            "mechanisms": ["seed_ratio", "laplace"],
            "epsilons": [0.35, float("inf")],
            "hashes": [20],
            "shingles": [1, 2, 3],
            "repetitions": 1,
        }
    },
    "source": {"synthetic": {"subjects": 150}},
}


def _outputs(workdir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(workdir)): p.read_bytes()
        for top in ("results/sequences", "results/private/sequences")
        for p in sorted((workdir / top).rglob("*"))
        if p.is_file() and p.name != ".snakemake_timestamp"
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    dirs = []
    for name in ("a", "b"):
        workdir = tmp_path_factory.mktemp(f"seqwf-{name}")
        config = prepare(workdir, SEQ)
        snakemake(workdir, "--cores", "2", "sequences", config=config)
        dirs.append(workdir)
    return dirs[0], dirs[1]


def test_stage_writes_its_artefacts_and_publishes_no_times(runs):
    a, _ = runs
    for table in ("transfers", "cptevents"):
        public = a / "results" / "sequences" / table
        assert published_files(public / "release") == [
            "DICTIONARY.md", "card.json", "dictionary.json", "release.parquet"
        ]  # fmt: skip
        card = json.loads((public / "release" / "card.json").read_text())
        assert (card["release"], card["verdict"]) == (f"sequences/{table}", "certified")
        assert (public / "card.json").read_bytes() == (public / "release/card.json").read_bytes()
        release = pd.read_parquet(public / "release" / "release.parquet")
        assert list(release.columns) == ["object", "section", "position", "state"]
        private = pd.read_parquet(a / "results/private/sequences" / table / "generated.parquet")
        assert "time" in private.columns and len(private) == len(release)
        summary = json.loads((public / "summary.json").read_text())
        assert summary["mechanism"] == "seed_ratio" and summary["epsilon"] == 0.35
        assert summary["generated_records"] == len(release) > 0
        sweep = pd.read_csv(public / "sweep.csv")
        assert len(sweep) == 2 * 2 * 3  # mechanisms x eps x shingles
        assert (sweep.loc[sweep["epsilon"] == float("inf"), "suppression_rate"] == 0).all()
        friedman = pd.read_csv(public / "friedman.csv")
        assert len(friedman) == 2 * 4 and set(friedman["settings"]) == {3}
        attack = json.loads((public / "attack.json").read_text())
        assert attack["release"]["released"] == summary["generated_objects"]
        check = json.loads((public / "check.json").read_text())
        assert check["passed"] is True and check["verdict"] == "certified"
        copies = check["checks"]["verbatim_copies"]
        # at most the check's bound sequences.attack.max_verbatim_unique (0.10); TRANSFERS with
        # the real quirks (direct ICU admissions, fewer second-ward moves) measures 0.078 on
        # this tiny copy (141 objects), CPTEVENTS 0.0 (docs/sequences.md)
        assert copies["verbatim_unique"] == attack["release"]["verbatim_unique"] <= 0.10
        assert copies["advantage"] == attack["advantage"]


def test_stage_is_byte_identical_across_runs(runs):
    a, b = runs
    out_a, out_b = _outputs(a), _outputs(b)
    # per table: events, generated, the staged and the published release, summary, attack,
    # check, card, sweep, friedman, and the release folder's card and dictionary (2 files)
    assert out_a.keys() == out_b.keys() and len(out_a) == 2 * 13
    for name in out_a:
        assert out_a[name] == out_b[name], name


def test_rule_all_includes_the_stage_and_a_rerun_does_nothing(runs):
    a, _ = runs
    config = a / CONFIG_NAME
    proc = snakemake(a, "-n", "sequences", config=config)
    assert planned_jobs(proc.stdout) == {}
    jobs = planned_jobs(snakemake(a, "-n", config=config).stdout)
    assert jobs.get("sequences_sweep") is None  # done already
    fresh = a.parent / "fresh"
    jobs = planned_jobs(snakemake(fresh, "-n", config=prepare(fresh, SEQ)).stdout)
    assert jobs["sequences_extract"] == 2 and jobs["sequences_sweep"] == 2
    assert jobs["sequences_release"] == 2 and jobs["report"] == 1


def test_bad_epsilon_stops_with_the_parameter_named(tmp_path):
    config = prepare(tmp_path, {"sequences": {"epsilon": 0}})
    proc = snakemake(tmp_path, "-n", "sequences", config=config, check=False)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "mimic-deid: invalid configuration: config parameter 'sequences/epsilon': "
        "0 is less than or equal to the minimum of 0"
    )
    assert "Traceback" not in proc.stderr


def test_vital_sign_states_are_a_third_input(tmp_path):
    config = prepare(tmp_path, {**SEQ, "sequences": {**SEQ["sequences"], "tables": ["vitals"]}})
    snakemake(tmp_path, "--cores", "2", "results/sequences/vitals/summary.json", config=config)
    summary = json.loads((tmp_path / "results/sequences/vitals/summary.json").read_text())
    assert summary["table"] == "VITALS" and summary["states"] == 4
    assert summary["generated_records"] > 0
    assert summary["generated_objects"] == summary["source_objects"] > 10
    release = pd.read_parquet(tmp_path / "results/private/sequences/vitals/staged/release.parquet")
    assert set(release["state"]) <= {"a", "b", "c", "d"}


def _copy_bound_zero(runs, tmp_path, **extra):
    """A copy of the finished run whose TRANSFERS check is to be re-run with a copy bound of 0
    (claim 13 fails on the synthetic TRANSFERS, which has copies of unique paths)."""
    a, _ = runs
    work, _ = copy_run(a, tmp_path / "run")
    share = json.loads((work / "results/sequences/transfers/attack.json").read_text())
    share = share["release"]["verbatim_unique"]
    assert share > 0
    config = prepare(work, {**SEQ, **extra, "sequences": {**SEQ["sequences"], "attack": {
        "max_verbatim_unique": 0.0}}})  # fmt: skip
    return work, config, share


def test_a_refused_release_is_withheld_and_the_run_goes_on(runs, tmp_path):
    """Claim 13 fails: the verdict names the figures, the public directory holds only
    refused.txt and the card (no data, no dictionary), and the stage's other artefacts are
    built (issue 28: a refusal is a result)."""
    work, config, share = _copy_bound_zero(runs, tmp_path)
    proc = snakemake(work, "--cores", "1", "sequences", config=config, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdict = (
        "refused: sequence release sequences/transfers/release: "
        f"{percent(share)} of the released sequences copy a sequence unique in the source, "
        "above sequences.attack.max_verbatim_unique = 0.0 (0.0 %)"
    )
    check = json.loads((work / "results/sequences/transfers/check.json").read_text())
    assert (check["passed"], check["verdict"]) == (False, verdict)
    public = work / "results/sequences/transfers/release"
    assert published_files(public) == ["card.json", "refused.txt"]
    assert (public / "refused.txt").read_text() == verdict + "\n"
    card = json.loads((public / "card.json").read_text())
    assert (card["passed"], card["verdict"]) == (False, verdict)
    assert card["attack"]["release"]["verbatim_unique"] == share  # the figure refused


def test_a_refused_release_stops_a_strict_run(runs, tmp_path):
    """With `strict: true` the failed claim stops the run, naming the release and the figures,
    and no check.json is written."""
    work, config, share = _copy_bound_zero(runs, tmp_path, strict=True)
    target = "results/sequences/transfers/check.json"
    (work / target).unlink()
    proc = snakemake(work, "--cores", "1", target, config=config, check=False)
    assert proc.returncode != 0
    errors = [
        ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("mimic-deid error")
    ]
    assert errors == [
        "mimic-deid error in rule 'sequences_check': sequence release "
        f"sequences/transfers/release: {percent(share)} of the released sequences copy a "
        "sequence unique in the source, above sequences.attack.max_verbatim_unique = 0.0 "
        "(0.0 %)"
    ]
    assert not (work / target).exists()
