"""The figures docs/results.md quotes, regenerated from a run of the current commit.

docs/results.md quotes the suite's tiny run (``tests/workflow_helpers.py`` ``TINY_CONFIG``,
the run ``tests/workflow/conftest.py`` ``tiny_run`` makes once per test session): its
releases with their attacks, bounds, verdicts and utility, the owner's baseline, the
decomposition of the utility cost, the joint risk and every cross-release pair. This script
writes them between two markers in that page, together with a machine-readable copy of every
figure in an HTML comment; ``tests/workflow/test_doc_figures.py`` recomputes them from the
suite's own run and fails naming each figure that differs, and ``tests/test_docs.py`` checks
that the page's text is its figures rendered. So a quoted figure cannot go stale.

    python benchmarks/doc_figures.py --write                 # make the tiny run, rewrite the page
    python benchmarks/doc_figures.py --write --run-dir RUN   # the same from a finished tiny run
    python benchmarks/doc_figures.py --check --run-dir RUN   # name the figures that differ
    python benchmarks/doc_figures.py --print --run-dir RUN   # any run's block, e.g. for benchmarks/README.md

``RUN`` is a finished run's working directory; only its public results are read.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml
from common import git_commit, path  # path: the workflow's own artefact paths

from mimic_deid.deid.methods import parse_method_label
from mimic_deid.evaluate.utility import SETTINGS as UTILITY_SETTINGS

ROOT = Path(__file__).resolve().parents[1]
#: The page that quotes the figures.
DOC = ROOT / "docs" / "results.md"
BEGIN = "<!-- figures: begin (benchmarks/doc_figures.py writes this block; do not edit) -->"
END = "<!-- figures: end -->"
#: The machine-readable copy of the block's figures: this line, their JSON, then ``-->``.
DATA = "<!-- figures data"


#: The trust settings the table shows (all but orig./orig.), by the card's ``setting`` label.
SETTINGS = {label: f"{train}_{test}" for label, train, test in UTILITY_SETTINGS[1:]}


def _glob(run_dir: Path, key: str, **wildcards: str) -> list[Path]:
    """The files of artefact ``key`` in ``run_dir``, every unnamed wildcard matched by ``*``."""
    fields = {"release": "*", "dk": "*", "fk": "*", "heuristic": "*", "method": "*"}
    return sorted(run_dir.glob(path(key, **{**fields, **wildcards})))


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * float(value), 1)


def _verdict(text: str) -> str:
    """``certified``, or ``refused: <claim>`` (the check's figures are in its check.json)."""
    return text if text == "certified" else "refused: " + text.split(": ")[1]


def _release_row(card: dict) -> dict[str, Any]:
    strong = card["attackers"]["strong"]
    row: dict[str, Any] = {
        "method": card["method"]["name"],
        "release": card["release"],
        "series": int(strong["n"]),
        "seed_top1_pct": _pct(card["attackers"]["seed"]["top1"]),
        "strong_top1_pct": _pct(strong["top1"]),
        "strong_top1_ci_pct": [_pct(v) for v in strong["top1_ci"]],
        "strong_top5_pct": _pct(strong["top5"]),
        "bound_pct": _pct(card["bound"]["top1"]),
        "verdict": _verdict(card["verdict"]),
        "cells": card["demographics"]["classes"] if card.get("demographics") else None,
        "smallest_cell": card["demographics"]["smallest"] if card.get("demographics") else None,
    }
    strongest = card.get("strongest_attacker")
    if strongest:  # the attacker family's strongest member decides the linkage claim
        row["strongest"] = strongest["name"]
        row["strongest_top1_pct"] = _pct(strongest["top1"])
        row["strongest_top1_ci_pct"] = [_pct(v) for v in strongest["top1_ci"]]
    for entry in card.get("utility") or []:
        if (entry["task"], entry["variables"]) != ("mortality", "released"):
            continue
        if (entry["split"], entry["cross"]) != ("test", "shipped"):  # seed Table 6.4
            continue
        if entry["setting"] in SETTINGS:
            name = SETTINGS[entry["setting"]]
            row[f"{name}_roc_auc"] = round(entry["roc_auc"], 3)
            row[f"{name}_roc_auc_ci"] = [
                round(entry["roc_auc_lo"], 3),
                round(entry["roc_auc_hi"], 3),
            ]
    return row


#: The columns of the decomposition table: (setting label, variables), as the utility table
#: names them; the original side of the cross settings is the row's.
DECOMPOSITION = (
    ("orig. / orig.", "all"),
    ("orig. / orig.", "released"),
    ("de-id. / de-id.", "released"),
    ("orig. / de-id.", "released"),
    ("de-id. / orig.", "released"),
)


def _decomposition(utility: pd.DataFrame) -> list[dict[str, Any]]:
    """Test ROC-AUC [95 %] of every (task, original side) of one ``trust_settings.csv``: the
    owner's baseline, the released variables, and the three settings with de-identified data.
    The orig./orig. on every variable is the same for both original sides (shipped)."""
    test = utility[utility["split"] == "test"]
    rows = []
    for task in dict.fromkeys(test["task"]):
        for cross in ("shipped", "gap_filled"):
            cells = []
            for setting, variables in DECOMPOSITION:
                side = "shipped" if variables == "all" else cross
                match = test[
                    (test["task"] == task)
                    & (test["setting"] == setting)
                    & (test["variables"] == variables)
                    & (test["cross"] == side)
                ]
                if not len(match):
                    cells.append(None)
                    continue
                r = match.iloc[0]
                cells.append(
                    [round(float(r[c]), 3) for c in ("roc_auc", "roc_auc_lo", "roc_auc_hi")]
                )
            first = test[(test["task"] == task)].iloc[0]
            rows.append(
                {
                    "task": task,
                    "cross": cross,
                    "cells": cells,
                    "test_stays": int(first["n"]),
                    "positives": int(first["positives"]),
                }
            )
    return rows


def run_figures(run_dir: Path) -> dict[str, Any]:
    """The quoted figures of one finished run, from its public results.

    Parameters
    ----------
    run_dir : Path
        The working directory of a finished ``snakemake`` run (``rule all``).

    Returns
    -------
    dict
        ``releases``: one row per (method, release) with the attacks' top-1/top-5 rates (%),
        the strong attacker's 95 % interval, the bound, the verdict, the demographic cells and,
        for ``ihm48``, the test ROC-AUC of the three trust settings; ``owner``: the data
        owner's baseline (orig./orig. on every variable) with its interval and the test split's
        size; ``duration``: records lost and series suppressed per release; ``joint_risk``: the
        rows of ``joint_risk_stays.csv``; ``pairs``: every row of ``cross_release.csv``.
    """
    cards = [json.loads(p.read_text()) for p in _glob(run_dir, "card")]
    if not cards:
        raise SystemExit(
            f"{run_dir}: no release card (results/*/dk*/.../card.json); is the run finished?"
        )
    order = {"stays": 0, "ihm48": 1}
    releases = sorted(
        (_release_row(card) for card in cards),
        key=lambda r: (r["method"], order.get(r["release"], 2)),
    )
    owner = None
    decomposition = {}
    for table in _glob(run_dir, "utility"):
        frame = pd.read_csv(table)
        decomposition[parse_method_label(table.parts[-3])[0]] = _decomposition(frame)
        if owner is not None:  # the same original data in every point's table
            continue
        test = frame[
            (frame["split"] == "test")
            & (frame["task"] == "mortality")
            & (frame["variables"] == "all")
        ]
        if len(test):
            row = test.iloc[0]
            owner = {
                "roc_auc": round(float(row["roc_auc"]), 3),
                "roc_auc_ci": [
                    round(float(row["roc_auc_lo"]), 3),
                    round(float(row["roc_auc_hi"]), 3),
                ],
                "test_stays": int(row["n"]),
                "test_deaths": int(row["positives"]),
            }
    duration = {}
    for summary in _glob(run_dir, "duration_summary"):
        record = json.loads(summary.read_text())
        duration[summary.parts[-3]] = {
            "dk": int(record["dk"]) if "dk" in record else None,
            "records_lost_mean": round(float(record["records_lost_mean"]), 1),
            "records_lost_pct_mean": round(float(record["records_lost_pct_mean"]), 1),
            "suppressed": int(record["suppressed"]),
            "released": int(record["released"]),
        }
    joint = run_dir / path("tabular_joint_risk")
    joint_rows = (
        [
            {
                "view": r["view"],
                "unique_pct": round(float(r["unique_percent"]), 1),
                "smallest_class": int(r["smallest_class"]),
            }
            for r in pd.read_csv(joint).to_dict("records")
        ]
        if joint.exists()
        else []
    )
    pairs_file = run_dir / path("cross_release")
    pairs = []
    if pairs_file.exists():
        for r in pd.read_csv(pairs_file).to_dict("records"):
            pairs.append(
                {
                    "a": r["release_a"],
                    "b": r["release_b"],
                    "rate_pct": _pct(r["rate"]),
                    "ci_pct": [_pct(r["rate_lo"]), _pct(r["rate_hi"])],
                    "chance_pct": round(100.0 * float(r["chance"]), 2),
                }
            )
    return {
        "releases": releases,
        "owner": owner,
        "decomposition": decomposition,
        "duration": duration,
        "joint_risk": joint_rows,
        "pairs": pairs,
    }


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.1f}{unit}" if unit else f"{value:.3f}"


