"""Atomic writers: an interrupted write leaves nothing behind; output is deterministic."""

import os
import stat

import numpy as np
import pandas as pd
import pytest

from mimic_deid.core.atomic import (
    atomic_dir,
    atomic_path,
    protect_tree,
    read_json,
    read_rows,
    write_json,
    write_parquet,
    write_text,
)
from mimic_deid.core.errors import OutputWriteError


def test_failed_write_leaves_no_file(tmp_path):
    target = tmp_path / "out" / "table.parquet"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_failed_directory_write_keeps_the_old_directory(tmp_path):
    target = tmp_path / "raw"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_dir(target) as tmp:
        (tmp / "new.txt").write_text("new")
        raise RuntimeError("interrupted")
    assert [p.name for p in target.iterdir()] == ["old.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["raw"]


def test_parquet_and_json_are_byte_identical_across_writes(tmp_path):
    df = pd.DataFrame({"a": np.arange(5), "b": np.linspace(0, 1, 5)})
    write_parquet(df, tmp_path / "1.parquet")
    write_parquet(df, tmp_path / "2.parquet")
    assert (tmp_path / "1.parquet").read_bytes() == (tmp_path / "2.parquet").read_bytes()
    obj = {"z": np.float64(np.nan), "a": [np.int64(1), 2.5], "m": {"k": np.bool_(True)}}
    write_json(obj, tmp_path / "1.json")
    write_json(obj, tmp_path / "2.json")
    assert (tmp_path / "1.json").read_bytes() == (tmp_path / "2.json").read_bytes()
    assert read_json(tmp_path / "1.json") == {"a": [1, 2.5], "m": {"k": True}, "z": None}


def test_public_files_follow_umask_and_private_files_are_owner_only(tmp_path):
    old = os.umask(0o022)
    try:
        public = tmp_path / "results" / "stays" / "release" / "series.parquet"
        private = tmp_path / "results" / "private" / "stays" / "series.parquet"
        df = pd.DataFrame({"x": [1, 2]})
        write_parquet(df, public)
        write_parquet(df, private)
        with atomic_dir(tmp_path / "results" / "private" / "raw") as tmp:
            (tmp / "events").mkdir()
            (tmp / "events" / "part-0.parquet").write_bytes(b"x")
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(public) == 0o644
    assert mode(private) == 0o600
    assert mode(tmp_path / "results" / "private") == 0o700
    raw = tmp_path / "results" / "private" / "raw"
    assert [mode(raw), mode(raw / "events"), mode(raw / "events" / "part-0.parquet")] == [
        0o700,
        0o700,
        0o600,
    ]


def test_every_folder_below_private_is_owner_only(tmp_path):
    """Issue 45.5: a writer makes the whole folder chain below ``private`` owner-only, also
    folders that existed under the umask (Snakemake creates a job's output folders before
    the job runs); folders above ``private`` keep their modes."""
    mode = lambda p: stat.S_IMODE(p.lstat().st_mode)  # noqa: E731
    results = tmp_path / "results"
    old = os.umask(0o022)
    try:
        (results / "private" / "stays" / "dk5").mkdir(parents=True)  # as Snakemake makes them
        write_text("x", results / "private" / "stays" / "dk5" / "fk2" / "targets.txt")
        write_text("x", results / "stays" / "release" / "card.json")
    finally:
        os.umask(old)
    private = results / "private"
    chain = [private / "stays", private / "stays" / "dk5", private / "stays" / "dk5" / "fk2"]
    assert [mode(p) for p in chain] == [0o700] * 3
    assert mode(chain[-1] / "targets.txt") == 0o600
    assert mode(results) == mode(results / "stays" / "release") == 0o755


def test_protect_tree_makes_every_entry_owner_only_and_follows_no_link(tmp_path):
    mode = lambda p: stat.S_IMODE(p.lstat().st_mode)  # noqa: E731
    root = tmp_path / "results" / "private"
    (root / "raw" / "events").mkdir(parents=True)
    (root / "raw" / ".snakemake_timestamp").write_text("")
    (root / "raw" / "events" / "part-0.parquet").write_text("x")
    outside = tmp_path / "shared.txt"
    outside.write_text("x")
    (root / "link").symlink_to(outside)
    for path in [root, root / "raw", root / "raw" / "events"]:
        os.chmod(path, 0o755)
    for path in [root / "raw" / ".snakemake_timestamp", outside]:
        os.chmod(path, 0o644)
    assert protect_tree(root) == []
    entries = [root, *sorted(root.rglob("*"))]
    wrong = [
        str(p.relative_to(tmp_path))
        for p in entries
        if not p.is_symlink() and mode(p) != (0o700 if p.is_dir() else 0o600)
    ]
    assert wrong == []
    assert mode(outside) == 0o644  # the link's target is not changed
    assert protect_tree(tmp_path / "logs") == [] and mode(tmp_path / "logs") == 0o700


def test_public_files_follow_a_stricter_umask(tmp_path):
    old = os.umask(0o077)
    try:
        write_text("x", tmp_path / "report" / "index.html")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report" / "index.html").stat().st_mode) == 0o600


def _nothing_lost(path) -> str:
    return (
        f"cannot write {path}: No space left on device; nothing was lost: the partial output "
        "was removed and the previous version, if any, is untouched (free space or fix "
        "permissions, then re-run)"
    )


@pytest.fixture
def tiny_disk(tmp_path):
    """A 256 KiB tmpfs (needs the right to mount, e.g. root in CI); unmounted afterwards."""
    import subprocess

    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_names_the_file_and_keeps_the_previous_version(tiny_disk):
    target = tiny_disk / "results" / "series.parquet"
    small = pd.DataFrame({"x": np.arange(10.0)})
    write_parquet(small, target)
    before = target.read_bytes()
    big = pd.DataFrame({"x": np.random.default_rng(0).random(200_000)})  # ~1.6 MB
    with pytest.raises(OutputWriteError) as info:
        write_parquet(big, target)
    assert str(info.value) == _nothing_lost(target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["series.parquet"]


def test_a_full_disk_inside_a_directory_names_the_directory(tiny_disk):
    target = tiny_disk / "raw"
    big = pd.DataFrame({"x": np.random.default_rng(0).random(200_000)})
    with pytest.raises(OutputWriteError) as info, atomic_dir(target) as tmp:
        write_parquet(big, tmp / "events" / "part-000.parquet")
    assert str(info.value) == _nothing_lost(target)
    assert list(tiny_disk.iterdir()) == []


def test_a_directory_that_cannot_be_made_is_one_named_error(tmp_path):
    target = tmp_path / "file.txt" / "out.json"  # a file where a directory must go
    (tmp_path / "file.txt").write_text("not a directory")
    with pytest.raises(OutputWriteError) as info:
        write_json({"a": 1}, target)
    assert str(info.value) == (
        f"cannot write {target}: File exists; nothing was lost: the partial output was removed "
        "and the previous version, if any, is untouched (free space or fix permissions, then "
        "re-run)"
    )


def test_stale_temporaries_of_a_killed_write_are_removed_by_the_next_write(tmp_path):
    target = tmp_path / "raw"
    stale_dir = tmp_path / ".raw.partial-abc123"
    (stale_dir / "events").mkdir(parents=True)
    (stale_dir / "events" / "spool.parquet").write_text("private rows")
    stale_file = tmp_path / ".raw.json.partial-x.tmp"  # another artefact's: left alone
    stale_file.write_text("{}")
    with atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("a")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".raw.json.partial-x.tmp", "raw"]
    write_text("x", tmp_path / "raw.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["raw", "raw.json"]


def test_scratch_dir_is_removed_on_exit_and_a_killed_jobs_scratch_by_the_next_one(tmp_path):
    from mimic_deid.core.atomic import scratch_dir

    stale = tmp_path / ".series-spool.partial-killed"
    stale.mkdir()
    (stale / "stays-000.arrow").write_text("private rows")
    with scratch_dir(tmp_path / "series-spool") as spool:
        assert spool.parent == tmp_path and spool.name.startswith(".series-spool.partial-")
        assert stat.S_IMODE(spool.stat().st_mode) == 0o700
        (spool / "piece.arrow").write_text("x")
        assert sorted(p.name for p in tmp_path.iterdir()) == [spool.name]
    assert list(tmp_path.iterdir()) == []


def test_read_rows_keeps_only_the_rows_asked_for_in_file_order(tmp_path):
    path = tmp_path / "series.parquet"
    table = pd.DataFrame(
        {"icustay_id": [7, 3, 7, 9, 3], "pseudonym": ["b", "a", "b", "c", "a"], "hour": range(5)}
    )
    write_parquet(table, path)
    got = read_rows(path, "icustay_id", np.array([3, 7]))
    pd.testing.assert_frame_equal(got, table.iloc[[0, 1, 2, 4]].reset_index(drop=True))
    pd.testing.assert_frame_equal(
        read_rows(path, "pseudonym", pd.Series(["c"])), table.iloc[[3]].reset_index(drop=True)
    )
    # no value: no row, the columns and their types kept (a string column as well)
    for column in ("icustay_id", "pseudonym"):
        empty = read_rows(path, column, [])
        assert empty.empty and empty.dtypes.equals(pd.read_parquet(path).dtypes), column
