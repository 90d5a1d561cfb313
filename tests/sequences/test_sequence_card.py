"""The card and the data dictionary of a sequence release (sequences.card, deid.dictionary)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from doc_schemas import documented_schema, schema_paths, schema_problems

from mimic_deid.core.errors import InputDataError
from mimic_deid.deid.dictionary import dictionary_documents, sequence_dictionary
from mimic_deid.sequences.card import GUARANTEE, sequence_card

CHECK = {
    "passed": False,
    "table": "sequences/transfers/release",
    "verdict": "refused: sequence release sequences/transfers/release: 0.1200 of the released "
    "sequences copy a sequence unique in the source, above "
    "sequences.attack.max_verbatim_unique = 0.1",
    "checks": {"sequence_columns": {"columns": ["object", "section", "position", "state"]}},
}
SUMMARY = {"table": "transfers", "mechanism": "seed_ratio", "epsilon": 0.35, "hashes": 20}
ATTACK = {"release": {"released": 140, "verbatim_unique": 0.12}, "advantage": 0.01}


def test_the_card_gathers_verdict_guarantee_and_attack_whatever_the_verdict():
    card = sequence_card("transfers", CHECK, SUMMARY, ATTACK)
    assert card == {
        "release": "sequences/transfers",
        "table": "transfers",
        "passed": False,
        "verdict": CHECK["verdict"],
        "mechanism": "seed_ratio",
        "guarantee": GUARANTEE["seed_ratio"],
        "summary": SUMMARY,
        "attack": ATTACK,
        "checks": CHECK["checks"],
    }
    assert card["guarantee"].startswith("NOT eps-DP")
    schema = documented_schema("The card of a sequence release")
    assert schema_problems(json.loads(json.dumps(card)), schema) == []
    assert schema_paths(card, schema) == set(schema)


def test_the_dictionary_names_every_state_with_its_meaning_and_records():
    release = pd.DataFrame(
        {
            "object": [0, 0, 1],
            "section": [0, 0, 0],
            "position": [0, 1, 0],
            "state": ["MICU", "WARD", "MICU"],
        }
    )
    dictionary = json.loads(
        dictionary_documents(sequence_dictionary("transfers", release))["dictionary.json"]
    )
    assert dictionary["release"] == "sequences/transfers"
    (table,) = [f for f in dictionary["files"] if f["file"] == "release.parquet"]
    assert table["rows"] == 3
    assert [c["name"] for c in table["columns"]] == ["object", "section", "position", "state"]
    state = table["columns"][3]
    assert [(c["value"], c["meaning"], c["count"]) for c in state["categories"]] == [
        ("MICU", "medical intensive care unit", 2),
        ("WARD", "general ward (no ICU care unit)", 1),
    ]
    schema = documented_schema("The data dictionary")
    assert schema_problems(dictionary, schema) == []
    with pytest.raises(InputDataError) as err:
        sequence_dictionary("transfers", release.assign(time=1.0))
    assert str(err.value) == (
        "sequences/transfers/release.parquet: columns ['object', 'section', 'position', "
        "'state', 'time']; expected ['object', 'section', 'position', 'state']"
    )
