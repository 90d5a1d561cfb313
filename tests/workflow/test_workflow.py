"""End-to-end: real `snakemake` on a tiny synthetic MIMIC-III in a temporary directory.

The tests of this module share one copy of the session's tiny run (``conftest.tiny_run``,
built once for all workers); tests that change its config or build more targets do it in that
copy. The interrupted-run and README-install tests, which make runs or environments of their
own, are in ``test_resume.py`` and ``test_install.py`` so that they run beside these.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from doc_schemas import documented_schema, schema_paths, schema_problems
from workflow_helpers import (
    ROOT,
    SNAKEMAKE,
    copy_run,
    mimic_messages,
    planned_jobs,
    prepare,
    published_files,
    snakemake,
)

from mimic_deid.deid.methods import parse_method_label
from mimic_deid.pipeline.variables import load_variables, series_variables

pytestmark = [pytest.mark.workflow, pytest.mark.slow]

UPSTREAM = {"synthesize", "extract", "cohort", "series", "duration_classes"}
#: The report figures with original values of individual patients (results/private/report).
PRIVATE = (
    "ga_example_worst",
    "ga_example_median",
    "disagreement_example_original",
    "duration_classes",
    "records_lost",
)


@pytest.fixture(scope="module")
def finished_run(tiny_run, tmp_path_factory) -> tuple[Path, Path]:
    """This module's copy of the session's tiny run: its tests rewrite the config, rename
    artefacts and build more targets in it."""
    return copy_run(tiny_run[0], tmp_path_factory.mktemp("run") / "run")


def test_a_weak_k_is_named_in_one_warning_line(finished_run):
    workdir, _ = finished_run
    warnings = [
        ln
        for ln in (workdir / "stderr.txt").read_text().splitlines()
        if ln.startswith("mimic-deid: warning:")
    ]
    assert set(warnings) == {
        "mimic-deid: warning: k below 5 hides each person among fewer than 5 (the strong "
        "attacker's bound 1/k is above 20 %): config parameter 'deid/fk' = 3, "
        "'tabular/release/k' = 3"
    }


def test_run_produces_report_and_checked_releases(finished_run):
    workdir, _ = finished_run
    report = workdir / "results" / "report"
    assert (report / "index.html").stat().st_size > 1000
    for figure in (
        "disagreement_example",
        "summary_disagreement_mean",
        "linkage",
        "trust_settings",
        "trust_settings_long_stay",
    ):
        assert (report / "figures" / f"{figure}.png").stat().st_size > 5000
    sweep = pd.read_csv(report / "sweep_summary.csv")
    assert len(sweep) == 4
    names = [parse_method_label(label)[0] for label in sweep["method"]]
    assert names == ["mdav", "adhoc", "genetic", "mdav-spread"]
    checks = sorted(workdir.glob("results/*/dk*/fk*/*/check.json"))
    assert len(checks) == 8
    # mdav and mdav-spread publish groups of >= fk identical series: certified against the
    # whole attacker family. Ad hoc and genetic keep each series' own shape: the family's shape member links
    # almost every series (docs/threat-model.md), so those releases are refused and withheld,
    # although the strong (summary statistics) attacker alone is within 1/k
    for path in checks:
        check = json.loads(path.read_text())
        bound = json.loads((path.parent / "privacy/linkage.json").read_text())["bound"]
        plausible = check["checks"]["plausible_values"]  # claim 16: every value plausible
        assert plausible["variables"] == 16 and plausible["values"] > 0, path
        assert plausible["static"] == ["height"] and "gcs_total" in plausible["discrete"], path
        if path.parent.name in ("mdav", "mdav-spread"):
            assert check["passed"] and check["verdict"] == "certified", path
            assert bound["within"] and bound["strongest_top1"] <= bound["top1"], bound
            assert published_files(path.parent / "release") == [
                "DICTIONARY.md", "card.json", "dictionary.json", "index.parquet", "series.parquet"
            ], path  # fmt: skip
            continue
        assert not check["passed"], path
        assert check["verdict"].startswith(
            "refused: linkage bound: attacker 'shape' links top-1 "
        ), check["verdict"]
        assert " > bound 1/3 = 33.3 % (95 % interval " in check["verdict"], check["verdict"]
        assert bound["strong_within"] is True and bound["strongest_top1"] >= 0.95, bound
        assert published_files(path.parent / "release") == ["card.json", "refused.txt"], path
    for release in ("stays", "ihm48"):
        verdicts = list(sweep[f"verdict_{release}"])
        assert verdicts[0] == verdicts[3] == "certified", verdicts
        assert all(v.startswith("refused: linkage bound: ") for v in verdicts[1:3]), verdicts


def test_the_report_opens_on_what_to_hand_out(finished_run):
    """The first screen: one sentence per release card, above the contents, each certified
    one naming the folder to hand out (issue 44.5)."""
    workdir, _ = finished_run
    text = (workdir / "results" / "report" / "index.html").read_text()
    first = text[text.index("<h1>") : text.index('<nav class="toc">')]
    assert "<h2>What to hand out</h2>" in first
    sentences = re.findall(r'<li class="(certified|refused)">(.*?)</li>', first)
    cards = [json.loads(p.read_text()) for p in workdir.glob("results/*/dk*/fk*/*/card.json")]
    assert len(sentences) == len(cards) == 8
    assert sum(card["passed"] for card in cards) == 4  # mdav and mdav-spread, both releases
    for card in cards:
        p = card["point"]
        folder = f"results/{card['release']}/dk{p['dk']}/fk{p['fk']}-{p['heuristic']}/{p['method']}"
        status = "certified" if card["passed"] else "refused"
        mine = [t for s, t in sentences if s == status and f"{folder}/release/" in t]
        assert len(mine) == 1, (folder, sentences)
        if card["passed"]:
            assert mine[0].startswith("CERTIFIED: ") and f"hand out {folder}/release/." in mine[0]


def test_release_protects_every_published_value(finished_run):
    """Only protected variables, no missing-hours pattern, labels only in ihm48, demographics
    banded and fk-anonymous with the duration classes (also in the joint-risk table), and the
    strong attacker (every released variable's features and hour counts, and the exact
    demographics) within the promised bound."""
    workdir, _ = finished_run
    # release.variables: all (the default): every series variable, each protected
    features = {v.name for v in series_variables(load_variables(ROOT / "config/variables.yaml"))}
    assert len(features) == 16 and "heart_rate" in features and "ph" in features
    # the releases as the methods staged them (the attacker family refuses their publication)
    staged = sorted(workdir.glob("results/private/*/dk*/fk*/*/staged/series.parquet"))
    assert len(staged) == 8
    for series_path in staged:
        series = pd.read_parquet(series_path)
        index = pd.read_parquet(series_path.with_name("index.parquet"))
        assert set(series.columns) - {"pseudonym", "hour"} == features, series_path
        # split only in the release de-identified per split (ihm48); stays withholds it
        assert ("split" in index) == ("ihm48" in series_path.parts), series_path
        keys = ["split", "duration_class"] if "ihm48" in series_path.parts else ["duration_class"]
        cls = series.merge(index[["pseudonym", *keys]], on="pseudonym")
        nulls = cls[sorted(features)].isna()
        share_null = nulls.groupby([cls[k] for k in keys]).mean()
        assert share_null.isin([0.0, 1.0]).all().all(), series_path
        assert ("label" in index) == ("ihm48" in series_path.parts), series_path
        assert ("long_stay" in index) == ("ihm48" in series_path.parts), series_path
        if "long_stay" in index:  # both labels diverse in every published class
            distinct = index.groupby(keys)[["label", "long_stay"]].nunique()
            assert (distinct >= 2).all().all(), series_path
        # the default demographics, generalised: every (class x demographics) cell >= fk 3
        bands = {"<30", "30-39", "40-49", "50-59", "60-69", "70-79", "80-89", "90+", "<40",
                 "40-59", "60-79", "80+", "<60", "60+", "Age"}  # fmt: skip
        assert set(index["age"]) <= bands and set(index["gender"]) <= {"F", "M", "Gender"}
        by = keys if "ihm48" in series_path.parts else ["duration_class"]  # per split or not
        assert index.groupby([*by, "age", "gender"]).size().min() >= 3, series_path
        assert index["age"].nunique() > 1, series_path  # the cells split some classes
    joint = pd.read_csv(workdir / "results/tabular/joint_risk_stays.csv").set_index("view")
    released = joint.loc[[v for v in joint.index if v.startswith("release index:")]]
    assert len(released) == 1 and released["smallest_class"].iloc[0] >= 3
    assert "duration class x age x gender (mdav" in released.index[0]
    linkage = sorted(workdir.glob("results/stays/dk*/fk*/*/privacy/linkage.json"))
    assert len(linkage) == 4
    for path in linkage:
        bound = json.loads(path.read_text())["bound"]
        assert bound["strong_top1"] <= bound["top1"], (path, bound)
        assert bound["strong_within"] is True  # the strong attacker alone: within
        # identical series in groups of >= fk: every member within
        if path.parts[-3] in ("mdav", "mdav-spread"):
            assert bound["within"] is True and bound["refused_by"] == [], (path, bound)
        else:
            assert bound["within"] is False and "shape" in bound["refused_by"], (path, bound)


def _check_dictionary(public, path) -> None:
    """A certified release folder's data dictionary holds the documented keys and describes
    the published index column by column, with the counts of its categories."""
    dictionary = json.loads((public / "dictionary.json").read_text())
    assert schema_problems(dictionary, documented_schema("The data dictionary")) == []
    index = pd.read_parquet(public / "index.parquet")
    (described,) = [f for f in dictionary["files"] if f["file"] == "index.parquet"]
    assert [c["name"] for c in described["columns"]] == list(index.columns), path
    (gender,) = [c for c in described["columns"] if c["name"] == "gender"]
    counts = {c["value"]: c["count"] for c in gender["categories"]}
    assert counts == {"F": (index["gender"] == "F").sum(), "M": (index["gender"] == "M").sum(),
                      "Gender": (index["gender"] == "Gender").sum()}, path  # fmt: skip


def test_every_release_has_a_card_and_the_releases_are_paired(finished_run):
    """A card per release gathers its check and attacks (the same figures), holds the keys
    docs/outputs.md documents, and sits in its release folder beside a data dictionary of the
    published tables; the cross-release table pairs every two releases of the sweep."""
    workdir, _ = finished_run
    cards = sorted(workdir.glob("results/*/dk*/fk*/*/card.json"))
    assert len(cards) == 8
    schema = documented_schema("The release card")
    held = set()
    every_pair = pd.read_csv(workdir / "results/private/cross_release.csv")
    card_pairs = []
    for path in cards:
        card = json.loads(path.read_text())
        card_pairs.append(card["pairing"])
        assert schema_problems(card, schema) == [], path
        held |= schema_paths(card, schema)
        public = path.parent / "release"
        assert (public / "card.json").read_bytes() == path.read_bytes()
        if card["passed"]:
            _check_dictionary(public, path)
        else:  # withheld: its card and refused.txt, nothing else
            assert published_files(public) == ["card.json", "refused.txt"], path
        if card["utility"] is not None:  # seed Tables 6.3, 6.4 and the like-for-like rows
            tables = [u["seed_table"] for u in card["utility"]]
            assert tables.count("6.3") == tables.count("6.4") == 4, path
            assert sum(u["cross"] == "gap_filled" for u in card["utility"]) == 16, path
        check = json.loads((path.parent / "check.json").read_text())
        linkage = json.loads((path.parent / "privacy/linkage.json").read_text())
        assert (card["passed"], card["verdict"]) == (check["passed"], check["verdict"])
        assert card["bound"] == linkage["bound"] and card["k"] == 3
        strong = card["attackers"]["strong"]
        assert strong["top1"] == linkage["strong"]["release"]["0"]["top1"]
        low, high = strong["top1_ci"]
        assert low <= strong["top1"] <= high
        assert (card["utility"] is None) == (card["release"] == "stays")
        # every other release of the sweep that is certified (a refused one is published
        # by no one): the owner's table has whether each is
        name = "_".join([card["release"], *(str(card["point"][k]) for k in card["point"])])
        others = [
            (r["release_b"] if r["release_a"] == name else r["release_a"])
            for r in every_pair.to_dict("records")
            if name in (r["release_a"], r["release_b"])
            and (r["certified_b"] if r["release_a"] == name else r["certified_a"])
        ]
        assert [p["other"] for p in card["pairing"]] == others, path
    # every documented key is in some card, but the group intersections' (two certified
    # releases with recoverable groups: the two mdav releases here), the pairing's when no two
    # releases are certified and the groups a release could not form (every group forms in
    # the tiny run)
    optional = {"pairing[].groups_below_k_pct_max", "pairing[].groups_below_k_column"}
    if not any(card_pairs):
        optional |= {k for k in schema if k.startswith("pairing[].")}
    optional |= {key for key in schema if key.startswith("unpublished[]")}
    assert set(schema) - optional <= held <= set(schema)
    # the owner's table pairs every two releases; the public one only two certified ones
    assert len(every_pair) == len(cards) * (len(cards) - 1) // 2  # every two releases
    assert (every_pair["rate_lo"] <= every_pair["rate"]).all()
    assert (every_pair["rate"] <= every_pair["rate_hi"]).all()
    # chance: among the candidates of the target's duration class and demographic cell
    stays_pairs = every_pair[every_pair["release_a"].str.startswith("stays_")]
    assert (stays_pairs["chance_columns"] == "duration_class;age;gender").all()
    assert (every_pair["chance"] > 1 / every_pair["candidates"]).all()
    public = pd.read_csv(workdir / "results/cross_release.csv")
    certified = every_pair[every_pair["certified_a"] & every_pair["certified_b"]]
    assert public["release_a"].tolist() == certified["release_a"].tolist()


def test_utility_table_holds_both_tasks_with_the_owners_baseline(finished_run):
    workdir, _ = finished_run
    for path in sorted(workdir.glob("results/ihm48/dk*/fk*/*/utility/trust_settings.csv")):
        table = pd.read_csv(path)
        for task in ("mortality", "long_stay"):
            rows = table[table["task"] == task]
            assert len(rows) == 18, (path, task)  # 2 baseline + 8 shipped + 8 gap-filled
            test = rows[rows["split"] == "test"].set_index(["variables", "cross", "setting"])
            owner = test.loc[("all", "shipped", "orig. / orig.")]
            assert owner["roc_auc_lo"] <= owner["roc_auc"] <= owner["roc_auc_hi"], (path, task)
    sweep = pd.read_csv(workdir / "results" / "report" / "sweep_summary.csv")
    assert set(sweep["utility_cross"]) == {"shipped"}
    # the owner's baseline for every point; a refused release's own utility is withheld
    assert sweep["test_roc_auc_orig_orig_all"].between(0, 1).all()
    certified = sweep["verdict_ihm48"] == "certified"
    assert certified.any() and not certified.all(), sweep["verdict_ihm48"]
    deid = sweep["test_roc_auc_long_stay_deid_deid"]
    assert deid[certified].between(0, 1).all() and deid[~certified].isna().all(), deid


def test_the_quoted_figures_are_recomputed_from_the_run(finished_run):
    """benchmarks/doc_figures.py reads a run's public results into the quoted figures."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import doc_figures

    workdir, _ = finished_run
    figures = doc_figures.run_figures(workdir)
    rows = {(r["method"], r["release"]): r for r in figures["releases"]}
    methods = ("mdav", "adhoc", "genetic", "mdav-spread")
    assert set(rows) == {(m, r) for m in methods for r in ("stays", "ihm48")}
    for (method, release), row in rows.items():
        (linkage,) = workdir.glob(
            f"results/{release}/dk10/fk3-range/{method}{'' if 'mdav' in method else '-*'}"
            "/privacy/linkage.json"
        )
        strong = json.loads(linkage.read_text())["strong"]["release"]["0"]
        assert row["strong_top1_pct"] == round(100 * strong["top1"], 1)
        assert row["bound_pct"] == round(100 / 3, 1)
        # utility is measured on the labelled release only
        assert ("deid_deid_roc_auc" in row) == (release == "ihm48")
    (table,) = workdir.glob("results/ihm48/dk10/fk3-range/adhoc-*/utility/trust_settings.csv")
    utility = pd.read_csv(table)
    owner = utility[
        (utility["split"] == "test")
        & (utility["task"] == "mortality")
        & (utility["variables"] == "all")
    ].iloc[0]
    assert figures["owner"]["roc_auc"] == round(owner["roc_auc"], 3)
    assert figures["owner"]["test_stays"] == owner["n"]
    assert len(figures["pairs"]) == len(pd.read_csv(workdir / "results/cross_release.csv"))
    assert figures["joint_risk"][0]["view"] == "duration class"
    block = doc_figures.render(figures, "Run: tiny.")
    assert all(block.count(f"\n| {method} | `") == 2 for method in methods)


