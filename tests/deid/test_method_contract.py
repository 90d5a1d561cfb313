"""The release-method contract: a method is its module, one registry entry and its schema
entry; everything else reaches it through the entry's hooks (docs/architecture.md)."""

from __future__ import annotations

import re

import pytest
from workflow_helpers import ROOT

from mimic_deid.config import check_cross_fields
from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.methods import REGISTRY, method_of
from mimic_deid.deid.tuning import TUNED_METHODS

#: Files that use a method's name for something else: the codes stage's LDA (seed 002) has
#: its own function ``mdav`` (clustering of code trajectories), unrelated to the release method.
HOMONYMS = {"mdav": {"src/mimic_deid/codes/__init__.py", "src/mimic_deid/codes/lda.py"}}


def _own_files(name: str) -> set[str]:
    """Where a method may be named: its module (pc-kapra shares kapra's), the registry and,
    for the constraint optimisers, the seed's tuning tables made for them."""
    module = REGISTRY[name].run.__module__
    own = {"src/mimic_deid/deid/methods.py", *HOMONYMS.get(name, ())}
    if module.count(".") > 2:  # a method package split by job (deid/kapra/): all its modules
        package = ROOT / "src" / module.rsplit(".", 1)[0].replace(".", "/")
        own |= {str(f.relative_to(ROOT)) for f in package.glob("*.py")}
    elif module != "mimic_deid.deid.methods":
        own.add("src/" + module.replace(".", "/") + ".py")
    else:  # a thin wrapper in the registry: the module of its name
        own.add(f"src/mimic_deid/deid/{name}.py")
    if name in TUNED_METHODS:
        own.add("src/mimic_deid/deid/tuning.py")
    return own


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_no_file_outside_a_method_and_the_registry_names_it(name: str) -> None:
    # a quoted name or label prefix in code: "kapra", "pc-kapra-P5..."
    pattern = re.compile(r"[\"']" + re.escape(name) + r"[\"'-]")
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "workflow").rglob("*.smk"),
             *(ROOT / "workflow" / "scripts").rglob("*.py"), ROOT / "Snakefile"]  # fmt: skip
    naming = {
        str(f.relative_to(ROOT)) for f in files if pattern.search(f.read_text(encoding="utf-8"))
    }
    assert naming <= _own_files(name), sorted(naming - _own_files(name))


def test_a_methods_config_rule_is_its_hook() -> None:
    """The (k,P) methods' P <= fk rule runs through their check_config hook."""
    config = {
        "deid": {"dk": [50], "fk": [4], "methods": {"pc-kapra": {"P": [5]}}},
        "series": {"split": {"train": 1.0}},
        "source": {"kind": "synthetic"},
    }
    with pytest.raises(ConfigError) as err:
        check_cross_fields(config)
    assert str(err.value) == (
        "config parameters 'deid/methods/pc-kapra/P' and 'deid/fk': every P must be <= every "
        "fk (k < P: a k-group is made of whole P-groups), got P [5] and fk [4]"
    )
    assert method_of("pc-kapra-P5-paa4-sax10-none").check_config is not None


def test_every_hook_a_method_gives_has_its_partner() -> None:
    for method in REGISTRY.values():
        if method.groups is not None:  # groups are named in the check's messages
            assert method.group_name != "group", method.name
        if method.sweep_columns:  # its sweep columns come from its summary
            assert method.summarise is not None, method.name


def test_the_report_lists_each_sweep_column_once() -> None:
    """Two methods may bring the same sweep column (KAPRA and PC-KAPRA both give
    kp_joint_unique_pct); the overview shows it once."""
    from mimic_deid.report.sweep import OVERVIEW_COLUMNS

    columns = [c for c, _ in OVERVIEW_COLUMNS]
    assert len(columns) == len(set(columns)) and "kp_joint_unique_pct" in columns


@pytest.mark.parametrize(
    "label", ["mdav", "adhoc-it5-ns0.01", "noise-sc0.1", "kapra-P2-paa4-sax6-none"]
)
def test_a_release_of_no_series_gives_empty_tables_with_their_columns(label: str) -> None:
    """Issue 48: a release no duration class of which is formed (every split below dk): the
    Mondrian targets and every method's outputs hold no row, the rule chain goes on to the
    card, which refuses it (docs/cohort-sizes.md)."""
    import pandas as pd

    from mimic_deid.deid.apply import apply_method
    from mimic_deid.deid.demographics import encode_demographics
    from mimic_deid.deid.hierarchy import load_hierarchies
    from mimic_deid.deid.methods import parse_method_label
    from mimic_deid.deid.plausible import PlausibleValues
    from mimic_deid.deid.targets import mondrian_targets
    from mimic_deid.pipeline.variables import load_variables

    dims = ["heart_rate", "glucose"]
    features = {"heart_rate": ["mean", "max"], "glucose": ["mean"]}
    parse_method_label(label)
    demographics = encode_demographics(
        pd.DataFrame({"icustay_id": [1], "age": [70.0], "gender": ["F"]}),
        ["age", "gender"],
        load_hierarchies(ROOT / "config/hierarchies.yaml"),
    )
    targets, summary = mondrian_targets([], dims, features, 3, "range", demographics=demographics)
    assert targets.empty and list(targets.columns) == [
        "icustay_id", "group", "class_length", "eq_class", "cell", "age", "gender",
        "orig_heart_rate_mean", "target_heart_rate_mean", "orig_heart_rate_max",
        "target_heart_rate_max", "orig_glucose_mean", "target_glucose_mean",
    ]  # fmt: skip
    assert (summary["equivalence_classes"], summary["duration_classes"]) == (0, 0)
    plausible = PlausibleValues.from_variables(load_variables(ROOT / "config/variables.yaml"), dims)
    perturbed, per_series, method = apply_method(
        [], dims, targets, features, label, seed=1, fk=3, plausible=plausible
    )
    assert perturbed.empty and list(perturbed.columns) == [
        "group",
        "class_length",
        "icustay_id",
        "hour",
        *dims,
    ]
    assert per_series.empty and list(per_series.columns)[:4] == [
        "icustay_id",
        "group",
        "class_length",
        "cell",
    ]
    assert method["series"] == 0 and method["classes"] == []
    assert method["projected_values"] == {"heart_rate": 0, "glucose": 0}
