"""The data dictionary of a published release (deid.dictionary) and the release folder
(deid.release.publish_release): derived from the tables and the config, refused folders hold
the card only."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from doc_schemas import documented_schema, schema_paths, schema_problems

from mimic_deid.core.errors import InputDataError
from mimic_deid.deid import publish_release
from mimic_deid.deid.dictionary import dictionary_documents, release_dictionary
from mimic_deid.deid.hierarchy import load_hierarchies
from mimic_deid.pipeline.variables import load_variables, series_variables

ROOT = Path(__file__).resolve().parents[2]
VARIABLES = series_variables(load_variables(ROOT / "config" / "variables.yaml"))
HIERARCHIES = load_hierarchies(ROOT / "config" / "hierarchies.yaml")


def _tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    series = pd.DataFrame(
        {
            "pseudonym": ["Pa", "Pa", "Pb", "Pc"],
            "hour": pd.array([0, 1, 0, 0], dtype="int32"),
            "heart_rate": [80.0, 81.0, 90.0, 70.0],
            "glucose": [100.0, 110.0, 95.0, 130.0],
        }
    )
    index = pd.DataFrame(
        {
            "pseudonym": ["Pa", "Pb", "Pc"],
            "duration_class": pd.array([2, 1, 1], dtype="int32"),
            "split": ["train", "train", "test"],
            "age": ["30-39", "80+", "Age"],
            "gender": ["F", "Gender", "F"],
            "label": pd.array([0, 1, 0], dtype="int8"),
            "long_stay": pd.array([0, 0, 1], dtype="int8"),
        }
    )
    return series, index


def _column(dictionary: dict, file: str, name: str) -> dict:
    (entry,) = [f for f in dictionary["files"] if f["file"] == file]
    (column,) = [c for c in entry["columns"] if c["name"] == name]
    return column


def test_the_dictionary_gives_units_categories_and_levels_from_the_config():
    dictionary = release_dictionary("ihm48", *_tables(), VARIABLES, HIERARCHIES)
    assert dictionary["release"] == "ihm48"
    assert [f["file"] for f in dictionary["files"]] == [
        "series.parquet", "index.parquet", "card.json", "dictionary.json", "DICTIONARY.md"
    ]  # fmt: skip
    series = next(f for f in dictionary["files"] if f["file"] == "series.parquet")
    assert series["rows"] == 4
    assert [(c["name"], c["type"], c["unit"]) for c in series["columns"]] == [
        ("pseudonym", "string", None),
        ("hour", "int32", "hours"),
        ("heart_rate", "float64", "bpm"),  # config/variables.yaml's units
        ("glucose", "float64", "mg/dL"),
    ]
    assert _column(dictionary, "series.parquet", "glucose")["meaning"].startswith("Glucose: ")
    # gender: the codes as recorded and what they mean, and the suppressed label
    gender = _column(dictionary, "index.parquet", "gender")
    assert [(c["value"], c["meaning"], c["level"], c["count"]) for c in gender["categories"]] == [
        ("F", "female", 0, 2),
        ("M", "male", 0, 0),
        ("Gender", "suppressed: any gender", 1, 1),
    ]
    # age: every band of every published level with its range; level 0 (the age) never shown
    age = _column(dictionary, "index.parquet", "age")
    assert age["unit"] == "years"
    assert [(lev["level"], lev["step"], lev["published"]) for lev in age["levels"]] == [
        (0, "as recorded", False),
        (1, "ranges", True),
        (2, "groups", True),
        (3, "groups", True),
        (4, "suppress", True),
    ]
    bands = {c["value"]: (c["meaning"], c["level"], c["count"]) for c in age["categories"]}
    assert len(bands) == 15
    assert bands["30-39"] == ("30 to 39 years", 1, 1)
    assert bands["90+"] == ("at least 90 years", 1, 0)
    assert bands["<40"] == ("0 to 39 years (one of <30, 30-39)", 2, 0)
    assert bands["80+"] == ("at least 80 years (one of 80-89, 90+)", 2, 1)
    assert bands["Age"] == ("suppressed: any age", 4, 1)
    label = _column(dictionary, "index.parquet", "label")
    assert [(c["value"], c["meaning"], c["count"]) for c in label["categories"]] == [
        ("0", "survived the hospital stay", 2),
        ("1", "died in hospital", 1),
    ]
    split = _column(dictionary, "index.parquet", "split")
    assert [(c["value"], c["count"]) for c in split["categories"]] == [
        ("train", 2), ("validation", 0), ("test", 1)
    ]  # fmt: skip
    assert _column(dictionary, "index.parquet", "duration_class")["unit"] == "hours"


def test_grouped_prefixes_read_as_recorded_values_and_a_missing_value_is_named():
    series, index = _tables()
    index = index.drop(columns=["label", "long_stay"])
    index["ethnicity"] = ["White", "Unknown", "Ethnicity"]
    index["admission_type"] = ["ELECTIVE", "?", "Unplanned"]
    dictionary = release_dictionary("stays", series, index, VARIABLES, HIERARCHIES)
    ethnicity = _column(dictionary, "index.parquet", "ethnicity")
    meanings = {c["value"]: c["meaning"] for c in ethnicity["categories"]}
    assert meanings["White"] == "recorded values beginning with WHITE, PORTU"
    assert [lev["published"] for lev in ethnicity["levels"]] == [False, False, True, True]
    admission = _column(dictionary, "index.parquet", "admission_type")
    rows = {c["value"]: (c["meaning"], c["level"], c["count"]) for c in admission["categories"]}
    assert rows["ELECTIVE"] == ("as recorded", 0, 1)
    assert rows["?"][0] == "missing in the source" and rows["?"][2] == 1
    assert rows["Unplanned"] == ("one of EMERGENCY, URGENT, NEWBORN", 1, 1)


def test_a_column_the_dictionary_cannot_describe_is_refused_naming_it():
    series, index = _tables()
    with pytest.raises(InputDataError) as err:
        release_dictionary("ihm48", series, index.assign(ward="A"), VARIABLES, HIERARCHIES)
    assert str(err.value) == (
        "index.parquet: column 'ward' has no entry in the data dictionary; expected pseudonym, "
        "duration_class, split, a demographic ['age', 'gender', 'admission_type', 'insurance', "
        "'ethnicity'] or a label ['label', 'long_stay']"
    )
    with pytest.raises(InputDataError) as err:
        release_dictionary("ihm48", series, index.assign(age="47"), VARIABLES, HIERARCHIES)
    assert str(err.value) == (
        "index.parquet: column 'age' holds 1 value(s) that no publishable level of its "
        "hierarchy names (values are never shown); expected labels of levels >= 1"
    )
    with pytest.raises(InputDataError) as err:
        release_dictionary("ihm48", series.assign(pulse=1.0), index, VARIABLES, HIERARCHIES)
    assert str(err.value).startswith(
        "series.parquet: column 'pulse' is not a variable of the variables file; expected one "
        "of ['capillary_refill_rate', "
    )


def test_a_certified_folder_holds_data_card_and_dictionary_a_refused_one_the_card(tmp_path):
    series, index = _tables()
    staged = {}
    for name, table in (("series.parquet", series), ("index.parquet", index)):
        staged[name] = tmp_path / name
        table.to_parquet(staged[name])
    card = tmp_path / "card.json"
    card.write_text('{"passed": true, "verdict": "certified"}\n')
    documents = dictionary_documents(
        release_dictionary("ihm48", series, index, VARIABLES, HIERARCHIES)
    )
    public = tmp_path / "release"
    names = publish_release({"passed": True, "verdict": "certified"}, staged, public, card,
                            documents)  # fmt: skip
    assert names == sorted(p.name for p in public.iterdir()) == [
        "DICTIONARY.md", "card.json", "dictionary.json", "index.parquet", "series.parquet"
    ]  # fmt: skip
    assert (public / "card.json").read_text() == '{"passed": true, "verdict": "certified"}\n'
    written = json.loads((public / "dictionary.json").read_text())
    assert {f["file"] for f in written["files"]} == set(names)  # it describes every file
    text = (public / "DICTIONARY.md").read_text()
    assert "| `Gender` | suppressed: any gender | 1 | 1 |" in text
    assert "| `heart_rate` | float64 | bpm |" in text
    # refused: the verdict and the card, nothing computed from the withheld values
    verdict = "refused: linkage bound: strong attacker's top-1 21.0 % > bound 1/5 = 20.0 %"
    card.write_text(json.dumps({"passed": False, "verdict": verdict}) + "\n")
    names = publish_release({"passed": False, "verdict": verdict}, staged, public, card,
                            documents)  # fmt: skip
    assert names == sorted(p.name for p in public.iterdir()) == ["card.json", "refused.txt"]
    assert (public / "refused.txt").read_text() == verdict + "\n"
    assert json.loads((public / "card.json").read_text()) == {"passed": False, "verdict": verdict}


def test_docs_give_the_dictionarys_whole_schema():
    """docs/outputs.md, "The data dictionary": every key and type of dictionary.json."""
    series, index = _tables()
    documents = dictionary_documents(
        release_dictionary("ihm48", series, index, VARIABLES, HIERARCHIES)
    )
    dictionary = json.loads(documents["dictionary.json"])
    schema = documented_schema("The data dictionary")
    assert schema_problems(dictionary, schema) == []
    assert schema_paths(dictionary, schema) == set(schema)
