"""Item catalogue of the synthetic MIMIC-III: chart, output and lab items, labels and units.

The item ids of the 17 benchmark variables are copied from ``config/variables.yaml`` (a test
checks the copy), so the generator depends on no configuration file: it simulates the database,
not the project's reading of it. Every item written to CHARTEVENTS / OUTPUTEVENTS is listed in
D_ITEMS and every LABEVENTS item in D_LABITEMS.

Units are the raw MIMIC-III spellings, including the mangled degree sign (``?F``, ``?C``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mimic_deid.synthetic.reference import read_table

CAREVUE_MAX_ITEMID = 220000  # CareVue item ids are below this, MetaVision ids at or above


@dataclass(frozen=True)
class ChartItem:
    """One row of D_ITEMS. ``uom`` is the VALUEUOM written with every event of the item."""

    itemid: int
    label: str
    uom: str | None = None
    param_type: str = "Numeric"  # MetaVision PARAM_TYPE ('Numeric' or 'Text')
    category: str | None = None  # MetaVision CATEGORY
    abbreviation: str | None = None  # MetaVision ABBREVIATION
    linksto: str = "chartevents"

    @property
    def dbsource(self) -> str:
        return "carevue" if self.itemid < CAREVUE_MAX_ITEMID else "metavision"


@dataclass(frozen=True)
class LabItem:
    """One row of D_LABITEMS plus the value model of the synthetic lab (plain units).

    ``mean``/``sd`` describe values of items without a physiological link (a per-row normal);
    ``ref`` is the reference range that sets FLAG = 'abnormal'.
    """

    itemid: int
    label: str
    fluid: str
    category: str
    loinc: str | None
    uom: str | None
    mean: float = 0.0
    sd: float = 0.0
    decimals: int = 1
    ref: tuple[float, float] = (float("-inf"), float("inf"))
    low: float = 0.0


# Item ids of the benchmark variables, as in config/variables.yaml.
VARIABLE_ITEMIDS: dict[str, dict[str, tuple[int, ...]]] = {
    "capillary_refill_rate": {"carevue": (3348, 115, 8377), "metavision": (223951, 224308)},
    "diastolic_blood_pressure": {
        "carevue": (8368, 8441, 8555, 8440, 8503, 8504, 8506, 8507, 8502),
        "metavision": (220051, 220180, 225310, 224643, 227242),
    },
    "fraction_inspired_oxygen": {
        "carevue": (3420, 3422, 189, 190, 727),
        "metavision": (223835,),
        "labevents": (50816,),
    },
    "gcs_eye_opening": {"carevue": (184,), "metavision": (220739,)},
    "gcs_motor_response": {"carevue": (454,), "metavision": (223901,)},
    "gcs_total": {"carevue": (198,), "metavision": ()},
    "gcs_verbal_response": {"carevue": (723,), "metavision": (223900,)},
    "glucose": {
        "carevue": (807, 811, 1529, 3744, 3745),
        "metavision": (220621, 225664, 226537),
        "labevents": (50809, 50931),
    },
    "heart_rate": {"carevue": (211,), "metavision": (220045,)},
    "height": {"carevue": (920, 1394), "metavision": (226707, 226730)},
    "mean_blood_pressure": {
        "carevue": (52, 443, 456, 3312, 3314, 3316, 3320, 3322, 6702),
        "metavision": (220052, 220181, 225312, 224322),
    },
    "oxygen_saturation": {
        "carevue": (646, 834, 8498),
        "metavision": (220227, 220277),
        "labevents": (50817,),
    },
    "respiratory_rate": {
        "carevue": (618, 614, 615, 651, 3603, 8113),
        "metavision": (220210, 224422, 224689, 224690),
    },
    "systolic_blood_pressure": {
        "carevue": (51, 442, 455, 6701, 3313, 3315, 3317, 3321, 3323),
        "metavision": (220050, 220179, 225309, 224167, 227243),
    },
    "temperature": {"carevue": (676, 677, 678, 679), "metavision": (223761, 223762)},
    "weight": {
        "carevue": (762, 763, 3723, 3580, 3581, 3582),
        "metavision": (224639, 226512, 226531),
    },
    "ph": {
        "carevue": (780, 860, 1126, 1673, 3839, 4202, 4753, 6003),
        "metavision": (220274, 220734, 223830, 228243),
        "labevents": (50820, 50831),
    },
}

# D_ITEMS rows (labels as in MIMIC-III where known): the benchmark variables' chart items, the
# distractors (chart items outside the benchmark, see DISTRACTORS) and the output items, in
# this order, each with its role in the first column.
_ITEM_ROWS = read_table("chart_items", (str, int, str, str, str, str, str, str))


def _items(role: str) -> tuple[ChartItem, ...]:
    """The chart items of ``role`` (variable, distractor or output) in file order."""
    return tuple(ChartItem(*row[1:]) for row in _ITEM_ROWS if row[0] == role)


_VARIABLE_CHART_ITEMS = _items("variable")


@dataclass(frozen=True)
class Distractor:
    """A chart item outside the benchmark variables, charted to dilute the configured rows.

    Numeric items draw ``mean + sd * N(0, 1)`` rounded to ``decimals``; text items pick one of
    ``texts``. ``every_h`` is the charting interval and ``p_stay`` the share of stays that
    chart the item at all.
    """

    itemid: int
    every_h: float
    p_stay: float
    mean: float = 0.0
    sd: float = 0.0
    decimals: int = 0
    texts: tuple[str, ...] = ()


_DISTRACTOR_ITEMS = _items("distractor")

DISTRACTORS: dict[str, tuple[Distractor, ...]] = {
    "carevue": (
        Distractor(113, 1.0, 0.35, mean=10, sd=4),
        Distractor(31, 4.0, 0.9, texts=("Bedrest", "Chair", "Dangle", "Ambulate")),
        Distractor(80, 8.0, 0.8, texts=("Present/Normal", "Hypoactive", "Absent")),
        Distractor(467, 4.0, 0.8, texts=("Nasal Cannula", "Face Tent", "Ventilator", "None")),
        Distractor(470, 4.0, 0.5, mean=3, sd=1.5),
        Distractor(1337, 6.0, 0.5, texts=("Calm/Cooperative", "Sedated", "Agitated")),
    ),
    "metavision": (
        Distractor(220074, 1.0, 0.35, mean=10, sd=4),
        Distractor(220046, 8.0, 0.95, mean=120, sd=5),
        Distractor(220047, 8.0, 0.95, mean=50, sd=5),
        Distractor(223834, 4.0, 0.5, mean=3, sd=1.5),
        Distractor(226253, 8.0, 0.9, mean=88, sd=2),
        Distractor(224641, 6.0, 0.9, texts=("Yes", "No")),
    ),
}


OUTPUT_ITEMS = _items("output")
URINE_ITEMID = {"carevue": 40055, "metavision": 226559}

CHART_ITEMS: tuple[ChartItem, ...] = _VARIABLE_CHART_ITEMS + _DISTRACTOR_ITEMS


def _d_items_order(item: ChartItem) -> tuple[bool, int]:
    """D_ITEMS row order: CareVue items, then MetaVision items, each by item id."""
    return item.itemid >= CAREVUE_MAX_ITEMID, item.itemid


D_ITEMS: tuple[ChartItem, ...] = tuple(sorted(CHART_ITEMS + OUTPUT_ITEMS, key=_d_items_order))


def _other_chart_items() -> tuple[ChartItem, ...]:
    """:data:`OTHER_CHART_ITEMS`: ids not used by any other chart or output item, every 13th
    free CareVue id from 1000 and every 11th free MetaVision id from 225000, alternately
    numeric and text."""
    used = {it.itemid for it in D_ITEMS}
    items = []
    for start, step in ((1000, 13), (225000, 11)):
        free = [i for i in range(start, start + 40 * OTHER_CHART_ITEMS_PER_SYSTEM) if i not in used]
        for k, itemid in enumerate(free[::step][:OTHER_CHART_ITEMS_PER_SYSTEM]):
            kind = "Numeric" if k % 2 == 0 else "Text"
            category = None if itemid < CAREVUE_MAX_ITEMID else "Routine"
            items.append(ChartItem(itemid, f"Charted item {itemid}", None, kind, category))
    return tuple(items)


#: Chart items of the CHARTEVENTS rows outside the benchmark that ``generate(...,
#: other_chart_rows=r)`` adds (:func:`mimic_deid.synthetic.quirks.add_other_chart_rows`), per
#: system (CareVue, then MetaVision, the same count): real CHARTEVENTS carries thousands of
#: item ids, most of them with a long tail of rare ones. Listed in D_ITEMS only when used.
OTHER_CHART_ITEMS_PER_SYSTEM = 150
OTHER_CHART_ITEMS: tuple[ChartItem, ...] = _other_chart_items()
#: D_ITEMS of a copy with :data:`OTHER_CHART_ITEMS` in its CHARTEVENTS.
D_ITEMS_WITH_OTHER: tuple[ChartItem, ...] = tuple(
    sorted(D_ITEMS + OTHER_CHART_ITEMS, key=_d_items_order)
)

# Lab items. Items linked to the physiology (glucose, pH, SpO2, FiO2) take their values from
# the latent state (see physiology.py); the others draw from (mean, sd) independently.
LAB_ITEMS: tuple[LabItem, ...] = (
    LabItem(50809, "Glucose", "Blood", "Blood Gas", "2339-0", "mg/dL", decimals=0, ref=(70, 105)),
    LabItem(50816, "Oxygen", "Blood", "Blood Gas", "19994-3", "%", decimals=0),
    LabItem(
        50817, "Oxygen Saturation", "Blood", "Blood Gas", "20564-1", "%", decimals=0, ref=(95, 100)
    ),
    LabItem(50818, "pCO2", "Blood", "Blood Gas", "11557-6", "mm Hg", 41, 8, 0, (35, 45), 10),
    LabItem(50820, "pH", "Blood", "Blood Gas", "11558-4", "units", decimals=2, ref=(7.35, 7.45)),
    LabItem(50821, "pO2", "Blood", "Blood Gas", "11556-8", "mm Hg", 110, 40, 0, (85, 105), 20),
    LabItem(50831, "pH", "Other Body Fluid", "Blood Gas", None, "units", decimals=2),
    LabItem(50882, "Bicarbonate", "Blood", "Chemistry", "1963-8", "mEq/L", 24, 4, 0, (22, 32), 5),
    LabItem(50902, "Chloride", "Blood", "Chemistry", "2075-0", "mEq/L", 104, 5, 0, (96, 108), 70),
    LabItem(
        50912, "Creatinine", "Blood", "Chemistry", "2160-0", "mg/dL", 1.2, 0.8, 1, (0.5, 1.2), 0.2
    ),
    LabItem(50931, "Glucose", "Blood", "Chemistry", "2345-7", "mg/dL", decimals=0, ref=(70, 105)),
    LabItem(
        50971, "Potassium", "Blood", "Chemistry", "2823-3", "mEq/L", 4.1, 0.5, 1, (3.3, 5.1), 2
    ),
    LabItem(50983, "Sodium", "Blood", "Chemistry", "2951-2", "mEq/L", 139, 4, 0, (133, 145), 110),
    LabItem(51221, "Hematocrit", "Blood", "Hematology", "4544-3", "%", 31, 5, 1, (36, 48), 12),
    LabItem(51222, "Hemoglobin", "Blood", "Hematology", "718-7", "g/dL", 10.5, 1.8, 1, (12, 16), 4),
    LabItem(
        51301, "White Blood Cells", "Blood", "Hematology", "804-5", "K/uL", 11, 5, 1, (4, 11), 0.5
    ),
)
LAB_BY_ID: dict[int, LabItem] = {it.itemid: it for it in LAB_ITEMS}
CHEMISTRY_PANEL = (50931, 50882, 50902, 50912, 50971, 50983)
BLOOD_COUNT_PANEL = (51221, 51222, 51301)

# Text values. Index = score; CareVue spells the score first, MetaVision the words only.
GCS_TEXT: dict[str, dict[str, tuple[str | None, ...]]] = {
    "eye": {
        "carevue": (None, "1 No Response", "2 To pain", "3 To speech", "4 Spontaneously"),
        "metavision": (None, "No Response", "To Pain", "To Speech", "Spontaneously"),
    },
    "verbal": {
        "carevue": (
            None,
            "1 No Response",
            "2 Incomp sounds",
            "3 Inapprop words",
            "4 Confused",
            "5 Oriented",
        ),
        "metavision": (
            None,
            "No Response",
            "Incomprehensible sounds",
            "Inappropriate Words",
            "Confused",
            "Oriented",
        ),
    },
    "motor": {
        "carevue": (
            None,
            "1 No Response",
            "2 Abnorm extensn",
            "3 Abnorm flexion",
            "4 Flex-withdraws",
            "5 Localizes Pain",
            "6 Obeys Commands",
        ),
        "metavision": (
            None,
            "No response",
            "Abnormal extension",
            "Abnormal Flexion",
            "Flex-withdraws",
            "Localizes Pain",
            "Obeys Commands",
        ),
    },
}
GCS_VERBAL_INTUBATED = {"carevue": "1.0 ET/Trach", "metavision": "No Response-ETT"}
GCS_ITEMID = {
    "eye": {"carevue": 184, "metavision": 220739},
    "verbal": {"carevue": 723, "metavision": 223900},
    "motor": {"carevue": 454, "metavision": 223901},
}
GCS_TOTAL_ITEMID = 198  # CareVue only
# Capillary refill: (normal, abnormal) wording by item.
CAPILLARY_TEXT: dict[int, tuple[str, str]] = {
    3348: ("Normal <3 secs", "Abnormal >3 secs"),
    115: ("Brisk", "Delayed"),
    8377: ("Brisk", "Delayed"),
    223951: ("Normal <3 secs", "Abnormal >3 secs"),
    224308: ("Brisk", "Delayed"),
}


def uom_lookup() -> tuple[list[int], list[str | None]]:
    """Sorted chart/output item ids and their VALUEUOM (None = empty), for vectorised lookup."""
    items = sorted(CHART_ITEMS + OUTPUT_ITEMS, key=lambda it: it.itemid)
    return [it.itemid for it in items], [it.uom for it in items]
