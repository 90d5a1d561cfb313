"""Atomic, deterministic writers for every artefact.

Outputs are written to a temporary file in the destination directory and renamed into place,
so an interrupted run never leaves a partial file that looks finished. Temporaries are named
``.<name>.partial-<random>``; a run killed mid-write leaves one behind, and the next write of
the same artefact removes it first (:func:`remove_stale`), so nothing private outlives a
failure. A write that fails for lack of space or permission raises
:class:`~mimic_deid.core.errors.OutputWriteError` naming the artefact, after removing the partial
output. Writers are deterministic: the same data gives byte-identical files.

File modes follow one rule, applied here and nowhere else (:func:`apply_mode`): an artefact
with a directory named ``private`` among its parents (``results/private/``: identifiers,
timestamps, unprotected series) is readable only by its owner (files 0600, directories 0700);
every other artefact (release, report, sweep summary) gets the mode any new file gets under the
user's umask, so colleagues and web servers can read what is meant for sharing.
"""

from __future__ import annotations

import contextlib
import glob
import json
import math
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from mimic_deid.core.errors import ConfigError, OutputWriteError

PARQUET_COMPRESSION = "zstd"

#: Infix of every temporary name: ``.<artefact name>.partial-<random>``.
PARTIAL = ".partial-"

#: A directory of this name marks everything below it as private (owner-only modes).
PRIVATE_DIR = "private"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def is_private(path: str | os.PathLike) -> bool:
    """Whether ``path`` lies below a directory named :data:`PRIVATE_DIR`."""
    return PRIVATE_DIR in Path(path).absolute().parent.parts


def apply_mode(path: str | os.PathLike, *, directory: bool = False) -> None:
    """Give ``path`` its mode: owner-only below ``private/``, else the umask's default.

    Parameters
    ----------
    path : path-like
        A file or directory just written (still at its temporary name is fine, as long as it
        lies in its final directory).
    directory : bool, default False
        ``path`` is a directory (modes 0700 / 0777 & ~umask instead of 0600 / 0666 & ~umask).
    """
    full = 0o777 if directory else 0o666
    private = 0o700 if directory else 0o600
    os.chmod(path, private if is_private(path) else full & ~_umask())


def make_dirs(path: str | os.PathLike) -> None:
    """Create directory ``path`` and its parents; below ``private`` every directory of the
    chain is owner-only (0700), also one that existed with wider modes (Snakemake creates a
    job's output directories under the umask before the job runs), and a new ``private``
    directory is 0700 too."""
    dest = Path(path)
    missing = [p for p in (dest, *dest.parents) if not p.exists()]
    dest.mkdir(parents=True, exist_ok=True)
    for created in missing:
        if created.name == PRIVATE_DIR:
            os.chmod(created, 0o700)
    parts = dest.absolute().parts
    if PRIVATE_DIR in parts:
        top = len(parts) - parts[::-1].index(PRIVATE_DIR)  # just below the last `private`
        for end in range(top + 1, len(parts) + 1):
            _owner_only(Path(*parts[:end]), 0o700)


def _owner_only(path: Path, mode: int) -> bool:
    """Give ``path`` (not followed if a link) ``mode`` unless it has it; False when it is not
    the user's to change (left as it is)."""
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode) or stat.S_IMODE(st.st_mode) == mode:
            return True
        os.chmod(path, mode)
    except PermissionError:
        return False
    except FileNotFoundError:  # removed meanwhile (a temporary renamed into place)
        return True
    return True


def make_private_dir(path: str | os.PathLike) -> None:
    """Create directory ``path`` (and its parents) and make it owner-only (0700), even if it
    existed with wider modes: the root below which a run keeps patient-level artefacts."""
    make_dirs(path)
    os.chmod(path, 0o700)


def protect_tree(path: str | os.PathLike) -> list[Path]:
    """Make ``path`` and everything below it owner-only: directories 0700, files 0600.

    For the roots of private artefacts (``results/private``, ``logs``), once when a run starts
    and once when it ends: what Snakemake itself writes there (job output directories under
    the umask, the ``.snakemake_timestamp`` of a directory output) and what an earlier version
    or a killed run left behind. Symbolic links are neither followed nor changed. Creates
    ``path`` when it does not exist.

    Returns
    -------
    list of Path
        The entries that could not be changed (not the user's), for the caller to name.
    """
    root = Path(path)
    make_private_dir(root)
    failed = []
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        for name in dirs:
            if not _owner_only(base / name, 0o700):
                failed.append(base / name)
        for name in files:
            if not _owner_only(base / name, 0o600):
                failed.append(base / name)
    return failed


def remove_stale(path: str | os.PathLike) -> int:
    """Remove temporaries of ``path`` left by an earlier, killed write; return how many.

    Only names ``.<name>.partial-*`` next to ``path`` are touched (Snakemake never runs two
    jobs writing the same artefact at once).
    """
    dest = Path(path)
    removed = 0
    for stale in dest.parent.glob(f".{glob.escape(dest.name)}{PARTIAL}*"):
        if stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
        removed += 1
    return removed


