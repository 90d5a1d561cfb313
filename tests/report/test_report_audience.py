"""Public vs private report: no public figure or table draws an original value of a patient.

Every patient's original heart rate is a constant sentinel (900.123456 + i bpm, far from any
released value) and one patient's stay is 977 h long (947 h trimmed to join the 30 h class,
lengths no other patient has); the report is built for both audiences from the same files. Every number a
figure holds (line, scatter, patch and bar data, texts, table cells) is captured when it is
saved, and every number of the tables and the index page is read back. The private report
must show the sentinels (so the capture sees them) and the public report must not.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import matplotlib.figure
import numpy as np
import pandas as pd
import pytest
from test_report import fake_card, fake_disagreement, fake_linkage, fake_utility
from workflow_helpers import ROOT

from mimic_deid.core.atomic import write_json, write_parquet, write_table
from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.classes import KEY
from mimic_deid.deid.duration_methods import duration_methods_table, records_lost_table
from mimic_deid.deid.examples import examples_to_json, method_examples
from mimic_deid.evaluate.curves import (
    ORIGINAL_KEYS,
    closest_class,
    curves_table,
    main_class_curves,
)
from mimic_deid.report import content
from mimic_deid.report.content import build_report, item_names, stage_items
from mimic_deid.report.inputs import load_report_data
from mimic_deid.report.items import GA_INPUTS
from mimic_deid.stages import REPORT_MODULES

ITEMS = stage_items(REPORT_MODULES)
FIGURES = item_names("public", "figure", REPORT_MODULES)
TABLES = item_names("public", "table", REPORT_MODULES)
PRIVATE_FIGURES = item_names("private", "figure", REPORT_MODULES)

N, LENGTH = 12, 30
LONG_STAY = 977  # hours, the first patient's; it loses LONG_STAY - LENGTH hours
SENTINELS = np.r_[900.123456 + np.arange(N), LONG_STAY, LONG_STAY - LENGTH]
FEATURES = {"heart_rate": ["mean", "var", "min", "max"], "glucose": ["mean", "var"]}


#: The sweep point the report is built for.
POINT = {"dk": 5, "fk": 3, "heuristic": "range", "method": "genetic-x"}


def _write_inputs(folder: Path, point: dict = POINT) -> dict[str, str]:
    """Every input of rule private_report for one class of N series of LENGTH hours, with
    certified cards of both releases at ``point``."""
    rng = np.random.default_rng(8)
    keys = np.arange(700, 700 + N)
    lengths = np.r_[LONG_STAY, np.full(N - 1, LENGTH)]
    series = pd.DataFrame(
        {
            KEY: np.repeat(keys, lengths),
            "hour": np.concatenate([np.arange(n) for n in lengths]),
            "heart_rate": np.repeat(SENTINELS[:N], lengths),
            "glucose": rng.normal(130, 30, lengths.sum()),
        }
    )
    classes = pd.DataFrame(
        {KEY: keys, "group": "all", "split": "train", "length": lengths, "class_length": LENGTH}
    )
    meta = classes[[KEY, "length"]].assign(subject_id=keys, hadm_id=keys, mortality=0)
    pseudonyms = pd.DataFrame({KEY: keys, "pseudonym": [f"p{k}" for k in keys]})
    kept = series[series["hour"] >= np.repeat(lengths - LENGTH, lengths)]
    kept = kept.assign(hour=kept["hour"] - np.repeat(lengths - LENGTH, LENGTH))
    perturbed = kept.assign(heart_rate=kept["heart_rate"] - 800 + rng.normal(0, 3, len(kept)))
    release = perturbed.merge(pseudonyms, on=KEY)[["pseudonym", "hour", "heart_rate", "glucose"]]
    targets = pd.DataFrame({KEY: keys, "group": "all", "class_length": LENGTH, "eq_class": 0})
    for s in ("min", "max", "mean", "var"):
        targets[f"target_heart_rate_{s}"] = 100.0 + len(s)
    optimiser = pd.DataFrame(
        {
            KEY: keys,
            "group": "all",
            "class_length": LENGTH,
            "unfeasibility": np.linspace(1, 5, N),
            "distortion": np.linspace(0.5, 2, N),
            "iterations": np.arange(N) + 10,
        }
    )
    baseline_summary, summary, baseline_series, per_series = fake_disagreement()
    frames = {
        "meta": meta,
        "classes": classes,
        # rule duration_classes' other artefacts
        "records_lost": records_lost_table(classes),
        "duration_methods": duration_methods_table(lengths, classes["class_length"], 5, "greedy"),
        "series": series,
        "release_series": release,
        "pseudonyms": pseudonyms,
        "baseline_summary": baseline_summary.assign(group="all"),
        "summary": summary.assign(group="all"),
        "baseline_series": baseline_series.assign(group="all"),
        "per_series": per_series.assign(group="all"),
    }
    inputs = {}
    for name, frame in frames.items():
        inputs[name] = str(folder / f"{name}.parquet")
        write_parquet(frame, inputs[name])
    # rule method_examples' artefact: the private report's GA examples
    examples = method_examples(
        series, classes, perturbed.assign(group="all", class_length=LENGTH), targets, optimiser,
        FEATURES,
    )  # fmt: skip
    inputs["ga_examples"] = str(folder / "examples.json")
    write_json(examples_to_json(examples), inputs["ga_examples"])
    del inputs["series"]
    # rule privacy_curves' artefact: the report reads the main class's curves finished
    curves = main_class_curves(
        series, classes, release, pseudonyms, closest_class(frames["summary"], 30), FEATURES,
        standardise=False, series_distance="euclidean",
    )  # fmt: skip
    inputs["main_curves"] = str(folder / "main_curves.parquet")
    write_table(curves_table(curves), inputs["main_curves"])
    del inputs["release_series"], inputs["pseudonyms"]
    inputs["linkage"] = str(folder / "linkage.json")
    Path(inputs["linkage"]).write_text(json.dumps(fake_linkage()))
    inputs["utility"] = str(folder / "utility.csv")
    fake_utility().to_csv(inputs["utility"], index=False)
    inputs["variables"] = str(ROOT / "config" / "variables.yaml")
    for release in ("stays", "ihm48"):
        inputs[f"card_{release}"] = str(folder / f"card_{release}.json")
        write_json(fake_card(release, point), inputs[f"card_{release}"])
    return inputs


def _numbers(values) -> np.ndarray:
    out = []
    for v in values:
        a = np.asarray(v, dtype=float).ravel() if not isinstance(v, str) else None
        if a is None:
            a = np.array([float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", v)])
        out.append(a)
    return np.concatenate(out) if out else np.empty(0)


def _figure_values(fig: matplotlib.figure.Figure) -> np.ndarray:
    """Every number a figure draws: data of lines, collections and patches, and its texts."""
    found: list = []
    for ax in fig.axes:
        found += [line.get_xydata() for line in ax.lines]
        for coll in ax.collections:
            found.append(coll.get_offsets())
            found += [p.vertices for p in coll.get_paths()]
        for patch in ax.patches:
            found.append(patch.get_path().vertices)
            if hasattr(patch, "get_height"):
                found += [patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()]
            if hasattr(patch, "get_data"):
                found += [np.asarray(d, dtype=float) for d in patch.get_data() if d is not None]
        found += [t.get_text() for t in ax.texts] + [ax.get_title()]
        legend = ax.get_legend()
        if legend is not None:
            found += [t.get_text() for t in legend.get_texts()]
        for table in ax.tables:
            found += [cell.get_text().get_text() for cell in table.get_celld().values()]
    found += [t.get_text() for t in fig.texts]
    if fig._suptitle is not None:
        found.append(fig._suptitle.get_text())
    return _numbers([np.asarray(f, dtype=float) if not isinstance(f, str) else f for f in found])


def _sentinel_hits(values: np.ndarray, atol: float) -> int:
    values = values[np.isfinite(values)]
    return int(np.isclose(values[:, None], SENTINELS[None, :], rtol=0, atol=atol).any(1).sum())


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict:
    """Both reports built from the same files; per audience the numbers of every figure."""
    folder = tmp_path_factory.mktemp("report_inputs")
    inputs = _write_inputs(folder)
    seen: dict[str, dict[str, np.ndarray]] = {"public": {}, "private": {}}
    audience = {"now": "public"}
    original = matplotlib.figure.Figure.savefig

    def capture(fig, fname, *args, **kwargs):
        name = os.path.basename(os.fspath(fname))  # atomic: .<name>.partial-*.png
        seen[audience["now"]][name.lstrip(".").split(".png")[0] + ".png"] = _figure_values(fig)
        return original(fig, fname, *args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(matplotlib.figure.Figure, "savefig", capture)
    out = {}
    try:
        for who in ("public", "private"):
            audience["now"] = who
            given = (
                {k: v for k, v in inputs.items() if k not in GA_INPUTS}
                if who == "public"
                else inputs
            )
            data = load_report_data(given, POINT, duration_method="greedy",
                                    series_distance="euclidean", audience=who)  # fmt: skip
            base = folder / who
            build_report(data, base / "figures", base / "tables", base / "index.html",
                         audience=who, modules=REPORT_MODULES)  # fmt: skip
            out[who] = {"data": data, "dir": base}
    finally:
        mp.undo()
    return {"inputs": inputs, "seen": seen, **out}


def test_private_report_shows_the_originals_the_capture_looks_for(reports):
    """The detector works: the GA examples and Fig. 3.1 with the original draw the sentinel
    heart rates, the duration figures the long stay's length and its trimmed hours."""
    seen = reports["seen"]["private"]
    for name in PRIVATE_FIGURES:
        assert _sentinel_hits(seen[f"{name}.png"], 1e-6) > 0, name
    assert sorted(p.name for p in (reports["private"]["dir"] / "figures").iterdir()) == sorted(
        f"{n}.png" for n in PRIVATE_FIGURES
    )


