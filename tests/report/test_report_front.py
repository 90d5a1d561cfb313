"""The public report as a newcomer reads it (issue 28): it opens with what was run and a
glossary, its numbers are rounded (percent for shares, also in the sequences section), and no
table is wider than the page."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from families import unavailable
from test_report_audience import _write_inputs
from test_report_decision import _build
from workflow_helpers import ROOT

from mimic_deid.report import build_report, load_report_data
from mimic_deid.report.front import GLOSSARY, NOT_A_CHECKOUT, SYNTHETIC_LABEL, git_revision
from mimic_deid.report.html import write_index
from mimic_deid.report.sequences import attack_table, sequences_table
from mimic_deid.report.tables import DECIMALS, round_table, write_table
from mimic_deid.stages import REPORT_MODULES

POINT = {"dk": 5, "fk": 3, "heuristic": "range", "method": "adhoc-it50-ns0.01"}
COHORT = {
    "min_age": 18,
    "rules": [
        {"rule": "start", "stays": 127, "admissions": 120, "subjects": 100},
        {"rule": "min_age", "stays": 88, "admissions": 88, "subjects": 72},
    ],
}
SECRET_SEED = 918273645


def _run(kind: str) -> dict:
    return {
        "source_kind": kind,
        "synthetic_subjects": 100,
        "synthetic_other_chart_rows": 4.2,
        "cohort": COHORT,
        "commit": "abc1234",
        "date": "2026-11-27",
        "dk": [5],
        "fk": [3],
        "heuristic": ["range"],
        "methods": ["adhoc-it50-ns0.01"],
        "release_variables": "features",
        "seed": SECRET_SEED,  # given by mistake: never shown
    }


class _Tables(HTMLParser):
    """Every table of a page: its rows of cell texts and whether a scroll box holds it."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.stack: list[str] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class", "")
        if tag == "table":
            self.tables.append({"rows": [], "scroll": "table-scroll" in self.stack})
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self.cell = []
        self.stack.append(cls if tag == "div" else tag)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1]["rows"][-1].append("".join(self.cell).strip())
            self.cell = None
        while self.stack:
            top = self.stack.pop()
            if top == tag or tag == "div":
                break

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def _tables(html_text: str) -> list[dict]:
    parser = _Tables()
    parser.feed(html_text)
    return parser.tables


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("front")
    inputs = {k: v for k, v in _write_inputs(folder, POINT).items() if not k.startswith("ga_")}
    data = load_report_data(inputs, POINT, duration_method="greedy", series_distance="euclidean")
    out = {}
    for kind in ("synthetic", "csv"):
        base = folder / kind
        build_report(
            data,
            base / "figures",
            base / "tables",
            base / "index.html",
            run=_run(kind),
            modules=REPORT_MODULES,
        )
        out[kind] = base
    return out


def test_report_opens_with_what_was_run(built):
    text = (built["synthetic"] / "index.html").read_text()
    headings = re.findall(r"<h2>(.*?)</h2>", text)
    assert headings[:3] == ["What to hand out", "What was run", "Glossary"]
    assert f"<h1>mimic-deid report ({SYNTHETIC_LABEL})</h1>" in text
    assert "SYNTHETIC DATA, NOT MIMIC-III" in text
    facts = {row[0]: row[1] for row in _tables(text)[0]["rows"][1:]}
    assert facts["source"].startswith("synthetic (") and SYNTHETIC_LABEL in facts["source"]
    assert facts["in the source (ICUSTAYS)"] == "100 subjects, 120 admissions, 127 ICU stays"
    assert facts["in the cohort"].startswith("72 subjects, 88 ICU stays")
    assert facts["code commit"] == "abc1234" and facts["commit date"] == "2026-11-27"
    assert facts["duration k (dk)"] == "5" and facts["feature k (fk)"] == "3"
    assert facts["release methods"] == "adhoc-it50-ns0.01"
    assert facts["published variables (release.variables)"] == "features"
    assert facts["series in the `stays` release"] == "12"
    assert facts["subjects generated"] == "100"
    assert facts["other CHARTEVENTS items per generated row"] == "4.2 (real MIMIC-III's item mix)"
    assert str(SECRET_SEED) not in text and "seed 918" not in text
    real = (built["csv"] / "index.html").read_text()
    assert SYNTHETIC_LABEL not in real and "SYNTHETIC" not in real
    assert "subjects generated" not in real and "other CHARTEVENTS items" not in real
    assert "<h1>mimic-deid report</h1>" in real