def _write_error(dest: Path, exc: OSError) -> OutputWriteError:
    """The one-line error for an output that could not be written (nothing lost)."""
    if isinstance(exc, OutputWriteError):
        reason = exc.reason
    elif exc.errno:
        reason = os.strerror(exc.errno)
    else:
        reason = " ".join(str(exc).split())
    error = OutputWriteError(
        f"cannot write {dest}: {reason}; nothing was lost: the partial output was removed and "
        "the previous version, if any, is untouched (free space or fix permissions, then re-run)"
    )
    error.reason = reason
    return error


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    On an exception the temporary file is removed and ``path`` is left untouched; an
    ``OSError`` (disk full, permission denied) becomes an :class:`OutputWriteError`.
    """
    dest = Path(path)
    try:
        make_dirs(dest.parent)
        remove_stale(dest)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{dest.name}{PARTIAL}", suffix=suffix or ".tmp", dir=dest.parent
        )
        os.close(fd)
    except OSError as exc:
        raise _write_error(dest, exc) from None
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        apply_mode(tmp_path)
        os.replace(tmp_path, dest)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        if isinstance(exc, OSError):
            raise _write_error(dest, exc) from None
        raise


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory next to ``path``; move it onto ``path`` on success.

    Failures as in :func:`atomic_path`; an error writing a file inside names ``path``.
    """
    dest = Path(path)
    tmp = _fresh_temp_dir(dest)
    try:
        yield tmp
        _apply_tree_modes(tmp)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):  # also a file inside: the directory is named
            raise _write_error(dest, exc) from None
        raise


def _fresh_temp_dir(dest: Path) -> Path:
    """A new ``.<name>.partial-*`` directory next to ``dest``, stale ones removed first."""
    try:
        make_dirs(dest.parent)
        remove_stale(dest)
        return Path(tempfile.mkdtemp(prefix=f".{dest.name}{PARTIAL}", dir=dest.parent))
    except OSError as exc:
        raise _write_error(dest, exc) from None


@contextlib.contextmanager
def scratch_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a private working directory named after ``path``; remove it on exit.

    For intermediate files a step needs while it runs (e.g. spooled series): it follows the
    temporaries' rule, so a killed job's scratch directory is removed by the next one
    (:func:`remove_stale`). Nothing is ever moved onto ``path``.
    """
    tmp = _fresh_temp_dir(Path(path))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _apply_tree_modes(root: Path) -> None:
    apply_mode(root, directory=True)
    for sub in root.rglob("*"):
        apply_mode(sub, directory=sub.is_dir())


def write_table(table: pa.Table, path: str | os.PathLike) -> None:
    """Write an Arrow table to Parquet atomically (zstd, no dictionary surprises)."""
    with atomic_path(path, ".parquet") as tmp:
        pq.write_table(table, tmp, compression=PARQUET_COMPRESSION)


def write_parquet(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a DataFrame to Parquet atomically, without its index."""
    write_table(pa.Table.from_pandas(df, preserve_index=False), path)


def write_csv(df: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a DataFrame to CSV atomically, without its index, floats to 6 significant digits."""
    with atomic_path(path, ".csv") as tmp:
        df.to_csv(tmp, index=False, float_format="%.6g")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        value = float(obj)
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` as sorted, indented JSON atomically; NaN and inf become null."""
    text = json.dumps(_jsonable(obj), indent=2, sort_keys=True, allow_nan=False) + "\n"
    write_text(text, path)


def write_text(text: str, path: str | os.PathLike) -> None:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


#: PyYAML's safe loader on libyaml when PyYAML was built with it (about 10x faster than the
#: pure-Python one; the workflow reads its schema and tables at every start), else pure Python.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: str | os.PathLike, what: str) -> Any:
    """Read a YAML file the run is configured with (variables, hierarchies, the schema).

    Raises
    ------
    ConfigError
        Naming ``what`` and the file: it cannot be read (the system's reason) or is not YAML.
    """
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=SAFE_LOADER)  # a safe loader (SAFE_LOADER)
    except OSError as exc:
        raise ConfigError(f"{what} {source}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {source}: not valid YAML ({exc})") from None


def read_rows(path: str | os.PathLike, column: str, values: Iterable[Any]) -> pd.DataFrame:
    """The rows of a Parquet artefact whose ``column`` holds one of ``values`` (none for no
    values), in file order: the filter is pushed into the reader, so only those rows are
    held in memory (a report rule reading one class of a release's series)."""
    kind = pq.read_schema(path).field(column).type
    wanted = pa.array(list(values), type=kind)
    return pd.read_parquet(path, filters=pc.field(column).isin(wanted))


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON artefact."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
