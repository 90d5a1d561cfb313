"""CHARTEVENTS rows of items outside the benchmark (``other_chart_rows``): real MIMIC-III's
mix of item ids, with every other row of the copy unchanged and the extraction's output the
same as without them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.csv as pacsv
import pytest

from mimic_deid.cli import main
from mimic_deid.core.errors import ConfigError
from mimic_deid.pipeline.variables import configured_itemids, load_variables
from mimic_deid.sources import extract_raw, open_source
from mimic_deid.synthetic import generate
from mimic_deid.synthetic.catalog import OTHER_CHART_ITEMS
from mimic_deid.synthetic.quirks import REAL_OTHER_CHART_ROWS

ROOT = Path(__file__).resolve().parents[2]
VARIABLES = load_variables(ROOT / "config" / "variables.yaml")
SUBJECTS, SEED = 200, 3


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("other_chart_rows")
    generate(root / "plain", subjects=SUBJECTS, seed=SEED)
    generate(root / "real", subjects=SUBJECTS, seed=SEED, other_chart_rows=REAL_OTHER_CHART_ROWS)
    return {"plain": root / "plain", "real": root / "real"}


def _lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def _chart(directory: Path):
    return pacsv.read_csv(directory / "CHARTEVENTS.csv.gz").to_pandas()


def test_real_mix_of_benchmark_rows(copies: dict[str, Path]) -> None:
    configured = configured_itemids(VARIABLES)
    plain, real = _chart(copies["plain"]), _chart(copies["real"])
    assert plain.ITEMID.isin(configured).mean() == pytest.approx(0.88, abs=0.03)
    assert real.ITEMID.isin(configured).mean() == pytest.approx(0.17, abs=0.02)
    assert len(real) / len(plain) == pytest.approx(1 + REAL_OTHER_CHART_ROWS, rel=0.02)
    other = {it.itemid for it in OTHER_CHART_ITEMS}
    assert not other & configured
    added = real[real.ITEMID.isin(other)]
    assert len(added) == len(real) - len(plain)
    # at the times of the rows they follow: no chart time of a stay that the stay lacked
    times = set(zip(plain.ICUSTAY_ID, plain.CHARTTIME, strict=True))
    assert set(zip(added.ICUSTAY_ID, added.CHARTTIME, strict=True)) <= times
    assert added.ITEMID.nunique() > 250  # a long tail: most of the 300 items occur
    metavision = added.ITEMID >= 220000
    assert added.loc[~metavision, "ERROR"].isna().all()
    assert (added.loc[metavision, "ERROR"] == 0).all()
    assert added.VALUE.notna().all() and added.VALUENUM.isna().any()
    assert set(real.ITEMID) <= set(
        pacsv.read_csv(copies["real"] / "D_ITEMS.csv.gz")["ITEMID"].to_pylist()
    )


def test_every_other_row_unchanged(copies: dict[str, Path]) -> None:
    for name in ("PATIENTS", "ADMISSIONS", "ICUSTAYS", "LABEVENTS", "OUTPUTEVENTS", "TRANSFERS"):
        a = (copies["plain"] / f"{name}.csv.gz").read_bytes()
        assert a == (copies["real"] / f"{name}.csv.gz").read_bytes(), name
    other = {str(it.itemid) for it in OTHER_CHART_ITEMS}

    def without_row_id(lines: list[str]) -> list[str]:
        return [line.split(",", 1)[1] for line in lines]

    real = [line for line in _lines(copies["real"] / "CHARTEVENTS.csv.gz")
            if line.split(",")[4] not in other]  # fmt: skip
    assert without_row_id(real) == without_row_id(_lines(copies["plain"] / "CHARTEVENTS.csv.gz"))
    d_items = _lines(copies["real"] / "D_ITEMS.csv.gz")
    assert len(d_items) == len(_lines(copies["plain"] / "D_ITEMS.csv.gz")) + len(OTHER_CHART_ITEMS)
    summary = json.loads((copies["real"] / "SYNTHETIC.json").read_text())
    assert summary["other_chart_rows"] == REAL_OTHER_CHART_ROWS
    assert json.loads((copies["plain"] / "SYNTHETIC.json").read_text())["other_chart_rows"] == 0


def test_extraction_output_unchanged(copies: dict[str, Path], tmp_path: Path) -> None:
    itemids = configured_itemids(VARIABLES)
    counts = {}
    for name, directory in copies.items():
        counts[name] = extract_raw(open_source("csv", csv_path=str(directory)), tmp_path / name,
                                   itemids, 4, 50_000)  # fmt: skip
    files = sorted(
        p.relative_to(tmp_path / "plain") for p in (tmp_path / "plain").rglob("*.parquet")
    )
    assert len(files) == 7
    for rel in files:
        assert (tmp_path / "plain" / rel).read_bytes() == (tmp_path / "real" / rel).read_bytes(), (
            rel
        )
    plain, real = counts["plain"]["tables"]["chartevents"], counts["real"]["tables"]["chartevents"]
    assert real["kept"] == plain["kept"] and real["rows_read"] > 5 * plain["kept"]


def test_out_of_range_rate_is_refused(tmp_path: Path) -> None:
    for bad in (-0.5, 51, float("nan"), "4.2", True):
        with pytest.raises(ConfigError) as info:
            generate(tmp_path / "out", subjects=5, seed=1, other_chart_rows=bad)
        assert str(info.value) == (
            "synthetic generator: other_chart_rows must be a number from 0 to 50 "
            f"(4.2: real MIMIC-III's mix), got {bad!r}"
        )
    assert not (tmp_path / "out").exists()


def test_cli_takes_the_rate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "copy"
    assert main(["synth", "--subjects", "20", "--seed", "1", "--out", str(out),
                 "--other-chart-rows", "2"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["other_chart_rows"] == 2.0
    with pytest.raises(SystemExit) as exc:
        main(["synth", "--subjects", "5", "--seed", "1", "--out", "x", "--other-chart-rows", "-1"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "mimic-deid synth: error: argument --other-chart-rows: must be from 0 to 50, got -1"
    )