def test_glossary_defines_the_terms_the_report_uses(built):
    text = (built["synthetic"] / "index.html").read_text()
    glossary = _tables(text)[1]["rows"]
    assert glossary[0] == ["term", "meaning", "source"]
    terms = " ".join(row[0] for row in glossary[1:])
    for term in ("CUL", "ILM", "ALM", "DPS", "Definition 4", "Δ-AUC", "unfeasibility",
                 "distortion", "top-1", "top-5", "orig.", "de-id.", "k-class", "m-concealing",
                 "Prec", "k-map", "AvgRE", "STE", "CTE"):  # fmt: skip
        assert term in terms, term
    for term, meaning, source in GLOSSARY:
        # one sentence: ends with a full stop, no full stop followed by a new sentence
        assert meaning.endswith(".") and not re.search(r"\.\s+[A-Z]", meaning), term
        assert source, term


def test_git_revision_is_the_commit_and_its_date(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    got = git_revision(ROOT)
    want = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%h %cs"], capture_output=True, text=True
    ).stdout.split()
    if want:
        assert got["commit"].split(" + ")[0] == want[0] and got["date"] == want[1]
    assert git_revision(tmp_path) == {"commit": NOT_A_CHECKOUT, "date": NOT_A_CHECKOUT}


#: Decimals of a number in fixed notation (scientific notation keeps 2 significant digits).
_NUMBER = re.compile(r"(?<![\w.])-?\d+\.(\d+)(?![\d.]*e)")


def _max_decimals(cells) -> int:
    found = [len(m.group(1)) for c in cells for m in _NUMBER.finditer(str(c))]
    return max(found, default=0)


def test_no_table_cell_has_more_than_the_allowed_decimals(built):
    base = built["synthetic"]
    allowed = max(DECIMALS.values())
    for path in sorted((base / "tables").glob("*.csv")):
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        assert _max_decimals(frame.to_numpy().ravel()) <= allowed, path.name
    for path in sorted((base / "tables").glob("*.md")):
        assert _max_decimals([path.read_text()]) <= allowed, path.name
    for table in _tables((base / "index.html").read_text()):
        cells = [c for row in table["rows"] for c in row]
        assert _max_decimals(cells) <= allowed, cells[:8]
    # the duration table really had long floats to round (8.621641516378359 in the issue)
    raw = pd.read_csv(base / "tables" / "duration_methods.csv")
    assert raw["records_lost_mean"].map(lambda v: len(repr(v)) <= 6).all()


def test_round_table_by_column_kind(tmp_path):
    df = pd.DataFrame(
        {
            "records_lost_mean": [8.621641516378359, 8.84],
            "records_lost_pct_mean": [4.83123, 100.0],
            "moved": [1824, 3],
            "roc_auc": [0.851234, 0.5],
            "p_value": [9.4321e-8, 0.0501234],
            "delta": [1.23456e-5, 3.2e-6],
            "mean_support": [80183.24, 16.7e6],
            "setting": ["orig. / orig.", "0.85 [0.83, 0.87]"],
        }
    )
    r = round_table(df)
    assert r["records_lost_mean"].tolist() == [8.62, 8.84]
    assert r["records_lost_pct_mean"].tolist() == [4.8, 100.0]
    assert r["moved"].tolist() == [1824, 3]
    assert r["roc_auc"].tolist() == [0.851, 0.5]
    assert r["p_value"].tolist() == [9.4e-8, 0.05]
    assert r["delta"].tolist() == [1.2e-5, 3.2e-6]
    assert r["mean_support"].tolist() == [80183.0, 16700000.0]
    assert r["setting"].tolist() == df["setting"].tolist()
    write_table(df, tmp_path / "t.csv", tmp_path / "t.md")
    assert "8.62," in (tmp_path / "t.csv").read_text()
    assert "| 8.62 | 4.8 | 1824 | 0.851 | 9.4e-08 |" in (tmp_path / "t.md").read_text()