def test_release_folders_hold_no_identifiers(finished_run):
    workdir, _ = finished_run
    forbidden = {"subject_id", "hadm_id", "icustay_id", "row_id", "age_years", "dob"}
    raw_ids = set(pd.read_parquet(workdir / "results/private/cohort/stays.parquet")["icustay_id"])
    for path in (workdir / "results").rglob("*.parquet"):
        if "private" in path.parts:
            continue
        frame = pd.read_parquet(path)
        columns = {c.lower() for c in frame.columns}
        assert not columns & forbidden, path
        assert not any("time" in c or "date" in c for c in columns), path
        assert not any(pd.api.types.is_datetime64_any_dtype(t) for t in frame.dtypes), path
        if "pseudonym" in frame:
            assert frame["pseudonym"].str.fullmatch(r"P[0-9a-f]{12}").all(), path
        for column in frame.select_dtypes("integer"):
            assert not set(frame[column].unique()) & raw_ids, (path, column)
        if "age" in frame:  # published with the series: bands only, never an age
            assert not frame["age"].astype(str).str.fullmatch(r"\d+(\.\d*)?").any(), path


def test_second_call_does_nothing(finished_run):
    workdir, config = finished_run
    out = snakemake(workdir, "-n", config=config).stdout
    assert planned_jobs(out) == {}, out[-2000:]


