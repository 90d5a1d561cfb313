"""Helpers shared by the benchmark scripts: timing, machine info and duration-class loading.

The de-identification and disagreement benchmarks measure the real ``stays`` release of a
finished workflow run (default ``benchmarks/work/full``, the full-scale run of
``benchmarks/full_scale.py``). The classes are loaded with the library's own functions, as the
workflow scripts do: ``mimic_deid.deid.class_arrays`` (series trimmed to their duration
classes, as arrays); the features are the run's config
feature set (``deid.features``). When the directory holds no finished run, :func:`load_release`
falls back to generated classes (log-normal lengths grouped by the library's
``assign_duration_classes``, AR(1) physiology) and says so in ``Release.description``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import yaml

from mimic_deid.core.seeding import derive_rng
from mimic_deid.deid.classes import KEY, ClassArray, class_arrays, iter_class_arrays
from mimic_deid.deid.duration import assign_duration_classes
from mimic_deid.deid.features import FeatureSpec, feature_spec
from mimic_deid.deid.genetic import GeneticParams
from mimic_deid.deid.methods import method_labels, parse_method_label
from mimic_deid.pipeline.variables import load_variables, series_variables

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FULL_RUN = ROOT / "benchmarks" / "work" / "full"

# The workflow's own artefact paths (workflow/paths.py), relative to a run directory.
sys.path.insert(0, str(ROOT / "workflow"))
from paths import POINT, path  # noqa: E402  (path is re-exported to the scripts)

# Fallback model of a MIMIC-size `stays` release (used only when no finished run exists).
MODEL_SERIES = 42_000
MODEL_MEDIAN_H = 48.0
MODEL_SIGMA = 1.0
# level, between-patient sd, within-patient innovation sd, AR(1) coefficient, fraction observed
PHYSIOLOGY = {
    "heart_rate": (85, 15, 4, 0.8, 0.93),
    "systolic_blood_pressure": (120, 18, 6, 0.8, 0.90),
    "diastolic_blood_pressure": (62, 10, 4, 0.8, 0.90),
    "oxygen_saturation": (97, 2, 1.2, 0.7, 0.92),
    "glucose": (135, 35, 15, 0.6, 0.20),
    "respiratory_rate": (19, 4, 2, 0.7, 0.90),
    "temperature": (37, 0.6, 0.2, 0.8, 0.30),
    "fraction_inspired_oxygen": (0.5, 0.15, 0.05, 0.9, 0.15),
    "ph": (7.38, 0.06, 0.02, 0.8, 0.10),
    "gcs_total": (12, 3, 1, 0.9, 0.30),
}
STATIC = {"height": (170, 10, 0.02), "weight": (80, 18, 0.06)}  # level, sd, fraction observed


# --------------------------------------------------------------------------------------------
# timing and machine


class Timing(NamedTuple):
    """Wall and CPU seconds of the fastest of ``repeat`` calls, and that call's return value."""

    wall_s: float
    cpu_s: float
    value: Any


def timed(fn: Callable[..., Any], *args: Any, repeat: int = 1, **kwargs: Any) -> Timing:
    """Call ``fn(*args, **kwargs)`` ``repeat`` times; keep the fastest call (wall clock).

    CPU time is ``time.process_time`` (this process only, all threads), so it is not inflated
    by other jobs on a shared machine.
    """
    best: Timing | None = None
    for _ in range(max(1, repeat)):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn(*args, **kwargs)
        run = Timing(time.perf_counter() - w0, time.process_time() - c0, out)
        if best is None or run.wall_s < best.wall_s:
            best = run
    assert best is not None
    return best


def run_process(
    argv: list[str], *, env: dict[str, str] | None = None, stdout: Any = subprocess.DEVNULL
) -> dict[str, float]:
    """Run ``argv`` to completion in a child process and measure it (``os.wait4``).

    Returns
    -------
    dict
        ``wall`` (s), ``cpu`` (s: user + system of the process and of the children it waited
        for) and ``max_rss_mb`` (the peak resident set of the largest single process of the
        tree, MB, ``ru_maxrss``). A failed run raises ``SystemExit`` with its exit status and
        the end of its standard error.
    """
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=stdout, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-3000:]
            raise SystemExit(f"{' '.join(argv[:6])} failed (exit {code}):\n{tail}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "max_rss_mb": usage.ru_maxrss / 1024,
    }


