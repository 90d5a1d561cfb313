"""synthetic/reference.py: the CSV package data of the synthetic copy."""

from __future__ import annotations

import pytest

from mimic_deid.synthetic import reference
from mimic_deid.synthetic.reference import read_table


def _package(tmp_path, monkeypatch, text: str) -> None:
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "toy.csv").write_text(text, encoding="utf-8")
    monkeypatch.setattr(reference, "files", lambda package: tmp_path)


def test_cells_are_converted_and_empty_cells_are_none(tmp_path, monkeypatch):
    _package(tmp_path, monkeypatch, 'id,label,value\n3,"a, b",0.40\n7,,\n')
    assert read_table("toy", (int, str, float)) == ((3, "a, b", 0.4), (7, None, None))


def test_a_row_of_the_wrong_width_names_the_file_and_line(tmp_path, monkeypatch):
    _package(tmp_path, monkeypatch, "id,label\n3,a\n4,b,extra\n")
    with pytest.raises(ValueError) as err:
        read_table("toy", (int, str))
    assert str(err.value) == "synthetic/tables/toy.csv line 3: 3 cells, expected 2"


def test_every_shipped_table_reads_from_the_installed_package():
    assert len(read_table("signals", (str, str) + (float,) * 7)) == 26
    assert {row[0] for row in read_table("layouts", (str, str, str))} >= {"CHARTEVENTS", "D_ITEMS"}