def test_a_results_folder_with_the_former_artefact_names_is_migrated_not_recomputed(finished_run):
    """optimiser.parquet/json (before the rename to method.*) are renamed at start-up, and
    the artefacts once public, now owner-only (per-series disagreement, method summaries),
    are moved below results/private."""
    workdir, config = finished_run
    new = sorted(workdir.glob("results/private/**/method.json")) + sorted(
        workdir.glob("results/private/**/method.parquet")
    )
    points = sorted(workdir.glob("results/*/dk*/fk*/*/check.json"))
    assert len(new) == 2 * len(points)  # every release: summary and per-series table
    assert not [p for p in workdir.glob("results/*/dk*/fk*/*/method.json")]  # none public
    for path in new:
        path.rename(path.with_name(path.name.replace("method", "optimiser")))
    moved = sorted(workdir.glob("results/private/*/dk*/fk*/*/privacy/disagreement_*.parquet"))
    assert len(moved) == 2 * len(points)  # every release: series and summary
    former = [workdir / "results" / p.relative_to(workdir / "results/private") for p in moved]
    for path, public in zip(moved, former, strict=True):
        public.parent.mkdir(parents=True, exist_ok=True)
        path.rename(public)
    proc = snakemake(workdir, "-n", config=config)
    assert planned_jobs(proc.stdout) == {}, proc.stdout[-2000:]
    assert (
        "mimic-deid: renamed earlier artefacts (optimiser.* -> method.*) and moved the "
        "per-series attack results and method summaries below results/private\n"
    ) in proc.stderr
    assert all(path.exists() for path in new) and not list(workdir.rglob("optimiser.*"))
    assert all(path.exists() for path in moved) and not any(p.exists() for p in former)