def test_no_public_figure_or_table_draws_an_original_value(reports):
    seen = reports["seen"]["public"]
    assert sorted(seen) == sorted(f"{n}.png" for n in FIGURES)
    leaks = {name: _sentinel_hits(v, 1e-6) for name, v in seen.items()}
    assert not any(leaks.values()), leaks
    base = reports["public"]["dir"]
    texts = [p.read_text() for p in sorted((base / "tables").iterdir())]
    texts.append((base / "index.html").read_text())
    assert _sentinel_hits(_numbers(texts), 0.01) == 0
    assert {p.stem for p in (base / "tables").glob("*.csv")} == set(TABLES)


def test_public_data_holds_no_original_values(reports):
    public, private = reports["public"]["data"], reports["private"]["data"]
    assert public.ga_examples == [] and len(private.ga_examples) == 2
    assert not set(ORIGINAL_KEYS) & set(public.main_curves)
    assert set(ORIGINAL_KEYS) <= set(private.main_curves)
    # the measures are the same in both: the public report loses the values, not the curves
    np.testing.assert_array_equal(
        public.main_curves["result"].auc, private.main_curves["result"].auc
    )


def test_public_report_refuses_the_ga_inputs(reports):
    with pytest.raises(ConfigError) as err:
        load_report_data(
            reports["inputs"], {}, duration_method="greedy",
            series_distance="euclidean", audience="public",
        )  # fmt: skip
    assert str(err.value) == (
        "public report: input 'ga_examples' holds original values of individual patients; only "
        "the private report (audience 'private') reads it"
    )
    with pytest.raises(ConfigError) as err:
        content.report_items("press", REPORT_MODULES)
    assert str(err.value) == "report audience must be one of ['public', 'private'], got 'press'"


def test_registry_audiences_and_captions():
    """Public items have a Snakemake caption and are the only report() outputs; private items
    are the figures with original values of individual patients."""
    private = {i.name for i in ITEMS if i.audience == "private"}
    assert private == {
        "ga_example_worst",
        "ga_example_median",
        "disagreement_example_original",
        "duration_classes",
        "records_lost",
    }
    assert {i.audience for i in ITEMS} == {"public", "private"}
    captions = {p.stem for p in (ROOT / "workflow" / "report").glob("*.rst")}
    captions -= {"workflow", "sweep_summary"}
    assert captions == set(FIGURES) | set(TABLES)