def _short(name: str) -> str:
    """A cross-release name (``<release>_<dk>_<fk>_<heuristic>_<label>``) as release/method."""
    release, _dk, _fk, _heuristic, label = name.split("_", 4)
    return f"{parse_method_label(label)[0]} `{release}`"


def render(figures: dict[str, Any], header: str) -> str:
    """The text of a block: ``header`` (what was run), then the figures of :func:`run_figures`
    as sentences and tables."""
    owner = figures["owner"]
    stays = figures["duration"].get("stays", {})
    by_release = {r["release"]: r for r in figures["releases"]}
    lines = [
        header,
        "",
        f"Duration classes (dk {stays.get('dk')}) lose {stays.get('records_lost_mean')} records per "
        f"`stays` series ({stays.get('records_lost_pct_mean')} %) and suppress "
        f"{stays.get('suppressed')} series. "
        + " ".join(
            f"The `{name}` classes split into {row['cells']} demographic cells (smallest "
            f"{row['smallest_cell']} series)."
            for name, row in by_release.items()
            if row.get("cells") is not None
        )
        + " Re-identification rates are top-1 (and top-5) with exact knowledge of the "
        "features and of the published demographics, in percent, the strong attacker's with "
        "its 95 % Wilson interval ("
        + " and ".join(f"{row['series']:,} `{name}`" for name, row in by_release.items())
        + " series); the bound is 1/k, stated before the attack."
        + (
            f" Test ROC-AUC of in-hospital mortality on {owner['test_stays']} test stays "
            f"({owner['test_deaths']} deaths); the data owner's baseline (orig./orig. on every "
            f"variable) is {owner['roc_auc']:.3f} [{owner['roc_auc_ci'][0]:.3f}, "
            f"{owner['roc_auc_ci'][1]:.3f}]."
            if owner
            else ""
        ),
        "",
        "| method | release | seed attacker | strong attacker | strong top-5 | strongest of the "
        "family | bound | verdict | de-id./de-id. | orig./de-id. | de-id./orig. |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in figures["releases"]:
        low, high = r["strong_top1_ci_pct"]
        family = ""
        if r.get("strongest"):
            f_low, f_high = r["strongest_top1_ci_pct"]
            family = (
                f"{r['strongest']} {_fmt(r['strongest_top1_pct'], ' %')} "
                f"[{f_low:.1f}, {f_high:.1f}]"
            )
        ci = r.get("deid_deid_roc_auc_ci")
        deid = (
            f"{r['deid_deid_roc_auc']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
            if r.get("deid_deid_roc_auc") is not None
            else ""
        )
        lines.append(
            f"| {r['method']} | `{r['release']}` | {_fmt(r['seed_top1_pct'], ' %')} "
            f"| {_fmt(r['strong_top1_pct'], ' %')} [{low:.1f}, {high:.1f}] "
            f"| {_fmt(r['strong_top5_pct'], ' %')} | {family} | {_fmt(r['bound_pct'], ' %')} "
            f"| {r['verdict']} "
            f"| {deid} | {_fmt(r.get('orig_deid_roc_auc'))} | {_fmt(r.get('deid_orig_roc_auc'))} |"
        )
    if figures.get("decomposition"):
        lines += [
            "",
            "What the release costs, decomposed (`utility/trust_settings.csv` of each `ihm48` "
            'release): test ROC-AUC [95 % bootstrap interval]; "shipped" computes the original '
            'side as recorded, "like-for-like" on gap-filled series '
            "(`evaluate.utility.cross`). The owner's baseline is orig./orig. on every variable.",
            "",
            "| method | task | original side | orig./orig., all variables | orig./orig. "
            "| de-id./de-id. | orig./de-id. | de-id./orig. |",
            "|---|---|---|---:|---:|---:|---:|---:|",
        ]
        for method, rows in figures["decomposition"].items():
            for row in rows:
                cells = [
                    "" if c is None else f"{c[0]:.3f} [{c[1]:.3f}, {c[2]:.3f}]"
                    for c in row["cells"]
                ]
                if row["cross"] == "gap_filled":
                    cells[0] = cells[2] = ""  # the same as the shipped row's
                side = "like-for-like" if row["cross"] == "gap_filled" else "shipped"
                task = {"mortality": "mortality", "long_stay": "stay > 7 days"}.get(
                    row["task"], row["task"]
                )
                lines.append(f"| {method} | {task} | {side} | " + " | ".join(cells) + " |")
    if figures["joint_risk"]:
        lines += [
            "",
            "Joint risk of the `stays` release (`results/tabular/joint_risk_stays.csv`): what a "
            "recipient singles out holding the duration classes and demographics.",
            "",
            "| view | unique % | smallest class |",
            "|---|---:|---:|",
        ]
        lines += [
            f"| {r['view']} | {r['unique_pct']:.1f} | {r['smallest_class']} |"
            for r in figures["joint_risk"]
        ]
    if figures["pairs"]:
        lines += [
            "",
            "Releases held together (`results/cross_release.csv`): the share of release A's "
            "series a nearest-neighbour join pairs with their own series in release B, against "
            "chance.",
            "",
            "| release A | release B | paired % [95 %] | chance % |",
            "|---|---|---:|---:|",
        ]
        lines += [
            f"| {_short(p['a'])} | {_short(p['b'])} | {p['rate_pct']:.1f} "
            f"[{p['ci_pct'][0]:.1f}, {p['ci_pct'][1]:.1f}] | {p['chance_pct']:.2f} |"
            for p in figures["pairs"]
        ]
    return "\n".join(lines) + "\n"


def _name(*parts: Any) -> str:
    return " / ".join(str(p) for p in parts if p not in (None, ""))


def flatten(figures: dict[str, Any]) -> dict[str, Any]:
    """Every figure of :func:`run_figures` under a name a reader finds in the page, e.g.
    ``release genetic ihm48 / strong_top1_pct`` or ``pair <a> ~ <b> / rate_pct``; an interval
    gives two figures (``.../low``, ``.../high``)."""
    out: dict[str, Any] = {}

    def put(name: str, value: Any) -> None:
        if isinstance(value, list | tuple) and len(value) == 2:
            out[f"{name} / low"], out[f"{name} / high"] = value
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                put(f"{name} / {i}", v)
        else:
            out[name] = value

    for row in figures["releases"]:
        for key, value in row.items():
            if key not in ("method", "release"):
                put(_name(f"release {row['method']} {row['release']}", key), value)
    for key, value in (figures["owner"] or {}).items():
        put(_name("owner's baseline", key), value)
    for method, rows in figures["decomposition"].items():
        for row in rows:
            for (setting, variables), cell in zip(DECOMPOSITION, row["cells"], strict=True):
                put(
                    _name(
                        f"decomposition {method} {row['task']} {row['cross']}",
                        f"{setting} ({variables} variables)",
                    ),
                    cell,
                )
            put(
                _name(f"decomposition {method} {row['task']} {row['cross']}", "test stays"),
                row["test_stays"],
            )
            put(
                _name(f"decomposition {method} {row['task']} {row['cross']}", "positives"),
                row["positives"],
            )
    for release, row in figures["duration"].items():
        for key, value in row.items():
            put(_name(f"duration {release}", key), value)
    for row in figures["joint_risk"]:
        for key in ("unique_pct", "smallest_class"):
            put(_name(f"joint risk '{row['view']}'", key), row[key])
    for row in figures["pairs"]:
        for key in ("rate_pct", "ci_pct", "chance_pct"):
            put(_name(f"pair {row['a']} ~ {row['b']}", key), row[key])
    return out


def differences(quoted: dict[str, Any], measured: dict[str, Any]) -> list[str]:
    """One line per figure that differs between two :func:`run_figures` results (the page's
    and a run's), naming it: ``<figure>: the page says X, the run gives Y``."""
    a, b = flatten(quoted), flatten(measured)
    lines = []
    for name in sorted(set(a) | set(b)):
        if name not in b:
            lines.append(f"{name}: the page says {a[name]!r}, the run has no such figure")
        elif name not in a:
            lines.append(f"{name}: the page does not quote it, the run gives {b[name]!r}")
        elif a[name] != b[name]:
            lines.append(f"{name}: the page says {a[name]!r}, the run gives {b[name]!r}")
    return lines


def _dump(value: Any, indent: int = 0, width: int = 96) -> str:
    """JSON of ``value`` with every object or array that fits in ``width`` on one line, so that
    a figure's change is a one-line diff."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(flat) + indent <= width or not isinstance(value, dict | list) or not value:
        return flat
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {_dump(v, indent + 1, width)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + _dump(v, indent + 1, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def doc_block(config: dict[str, Any], figures: dict[str, Any]) -> str:
    """The block of docs/results.md: the machine-readable figures, the run's configuration
    and the figures rendered (no commit or date: CI remakes the run on every commit)."""
    data = _dump({"config": config, "figures": figures})
    header = (
        "Run: the suite's tiny run, remade by CI on every commit (`tests/workflow/conftest.py` "
        "`tiny_run`): a synthetic copy of the configuration below, laid over "
        "`config/config.yaml` (master seed `null`, so the public 2020). These are figures of a "
        "400-subject synthetic copy, not of MIMIC-III."
    )
    config_text = yaml.safe_dump(config, sort_keys=False, default_flow_style=None).rstrip()
    return f"{DATA}\n{data}\n-->\n" + render(
        figures, header + "\n\n```yaml\n" + config_text + "\n```"
    )


def read_block(text: str, where: Path = DOC) -> str:
    """The text between a page's two markers (the block this script writes)."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{where}: the markers of the figures block are missing ({BEGIN!r}).")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def quoted(text: str, where: Path = DOC) -> dict[str, Any]:
    """The ``config`` and ``figures`` a page's block quotes, from its machine-readable copy."""
    block = read_block(text, where)
    if not block.startswith(DATA + "\n"):
        raise SystemExit(f"{where}: the figures block does not start with {DATA!r}.")
    return json.loads(block[len(DATA) + 1 :].split("\n-->\n", 1)[0])


def replace_block(text: str, block: str) -> str:
    """``text`` with the block between the markers replaced by ``block``."""
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{BEGIN}\n{block}{END}{tail}"


def _tiny_run(workdir: Path) -> Path:
    """Make the suite's tiny run in ``workdir`` (a few minutes on 2 cores)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from workflow_helpers import prepare, snakemake

    snakemake(workdir, "--cores", "2", config=prepare(workdir))  # as the suite does
    return workdir


def _tiny_config() -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    from workflow_helpers import TINY_CONFIG

    return TINY_CONFIG


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, help="a finished run (default: make the tiny run)")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite docs/results.md's block")
    mode.add_argument("--check", action="store_true", help="name the figures that differ")
    mode.add_argument("--print", action="store_true", help="print the run's block")
    parser.add_argument(
        "--description",
        default="the default configuration (3,000 synthetic subjects, seed 1)",
        help="what was run (--print)",
    )
    parser.add_argument("--commit", help="the run's commit (--print; default: HEAD)")
    args = parser.parse_args()
    if args.run_dir is None and args.print:
        parser.error("--print needs --run-dir")
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.run_dir or _tiny_run(Path(tmp) / "tiny-run")
        figures = run_figures(run_dir)
    if args.print:
        header = (
            f"Run: {args.description}, on {time.strftime('%Y-%m-%d')} at commit "
            f"{args.commit or git_commit()}."
        )
        print(render(figures, header), end="")
        return 0
    text = DOC.read_text(encoding="utf-8")
    if args.write:
        DOC.write_text(replace_block(text, doc_block(_tiny_config(), figures)), encoding="utf-8")
        print(f"wrote the figures block of {DOC.relative_to(ROOT)}")
        return 0
    differ = differences(quoted(text)["figures"], figures)
    for line in differ:
        print(line)
    print(
        f"{len(differ)} figures of {DOC.relative_to(ROOT)} differ from the run"
        if differ
        else f"the run gives every figure of {DOC.relative_to(ROOT)}"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