def test_adding_an_fk_value_reruns_nothing_upstream(finished_run, tmp_path):
    workdir, _ = finished_run
    config = prepare(workdir, {"deid": {"fk": [3, 4]}})
    jobs = planned_jobs(snakemake(workdir, "-n", config=config).stdout)
    assert jobs.get("mondrian") == 2  # one new fk for each release
    assert not UPSTREAM & set(jobs), jobs
    prepare(workdir)  # restore the tiny config for the other tests


def test_changing_the_optimiser_reruns_no_mondrian(finished_run):
    workdir, _ = finished_run
    config = prepare(workdir, {"deid": {"methods": {"adhoc": {"iterations": [25]}}}})
    jobs = planned_jobs(snakemake(workdir, "-n", config=config).stdout)
    assert jobs.get("deidentify") == 2, jobs
    assert "mondrian" not in jobs and not UPSTREAM & set(jobs), jobs
    prepare(workdir)


def test_readme_command_line_overrides_work_as_documented(tmp_path):
    """The --config examples of docs/configuration.md: a valid override plans its sweep, a bad
    one gives the page's message verbatim."""
    config = prepare(tmp_path)
    readme = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    good = 'snakemake --cores all --config \'deid={"fk": [5], "dk": [50]}\' seed=7'
    bad = "$ snakemake -n --config 'deid={\"fk\": [1]}'"
    assert good in readme and bad in readme
    expected = readme.split(bad + "\n", 1)[1].splitlines()[0]
    proc = snakemake(
        tmp_path, "-n", "--config", 'deid={"fk": [5], "dk": [50]}', "seed=7", config=config
    )
    assert "mondrian" in planned_jobs(proc.stdout)
    proc = snakemake(tmp_path, "-n", "--config", 'deid={"fk": [1]}', config=config, check=False)
    assert "Traceback" not in proc.stderr and 'File "' not in proc.stderr
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == expected