def synthetic_copy(data: Path, subjects: int, seed: int, other_chart_rows: float = 0.0) -> Path:
    """The cached synthetic MIMIC-III copy ``data/n{subjects}-s{seed}-o{other_chart_rows}``,
    generated when missing by ``mimic-deid synth`` in a child process (on Linux a child's peak
    RSS starts from its parent's at fork, so a parent grown by the generator would inflate
    every figure measured after it)."""
    out = data / f"n{subjects}-s{seed}-o{other_chart_rows:g}"
    if not (out / "SYNTHETIC.json").exists():
        print(f"generating {subjects} subjects into {out} ...", flush=True)
        run_process(
            [sys.executable, "-m", "mimic_deid", "synth", "--subjects", str(subjects),
             "--seed", str(seed), "--other-chart-rows", f"{other_chart_rows:g}",
             "--out", str(out)]
        )  # fmt: skip
    return out


def digests(workdir: Path) -> dict[str, str]:
    """SHA-256 of every file under a run's results/ and resources/ (relative path -> digest)."""
    out = {}
    for top in ("results", "resources"):
        for file in sorted((workdir / top).rglob("*")):
            if file.is_file():
                out[str(file.relative_to(workdir))] = hashlib.sha256(file.read_bytes()).hexdigest()
    return out


def git_commit(checkout: Path = ROOT) -> str:
    """The short hash of ``checkout``'s HEAD (empty outside a git checkout): a record's commit."""
    return subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def machine_info() -> dict[str, Any]:
    """Python/NumPy versions, CPU count, platform, date and the 1-minute load at the call."""
    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover - platform without getloadavg
        load = None
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "platform": platform.platform(terse=True),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_1min_at_start": load,
    }


# --------------------------------------------------------------------------------------------
# workflow configuration and records