def test_sequences_tables_are_in_percent():
    sweep = pd.DataFrame(
        {
            "table": "transfers",
            "mechanism": "seed_ratio",
            "epsilon": [0.05, 0.05, np.inf],
            "similarity": [0.9, 0.8, 0.95],
            "top20_intersection": [0.75, 0.65, 0.9],
            "mean_support": [46.3, 40.1, 11.7],
            "suppression_rate": [0.8, 0.6, 0.0],
        }
    )
    table = sequences_table(sweep)
    assert table["top20_intersection_pct"].tolist() == pytest.approx([70.0, 90.0])
    assert table["suppressed_pct"].tolist() == pytest.approx([70.0, 0.0])
    assert table["similarity"].tolist() == pytest.approx([0.85, 0.95])  # a score, not a share
    attack = {
        "table": "transfers",
        "release": {"released": 120, "verbatim": 0.5, "verbatim_unique": 0.05,
                    "unique_reproduced": 6},
        "members": {"unique_reproduced_share": 0.1},
        "holdout": {"unique_reproduced_share": 0.04},
        "advantage": 0.06,
        "advantage_se": 0.02,
    }  # fmt: skip
    row = attack_table([attack]).iloc[0]
    assert row["verbatim_pct"] == 50.0 and row["verbatim_unique_pct"] == 5.0
    assert row["member_hit_rate_pct"] == 10.0 and row["holdout_hit_rate_pct"] == 4.0
    assert row["advantage_pct"] == pytest.approx(6.0) and row["released"] == 120
    assert not {"verbatim", "advantage", "member_hit_rate"} & set(attack_table([attack]).columns)
    assert row["verdict"] == "n/a"  # no check given
    refused = "refused: sequence release sequences/transfers/release: 0.1500 of the ..."
    assert attack_table([attack], {"transfers": refused}).iloc[0]["verdict"] == refused


def test_every_table_scrolls_inside_the_page(built):
    tables = _tables((built["synthetic"] / "index.html").read_text())
    assert tables and all(t["scroll"] for t in tables)


def _chromium() -> str:
    """The headless browser; its family is skipped without one, or failed where CI requires
    it (``MIMIC_DEID_REQUIRE`` names ``chromium``; Debian: ``apt-get install chromium``)."""
    for name in ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    found = sorted(Path("/usr/lib/chromium").glob("chrome*")) if Path("/usr/lib").exists() else []
    if not found:
        unavailable("chromium", "no headless Chromium installed (apt-get install chromium)")
    return str(found[0])


def _browser(*args: str) -> subprocess.CompletedProcess:
    # generous: a browser's first start on a loaded 2-core machine takes tens of seconds
    return subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.mark.parametrize("page_kind", ["report", "wide_table"])
