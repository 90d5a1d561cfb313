r"""The vectorised string rules of the cleaning equal the per-row rules they replace.

The reference functions below are the per-row implementations the cleaning used before it was
vectorised (a Python regex or dict lookup per row); the vectorised ones must agree with them on
every string, including the awkward ones: Unicode digits and blanks, signs, bare dots, a
trailing newline, control characters, nulls. One intended difference: a ratio of Unicode digits
(matched by Python's ``\d``, not parsed by pandas) stopped the job with a ValueError; it is now
unparseable (the reference below coerces, as the new rule does).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from series_reference import clean_events, parse_numeric, parse_ratio, parse_text_map

from mimic_deid.pipeline.cleaning import (
    RATIO_RE2,
    clean_rows,
    clean_stats,
    conversion_mask,
)
from mimic_deid.pipeline.variables import Conversion, load_variables

VARIABLES = load_variables(Path(__file__).resolve().parents[2] / "config" / "variables.yaml")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)"
_RATIO = rf"^\s*({_NUMBER})\s*/\s*({_NUMBER})\s*$"

TRICKY = [
    "120/80", " 120 / 80 ", "120/80/60", "+1.5/-.5", "1./2.", ".5/.", "/", "", " ", "80",
    " 75 ", "1e5/2", "1/2e3", "nan/1", "inf/2", "120/80\n", "120/80\n\n", "\n120/80",
    "\x0b120/80\x0c", "\x1c120/\x1f80", "\x1b120/80", "\xa0120/80", "120\u3000/80",
    "\u0661\u0662\u0660/\u0668\u0660", "\u0663/4", "12\u00b2/3", "120/ 80x", "-/-", "+/+",
    "120 /", "0/0", "00012/0008", "1,5/2", "120\t/\t80", "１２０/８０", "120/80 mmHg",
    "Normal <3 secs", " BRISK ", "delayed", "abnormal >3 secs", "İ", "ẞ", "None", "NULL",
]  # fmt: skip


def ratio_per_row(value: pd.Series, valuenum: pd.Series, part: int) -> np.ndarray:
    """The previous rule: VALUENUM or VALUE as a number, then a Python regex on every row."""
    out = numeric_per_row(value, valuenum)
    parts = value.astype("string").str.extract(_RATIO)
    is_ratio = parts[0].notna().to_numpy(dtype=bool)
    if is_ratio.any():
        numbers = pd.to_numeric(parts.loc[is_ratio, part], errors="coerce")
        out[is_ratio] = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    return out


def numeric_per_row(value: pd.Series, valuenum: pd.Series) -> np.ndarray:
    out = pd.to_numeric(valuenum, errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan, copy=True
    )
    missing = np.isnan(out)
    if missing.any():
        text = value[missing].astype("string").str.strip()
        out[missing] = pd.to_numeric(text, errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
    return out


def text_map_per_row(value: pd.Series, valuenum: pd.Series, text_map: dict) -> np.ndarray:
    mapped = value.astype("string").str.strip().str.lower().map(text_map)
    out = pd.to_numeric(mapped, errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan, copy=True
    )
    missing = np.isnan(out)
    if missing.any():
        out[missing] = numeric_per_row(value[missing], valuenum[missing])
    return out


def uom_per_row(uom: pd.Series, units: tuple[str, ...]) -> np.ndarray:
    pattern = "|".join(re.escape(u) for u in units)
    hit = uom.astype("string").str.contains(pattern, case=False, regex=True, na=False)
    return hit.to_numpy(dtype=bool, na_value=False)


def columns(strings: list, valuenums: list | None = None) -> tuple[pd.Series, pd.Series]:
    value = pd.Series(strings, dtype="str")
    num = [np.nan] * len(strings) if valuenums is None else valuenums
    return value, pd.Series(num, dtype=np.float64)


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_array_equal(got, want)  # NaN == NaN here, bit-exact otherwise
    assert got.dtype == want.dtype == np.float64


@pytest.mark.parametrize("part", [0, 1])
def test_ratio_equals_the_per_row_rule_on_tricky_strings(part: int) -> None:
    strings = [*TRICKY, None]
    value, valuenum = columns(strings)
    assert_same(parse_ratio(value, valuenum, part), ratio_per_row(value, valuenum, part))
    # VALUENUM present: the ratio still wins where VALUE is one, VALUENUM elsewhere.
    value, valuenum = columns(strings, [float(i) for i in range(len(strings))])
    assert_same(parse_ratio(value, valuenum, part), ratio_per_row(value, valuenum, part))


def test_ratio_known_values() -> None:
    value, valuenum = columns(["120/80", "\u0663/4", "\xa01/2", "120/80\n", "1/2/3", "7"])
    np.testing.assert_array_equal(
        parse_ratio(value, valuenum, 0),
        [120.0, ratio_per_row(value, valuenum, 0)[1], 1, 120, np.nan, 7],
    )
    np.testing.assert_array_equal(
        parse_ratio(value, valuenum, 1)[[0, 2, 3, 4, 5]], [80, 2, 80, np.nan, 7]
    )


def test_unicode_digit_ratio_is_unparseable_not_an_error() -> None:
    value, valuenum = columns(["\u0661\u0662\u0660/\u0668\u0660", "120/80"])
    with pytest.raises(ValueError, match="Unable to parse string"):
        pd.to_numeric(value.astype("string").str.extract(_RATIO)[0])  # the previous rule
    np.testing.assert_array_equal(parse_ratio(value, valuenum, 0), [np.nan, 120.0])


def test_re2_pattern_spells_python_ascii_blanks_and_digits() -> None:
    blanks = "".join(chr(i) for i in range(128) if chr(i).isspace())
    digits = "".join(chr(i) for i in range(128) if re.fullmatch(r"\d", chr(i)))
    assert blanks == "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f " and digits == "0123456789"
    assert r"[\t\n\x0b\x0c\r\x1c-\x1f ]" in RATIO_RE2 and "[0-9]" in RATIO_RE2


ALPHABET = st.sampled_from(list("0123456789./+- \t\n\x0b\x1c\xa0\u3000\u0661e,x"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=9)), min_size=1, max_size=30))
def test_ratio_equals_the_per_row_rule_on_random_strings(strings: list) -> None:
    value, valuenum = columns(strings)
    for part in (0, 1):
        assert_same(parse_ratio(value, valuenum, part), ratio_per_row(value, valuenum, part))
    assert_same(parse_numeric(value, valuenum), numeric_per_row(value, valuenum))


def test_text_map_and_numeric_equal_the_per_row_rules() -> None:
    strings = [*TRICKY, None, "brisk", "Brisk ", "BRISK"]
    value, valuenum = columns(strings)
    for variable in VARIABLES:
        if variable.parse == "text_map":
            assert_same(
                parse_text_map(value, valuenum, variable.text_map),
                text_map_per_row(value, valuenum, variable.text_map),
            )
    assert_same(parse_numeric(value, valuenum), numeric_per_row(value, valuenum))


def test_uom_condition_equals_the_per_row_rule() -> None:
    uoms = pd.Series(["lbs", "LB", "kg", None, "?F", "Deg. F", "deg f", "oz", "İ", "", "l.b"])
    values = np.arange(len(uoms), dtype=np.float64)
    itemids = np.zeros(len(uoms), dtype=np.int64)
    for units in [("lb",), ("?F", "Deg. F"), ("oz", "ounce"), ("l.b",), ("i̇",)]:
        got = conversion_mask(Conversion(uom=units), values, itemids, uoms)
        np.testing.assert_array_equal(got, uom_per_row(uoms, units))


def test_stats_of_a_subset_equal_cleaning_the_subset() -> None:
    """The ihm48 window's counts come from the same cleaning pass as the stays counts."""
    rng = np.random.default_rng(3)
    ids = [v.all_itemids[0] for v in VARIABLES] + [999999]
    n = 400
    strings = rng.choice(["120/80", "80", "abc", "98.6", "brisk", "200", "1600", "-3", ""], n)
    frame = pd.DataFrame(
        {
            "icustay_id": np.ones(n, dtype=np.int64),
            "charttime": pd.Series(
                pd.Timestamp("2100-01-01") + pd.to_timedelta(np.arange(n), "min")
            ),
            "itemid": rng.choice(ids, n).astype(np.int64),
            "value": pd.Series(strings, dtype="str"),
            "valuenum": np.where(rng.random(n) < 0.5, np.nan, rng.normal(50, 40, n)),
            "valueuom": pd.Series(rng.choice(["lbs", "kg", "?F", "oz", "%"], n), dtype="str"),
        }
    )
    rows = clean_rows(
        frame["itemid"].to_numpy(),
        pd.array(frame["value"], dtype="string").__arrow_array__(),
        frame["valuenum"].to_numpy(),
        pd.array(frame["valueuom"], dtype="string").__arrow_array__(),
        VARIABLES,
    )
    window = rng.random(n) < 0.4
    _, want = clean_events(frame[window].reset_index(drop=True), VARIABLES)
    assert clean_stats(rows, VARIABLES, window) == want
    _, want_all = clean_events(frame, VARIABLES)
    assert clean_stats(rows, VARIABLES) == want_all
    assert sum(s["rows"] for s in want.values()) > 0


def test_rules_remembered_across_batches_equal_the_per_row_rules() -> None:
    """A string's result is remembered per rule (text map, unit pattern), across batches:
    batches that repeat, add and drop strings, and two maps sharing strings, still give the
    per-row result."""
    maps = [{"brisk": 1.0, "delayed": 2.0}, {"brisk": 5.0, "normal <3 secs": 0.0}]
    batches = [TRICKY[:20] + [None], ["BRISK", "delayed", None, " 80 "], TRICKY[15:] + ["brisk"]]
    for strings in batches:
        value, valuenum = columns(strings)
        for text_map in maps:
            assert_same(
                parse_text_map(value, valuenum, text_map),
                text_map_per_row(value, valuenum, text_map),
            )
        uoms = pd.Series(strings, dtype="str")
        zeros = np.zeros(len(strings))
        for units in [("lb",), ("delayed", "?F")]:
            got = conversion_mask(Conversion(uom=units), zeros, zeros.astype(np.int64), uoms)
            np.testing.assert_array_equal(got, uom_per_row(uoms, units))