def _deep_update(base: dict, override: dict) -> dict:
    """Recursive dict update, as Snakemake merges ``--configfile`` into the config."""
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_update(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def workflow_config(run_dir: Path | None) -> dict:
    """The configuration a run used: its ``config/config.yaml`` (or the repository's) updated
    with the run's override ``full_scale.yaml`` when present."""
    base_path = ROOT / "config" / "config.yaml"
    if run_dir is not None and (run_dir / "config" / "config.yaml").is_file():
        base_path = run_dir / "config" / "config.yaml"
    config = yaml.safe_load(base_path.read_text())
    if run_dir is not None and (run_dir / "full_scale.yaml").is_file():
        _deep_update(config, yaml.safe_load((run_dir / "full_scale.yaml").read_text()) or {})
    return config


def run_dir_parser(doc: str) -> argparse.ArgumentParser:
    """An argument parser described by the first line of ``doc`` with the ``--run-dir`` option."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(
        "--run-dir",
        type=Path,
        default=FULL_RUN,
        help="finished workflow run to measure (default benchmarks/work/full); "
        "generated classes if it holds none",
    )
    return parser


def class_figures(cls: ClassArray) -> dict[str, Any]:
    """Size, length and share of null records of one class, for a benchmark record."""
    return {
        "group": cls.group,
        "n": len(cls.keys),
        "length_h": cls.length,
        "null_fraction": round(float(np.isnan(cls.X).mean()), 3),
    }


def print_release(release: Release) -> dict[str, Any]:
    """Print what is measured (data source, series, classes, the largest class); return the
    release summary."""
    size = release.summary()
    print(f"data: {release.description}", flush=True)
    big = size["largest_class"]
    print(
        f"release: {size['series']:,} series in {size['classes']} classes; largest class "
        f"{big['n']} series x {big['length_h']} h",
        flush=True,
    )
    return size


def genetic_label(config: dict) -> str:
    """Label of the first genetic optimiser point of the config (the full-scale sweep point)."""
    return method_labels({"genetic": config["deid"]["methods"]["genetic"]})[0]


def genetic_params(config: dict) -> GeneticParams:
    """The genetic parameters of :func:`genetic_label` (the config defaults)."""
    return GeneticParams.from_dict(parse_method_label(genetic_label(config))[1])


def point_dir(config: dict, method: str) -> str:
    """The sweep-point part of a path (``dk../fk..-../<method>``), as in the workflow's logs."""
    return POINT.format(**point_wildcards(config, method))


def point_wildcards(config: dict, method: str) -> dict:
    """The wildcards of sweep point ``method`` at the first dk, fk and heuristic of the config."""
    deid = config["deid"]
    return dict(dk=deid["dk"][0], fk=deid["fk"][0], heuristic=deid["heuristic"][0], method=method)


def snakemake_record(run_dir: Path | None, rel_path: str) -> dict[str, Any] | None:
    """Last row of a Snakemake ``benchmark:`` file under ``run_dir/logs/benchmarks``.

    Returns ``{"path", "s", "h_m_s", "max_rss_mb", "cpu_time_s", "written"}`` (``written``:
    the file's modification time) or None if the file is missing.
    """
    if run_dir is None:
        return None
    path = run_dir / "logs" / "benchmarks" / rel_path
    if not path.is_file():
        return None
    row = pd.read_csv(path, sep="\t").iloc[-1]

    def num(col: str) -> float | None:
        value = row.get(col)
        try:
            return round(float(value), 2)
        except (TypeError, ValueError):
            return None

    return {
        "path": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
        "s": num("s"),
        "h_m_s": str(row.get("h:m:s")),
        "max_rss_mb": num("max_rss"),
        "cpu_time_s": num("cpu_time"),
        "written": datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


# --------------------------------------------------------------------------------------------
# duration classes


def series_dims() -> list[str]:
    """Series dimension names in config/variables.yaml order (in_series variables only)."""
    return [v.name for v in series_variables(load_variables(ROOT / "config" / "variables.yaml"))]


@dataclass
class Release:
    """The duration classes of one release, real (workflow run) or generated.

    Attributes
    ----------
    real : bool
        True when loaded from a finished workflow run.
    description : str
        Where the classes come from (printed and recorded).
    run_dir : Path or None
        The workflow run (None for generated classes).
    config : dict
        The run's configuration (the repository's config for generated classes).
    dims : list of str
    spec : FeatureSpec
        From the config's ``deid.features``.
    sizes : list of (group, length, n)
        One entry per class, in class order.
    """

    real: bool
    description: str
    run_dir: Path | None
    config: dict
    dims: list[str]
    spec: FeatureSpec
    sizes: list[tuple[str, int, int]]
    _get: Callable[[int], ClassArray] = field(repr=False)

    def get(self, index: int) -> ClassArray:
        """Class ``index`` (in ``sizes`` order)."""
        return self._get(index)

    def iter_classes(self) -> Iterator[ClassArray]:
        """Every class, in order."""
        for i in range(len(self.sizes)):
            yield self._get(i)

    def largest_index(self) -> int:
        """Index of the class with the most series (ties: the longest)."""
        return max(range(len(self.sizes)), key=lambda i: (self.sizes[i][2], self.sizes[i][1]))

    def nearest_size_index(self, n: int) -> int:
        """Index of the class whose size is closest to ``n`` (ties: the shortest)."""
        return min(
            range(len(self.sizes)), key=lambda i: (abs(self.sizes[i][2] - n), self.sizes[i][1])
        )

    def summary(self) -> dict[str, Any]:
        """Release size: series, classes, series-hours, largest / median class, longest class."""
        n = np.array([s[2] for s in self.sizes])
        L = np.array([s[1] for s in self.sizes])
        g, length, size = self.sizes[self.largest_index()]
        return {
            "data": self.description,
            "real_run": self.real,
            "series": int(n.sum()),
            "classes": len(self.sizes),
            "series_hours": int((n * L).sum()),
            "largest_class": {"group": g, "n": size, "length_h": length},
            "median_class_n": float(np.median(n)),
            "smallest_class_n": int(n.min()),
            "longest_class_h": int(L.max()),
        }


def finished_run(run_dir: Path, release: str = "stays", dk: int = 50) -> tuple[bool, str]:
    """Whether ``run_dir`` holds the class inputs of a finished run, and why not if it does not.

    Finished means: the series and duration-class files exist and no Snakemake process holds
    a lock on the directory (``.snakemake/locks`` empty).
    """
    missing = [
        p
        for p in (path("series", release=release), path("duration", release=release, dk=dk))
        if not (run_dir / p).is_file()
    ]
    if missing:
        return False, f"{run_dir} has no {', '.join(missing)}"
    locks = run_dir / ".snakemake" / "locks"
    if locks.is_dir() and any(locks.iterdir()):
        return False, f"a Snakemake run is still active in {run_dir} (.snakemake/locks)"
    return True, ""


def load_release(run_dir: Path, release: str = "stays", dk: int = 50, seed: int = 2020) -> Release:
    """The classes of ``release`` from a finished run in ``run_dir``; generated if none.

    Real classes are loaded as the workflow scripts load them
    (:func:`mimic_deid.deid.class_arrays`) and kept in memory.
    """
    ok, why = finished_run(run_dir, release, dk)
    if not ok:
        return generated_release(dk=dk, seed=seed, reason=why)
    config = workflow_config(run_dir)
    classes, dims = class_arrays(
        pd.read_parquet(run_dir / path("series", release=release)),
        pd.read_parquet(run_dir / path("duration", release=release, dk=dk)),
    )
    where = run_dir.relative_to(ROOT) if run_dir.is_relative_to(ROOT) else run_dir
    return Release(
        real=True,
        description=f"real '{release}' release (dk={dk}) of the workflow run in {where}",
        run_dir=run_dir,
        config=config,
        dims=dims,
        spec=feature_spec(config["deid"]["features"], dims),
        sizes=[(c.group, c.length, len(c.keys)) for c in classes],
        _get=classes.__getitem__,
    )


def load_released_classes(
    run_dir: Path, config: dict, opt: str, release: str = "stays"
) -> dict[tuple[str, int], ClassArray] | None:
    """The perturbed (released) classes of optimiser point ``opt`` of a run, keyed by
    (group, length); None if the run has no ``perturbed.parquet`` for that point."""
    file = run_dir / path("perturbed", release=release, **point_wildcards(config, opt))
    if not file.is_file():
        return None
    perturbed = pd.read_parquet(file)
    front = ["group", "class_length", KEY, "hour"]
    perturbed = perturbed.sort_values(front, kind="stable").reset_index(drop=True)
    dims = [c for c in perturbed.columns if c not in front]
    return {(c.group, c.length): c for c in iter_class_arrays(perturbed, dims)}


# generated fallback ---------------------------------------------------------------------------


def synth_class(rng: np.random.Generator, n: int, L: int, dims: list[str]) -> np.ndarray:
    """(n, L, D) hourly series: patient level + AR(1) deviations, per-dimension missingness
    (vital signs ~7-10 % null, glucose 80 %, temperature 70 %, height 98 %, weight 94 %)."""
    X = np.full((n, L, len(dims)), np.nan)
    for name, (level, between, within, phi, observed) in PHYSIOLOGY.items():
        if name not in dims:
            continue
        d = dims.index(name)
        base = level + between * rng.standard_normal(n)
        dev = within * rng.standard_normal(n) / np.sqrt(1 - phi**2)
        for t in range(L):
            dev = phi * dev + within * rng.standard_normal(n)
            X[:, t, d] = np.where(rng.random(n) < observed, np.round(base + dev, 1), np.nan)
    for name, (level, sd, observed) in STATIC.items():
        if name not in dims:
            continue
        d = dims.index(name)
        base = level + sd * rng.standard_normal(n)
        X[:, :, d] = np.where(rng.random((n, L)) < observed, np.round(base, 1)[:, None], np.nan)
    return X


def model_class_sizes(rng: np.random.Generator, n_series: int, dk: int) -> list[tuple[int, int]]:
    """[(class_length, n)] of log-normal lengths (median 48 h, sigma 1) grouped into duration
    classes by the library's ``assign_duration_classes`` (suppressed series dropped)."""
    lengths = np.maximum(1, np.round(rng.lognormal(np.log(MODEL_MEDIAN_H), MODEL_SIGMA, n_series)))
    class_lengths = assign_duration_classes(lengths.astype(np.int64), dk)
    L, n = np.unique(class_lengths[class_lengths > 0], return_counts=True)
    return [(int(a), int(b)) for a, b in zip(L, n, strict=True)]


def generated_release(
    n_series: int = MODEL_SERIES, dk: int = 50, seed: int = 2020, reason: str = ""
) -> Release:
    """A modelled ``stays`` release; each class is generated on demand from its own seed."""
    dims = series_dims()
    config = workflow_config(None)
    sizes = [("all", L, n) for L, n in model_class_sizes(derive_rng(seed), n_series, dk)]

    def get(i: int) -> ClassArray:
        g, L, n = sizes[i]
        X = synth_class(derive_rng(seed, L), n, L, dims)
        return ClassArray(group=g, length=L, keys=np.arange(n, dtype=np.int64), X=X)

    text = (
        f"GENERATED classes (no finished workflow run: {reason}): {n_series:,} series, "
        f"log-normal lengths (median {MODEL_MEDIAN_H:g} h, sigma {MODEL_SIGMA:g}), "
        f"assign_duration_classes dk={dk}, AR(1) physiology"
    )
    return Release(
        real=False,
        description=text,
        run_dir=None,
        config=config,
        dims=dims,
        spec=feature_spec(config["deid"]["features"], dims),
        sizes=sizes,
        _get=get,
    )