def test_page_is_no_wider_than_the_window_in_a_browser(built, tmp_path, page_kind):
    """Rendered by headless Chromium at 1024 px, the page does not scroll sideways: the
    report as built, and a page with a table of 30 wide columns (it scrolls in its own box)."""
    if page_kind == "wide_table":
        wide = pd.DataFrame([[f"value {i} of a long column" for i in range(30)]] * 3)
        wide.columns = [f"a long column heading number {i}" for i in range(30)]
        source = tmp_path / "wide"
        write_index(source / "index.html", "wide", [{"title": "t", "items": [
            {"kind": "table", "data": wide, "caption": "30 columns"}]}])  # fmt: skip
        (source / "figures").mkdir()
        (source / "tables").mkdir()
    else:
        source = built["synthetic"]
    page = tmp_path / "index.html"
    probe = (
        "<script>document.addEventListener('DOMContentLoaded', () => {"
        "const p = document.createElement('pre'); p.id = 'width';"
        "p.textContent = document.documentElement.scrollWidth + ' ' + window.innerWidth;"
        "document.body.appendChild(p);});</script></body>"
    )
    text = (source / "index.html").read_text()
    page.write_text(text.replace("</body>", probe))
    for sub in ("figures", "tables"):
        shutil.copytree(source / sub, tmp_path / sub)
    proc = _browser("--window-size=1024,800", "--dump-dom", page.as_uri())
    match = re.search(r'<pre id="width">(\d+) (\d+)</pre>', proc.stdout)
    assert match, proc.stderr[-2000:]
    scroll, window = map(int, match.groups())
    assert scroll <= window, (scroll, window)


#: The first screen's marks (report.html CSS): a certified and a refused release's border.
CERTIFIED_RGB, REFUSED_RGB = (0x1A, 0x7F, 0x37), (0xCF, 0x22, 0x2E)


def _marked_rows(png: Path, rgb: tuple[int, int, int]) -> np.ndarray:
    """The pixel rows of a screenshot that hold the colour ``rgb``."""
    import matplotlib.image

    pixels = np.rint(matplotlib.image.imread(png)[..., :3] * 255).astype(int)
    hit = (np.abs(pixels - np.array(rgb)) <= 8).all(axis=-1)
    return np.flatnonzero(hit.any(axis=1))


@pytest.mark.parametrize("verdicts", ["certified", "refused"])
def test_the_first_screen_shows_the_decision_in_a_browser(tmp_path, verdicts):
    """A screenshot at 1024 x 800 px, as a person opening the report sees it: the sentence of
    every release is on the first screen, above the contents, marked green when certified
    and red when refused; the page does not scroll sideways."""
    passed = verdicts == "certified"
    out, _ = _build(tmp_path, {"stays": passed, "ihm48": passed})
    shot = tmp_path / "first_screen.png"
    proc = _browser("--window-size=1024,800", f"--screenshot={shot}", (out / "index.html").as_uri())
    assert shot.is_file(), proc.stderr[-2000:]
    import matplotlib.image

    assert matplotlib.image.imread(shot).shape[:2] == (800, 1024)
    mine, other = (CERTIFIED_RGB, REFUSED_RGB) if passed else (REFUSED_RGB, CERTIFIED_RGB)
    rows = _marked_rows(shot, mine)
    # two sentences, each a block of marked rows, both on the first screen
    blocks = np.count_nonzero(np.diff(rows) > 1) + 1 if rows.size else 0
    assert blocks == 2 and rows.max() < 800, rows
    assert _marked_rows(shot, other).size == 0
    probe = (
        "<script>document.addEventListener('DOMContentLoaded', () => {"
        "const d = document.querySelector('ul.decisions').getBoundingClientRect();"
        "const t = document.querySelector('nav.toc').getBoundingClientRect();"
        "const p = document.createElement('pre'); p.id = 'layout';"
        "p.textContent = [d.bottom, t.top, window.innerHeight,"
        " document.documentElement.scrollWidth, window.innerWidth].map(Math.round).join(' ');"
        "document.body.appendChild(p);});</script></body>"
    )
    page = out / "probe.html"
    page.write_text((out / "index.html").read_text().replace("</body>", probe))
    proc = _browser("--window-size=1024,800", "--dump-dom", page.as_uri())
    match = re.search(r'<pre id="layout">([\d ]+)</pre>', proc.stdout)
    assert match, proc.stderr[-2000:]
    bottom, toc, height, scroll, width = map(int, match.group(1).split())
    assert bottom <= toc and bottom <= height and scroll <= width
