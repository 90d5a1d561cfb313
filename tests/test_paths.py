"""Where the workflow's artefacts live (workflow/paths.py): what a refused point keeps private, and
the artefacts each stage declares in its own package."""

from __future__ import annotations

import sys

import pytest
from workflow_helpers import ROOT

sys.path.insert(0, str(ROOT / "workflow"))
from paths import PATHS, PRIVATE, SERIES_PATHS, compose_paths, migrate_renamed, path

from mimic_deid.core.stage import Stage
from mimic_deid.stages import STAGES

POINT = dict(release="stays", dk=10, fk=3, heuristic="range", method="adhoc-it50-ns0.01")


def test_per_series_attack_results_and_point_summaries_are_owner_only():
    """A point's per-series attack results (original values) and the class summaries of its
    values are private at every point; its card, check and attack figures are public."""
    for key in ("disagreement_series", "disagreement_summary", "method_summary"):
        assert path(key, **POINT).startswith(f"{PRIVATE}/stays/dk10/fk3-range/"), key
    assert path("baseline_series", release="stays", dk=10) == (
        "results/private/stays/dk10/baseline/disagreement_series.parquet"
    )
    assert PATHS["cross_release_all"] == "results/private/cross_release.csv"
    for key in ("card", "check", "linkage", "published", "cross_release", "baseline_summary"):
        assert not PATHS[key].startswith(PRIVATE), key


def test_an_earlier_public_artefact_is_moved_below_private_at_start_up(tmp_path):
    point = "results/stays/dk10/fk3-range/adhoc-it50-ns0.01"
    old = {
        f"{point}/privacy/disagreement_series.parquet": b"series",
        f"{point}/privacy/disagreement_summary.parquet": b"summary",
        f"{point}/optimiser.json": b"{}",  # renamed first, then moved
        "results/stays/dk10/baseline/disagreement_series.parquet": b"baseline",
        # already moved: the public copy is removed, the private one kept
        "results/ihm48/dk10/fk3-range/mdav-k3/privacy/disagreement_series.parquet": b"stale",
        f"{PRIVATE}/ihm48/dk10/fk3-range/mdav-k3/privacy/disagreement_series.parquet": b"new",
    }
    for name, data in old.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    assert migrate_renamed(tmp_path) == 6
    private = tmp_path / PRIVATE / "stays/dk10/fk3-range/adhoc-it50-ns0.01"
    assert (private / "privacy/disagreement_series.parquet").read_bytes() == b"series"
    assert (private / "privacy/disagreement_summary.parquet").read_bytes() == b"summary"
    assert (private / "method.json").read_bytes() == b"{}"
    baseline = tmp_path / PRIVATE / "stays/dk10/baseline/disagreement_series.parquet"
    assert baseline.read_bytes() == b"baseline"
    kept = tmp_path / PRIVATE / "ihm48/dk10/fk3-range/mdav-k3/privacy/disagreement_series.parquet"
    assert kept.read_bytes() == b"new"
    public = [p for p in (tmp_path / "results").rglob("*") if p.is_file()]
    assert all(PRIVATE in str(p.relative_to(tmp_path)) for p in public), public
    assert migrate_renamed(tmp_path) == 0  # nothing left to move


def _stage(name: str, public: dict, private: dict) -> Stage:
    return Stage(name, name, tables=lambda config: (), targets=lambda config: (),
                 public_paths=public, private_paths=private)  # fmt: skip


def test_each_stage_declares_its_artefacts_below_the_roots_and_a_key_once():
    """The comparators' paths come from their packages, below the root of their audience;
    an artefact key declared twice (by two stages, or by a stage and this module) is refused."""
    assert PATHS["tabular_check"] == "results/tabular/check.json"
    assert PATHS["tabular_release"] == "results/private/tabular/release.parquet"
    assert path("seq_events", table="transfers") == (
        "results/private/sequences/transfers/events.parquet"
    )
    assert not {"tabular_check", "codes_check", "seq_check"} & SERIES_PATHS.keys()
    notes = _stage("notes", {"notes_counts": "notes/counts.csv"}, {"notes_raw": "notes/raw.csv"})
    composed = compose_paths({"raw": f"{PRIVATE}/raw"}, [notes])
    assert composed == {
        "raw": "results/private/raw",
        "notes_counts": "results/notes/counts.csv",
        "notes_raw": "results/private/notes/raw.csv",
    }
    twice = _stage("more", {}, {"notes_counts": "more/counts.csv"})
    with pytest.raises(ValueError) as err:
        compose_paths({}, [notes, twice])
    assert str(err.value) == (
        "artefact key 'notes_counts' is declared twice: by stage 'notes' and by stage 'more'; "
        "give each artefact its own key"
    )
    with pytest.raises(ValueError) as err:
        compose_paths(SERIES_PATHS, [*STAGES, _stage("raw", {"raw": "raw"}, {})])
    assert str(err.value) == (
        "artefact key 'raw' is declared twice: by workflow/paths.py and by stage 'raw'; give "
        "each artefact its own key"
    )