def test_lint_is_clean():
    proc = subprocess.run([*SNAKEMAKE, "--lint"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Lints for" not in proc.stdout + proc.stderr


def test_snakemake_html_report_holds_the_figures(finished_run):
    workdir, config = finished_run
    snakemake(workdir, "--report", str(workdir / "report.html"), config=config)
    html = (workdir / "report.html").read_text(errors="replace")
    for name in (
        "duration_methods.csv",
        "linkage.png",
        "trust_settings_test.csv",
        "sweep_summary.csv",
        "disagreement_example.png",
    ):
        assert name in html, name
    # the figures with original values of individual patients are never bundled (the rule
    # metadata names every output path; a bundled file is a data URI with its filename)
    assert "filename=disagreement_example.png;" in html
    for name in PRIVATE:
        assert f"filename={name}.png;" not in html, name


def test_every_entry_below_results_private_is_owner_only(tiny_run):
    """Issue 45.5: not only results/private itself: every folder (0700) and file (0600) below
    it, so a copy of a subfolder or a widened parent exposes nothing; logs/ likewise."""
    workdir, _ = tiny_run
    wrong = []
    for root in (workdir / "results" / "private", workdir / "logs"):
        entries = [root, *sorted(root.rglob("*"))]
        assert len(entries) > 30, root  # the run wrote there
        for path in entries:
            mode = stat.S_IMODE(path.lstat().st_mode)
            if not path.is_symlink() and mode != (0o700 if path.is_dir() else 0o600):
                wrong.append(f"{path.relative_to(workdir)} ({mode:o})")
    assert not wrong, "not owner-only: " + ", ".join(wrong)


def test_private_report_is_owner_only_and_apart_from_the_public_one(finished_run):
    workdir, _ = finished_run
    assert stat.S_IMODE((workdir / "results" / "private").stat().st_mode) == 0o700
    private = workdir / "results" / "private" / "report"
    names = set(PRIVATE)
    assert {p.stem for p in (private / "figures").glob("*.png")} == names
    for path in [private / "index.html", *(private / "figures").iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert path.stat().st_size > 1000, path
    public = {p.stem for p in (workdir / "results" / "report" / "figures").glob("*.png")}
    assert not public & names and "disagreement_example" in public


def test_missing_mimic_table_stops_the_run_naming_the_file(tmp_path):
    """An empty source directory: every table the default stages need is named at start-up,
    before any job (tests/test_stage_registry.py has the partial cases)."""
    source = tmp_path / "mimic"
    source.mkdir()
    config = prepare(tmp_path / "run", {"source": {"kind": "csv", "csv": {"path": str(source)}}})
    proc = snakemake(tmp_path / "run", "--cores", "1", config=config, check=False)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    errors = mimic_messages(output)
    assert errors == [
        f"mimic-deid: source: CSV source {source}: holds none of the MIMIC-III tables the "
        "selected stages need (ADMISSIONS, CHARTEVENTS, CPTEVENTS, DIAGNOSES_ICD, "
        "D_ICD_DIAGNOSES, ICUSTAYS, LABEVENTS, PATIENTS, PROCEDURES_ICD, TRANSFERS); give the "
        "directory that holds the MIMIC-III v1.4 files (e.g. ICUSTAYS.csv.gz) in config "
        "parameter 'source/csv/path'"
    ], output
    assert not (tmp_path / "run" / "results").exists()


def test_tuning_sweep_has_a_row_per_grid_point(finished_run):
    workdir, config = finished_run
    snakemake(workdir, "--cores", "2", "tuning_sweep", config=config)
    summary = pd.read_csv(workdir / "results/stays/dk10/tuning/grid_summary.csv")
    assert sorted(summary["mutation_sd"]) == [2.0, 3.0]
    assert summary["unfeasibility"].is_monotonic_increasing
    assert (summary["iterations"] <= 20).all()


def test_replacing_a_csv_table_reruns_the_extraction(finished_run, tmp_path):
    """CSV files are inputs of the extraction: a replaced table re-runs it, nothing else does."""
    reference, _ = finished_run
    source = tmp_path / "mimic"
    shutil.copytree(next((reference / "resources" / "synthetic").iterdir()), source)
    config = prepare(tmp_path, {"source": {"kind": "csv", "csv": {"path": str(source)}}})
    snakemake(tmp_path, "--cores", "1", "results/private/raw", config=config)
    assert (
        planned_jobs(snakemake(tmp_path, "-n", "results/private/raw", config=config).stdout) == {}
    )
    table = source / "LABEVENTS.csv.gz"  # replaced by a copy compressed differently
    table.write_bytes(gzip.compress(gzip.decompress(table.read_bytes()), compresslevel=1))
    proc = snakemake(tmp_path, "-n", "results/private/raw", config=config)
    assert planned_jobs(proc.stdout) == {"extract": 1}, proc.stdout + proc.stderr


def test_dtw_series_distance_reruns_only_the_privacy_rules(finished_run, tmp_path):
    """``evaluate.series_distance: dtw`` (a copy of the finished run): only the disagreement
    rules and what reads them re-run; the disagreement changes, the linkage attack (Euclidean
    reconstruction error) does not."""
    reference, _ = finished_run
    workdir, _ = copy_run(reference, tmp_path / "run")
    config = prepare(workdir, {"evaluate": {"series_distance": "dtw", "dtw_window": 2}})
    jobs = planned_jobs(snakemake(workdir, "-n", config=config).stdout)
    # privacy: both releases at every point (the linkage bound is a claim of each)
    assert jobs.get("privacy_baseline") == 1 and jobs.get("privacy") == 8, jobs
    assert not UPSTREAM & set(jobs) and "deidentify" not in jobs, jobs
    linkage = sorted(reference.glob("results/stays/dk*/fk*/*/privacy/linkage.json"))
    targets = [str(p.relative_to(reference)) for p in linkage]
    targets.append("results/stays/dk10/baseline/disagreement_summary.parquet")
    snakemake(workdir, "--cores", "2", *targets, config=config)
    for path in linkage:
        rel = path.relative_to(reference)
        assert (workdir / rel).read_bytes() == path.read_bytes(), rel
        # owner-only: one row per attacked series
        series = Path("results/private") / rel.relative_to("results")
        series = series.with_name("disagreement_series.parquet")
        euclid = pd.read_parquet(reference / series)
        dtw = pd.read_parquet(workdir / series)
        assert list(dtw["pseudonym"]) == list(euclid["pseudonym"])
        assert not dtw["auc"].equals(euclid["auc"]), series
    base = "results/stays/dk10/baseline/disagreement_summary.parquet"
    assert not pd.read_parquet(workdir / base).equals(pd.read_parquet(reference / base))
