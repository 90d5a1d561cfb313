"""Config validation: defaults from the schema, coercion of --config strings, bad values and
cross-field rules named with the whole message; method labels round-trip."""

import copy
from pathlib import Path

import pytest
import yaml

from mimic_deid.config import validate_config
from mimic_deid.core.errors import ConfigError
from mimic_deid.deid.methods import method_labels, parse_method_label
from mimic_deid.pipeline.variables import load_variables, series_variables

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "config" / "schema.yaml"


@pytest.fixture
def config(monkeypatch):
    monkeypatch.chdir(ROOT)  # config 'variables' is relative to the workflow directory
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def message(config):
    with pytest.raises(ConfigError) as err:
        validate_config(config, SCHEMA)
    return str(err.value)


def test_shipped_config_is_valid_and_equals_the_schema_defaults(config):
    shipped = validate_config(copy.deepcopy(config), SCHEMA)
    minimal = {"deid": {"features": config["deid"]["features"]}}
    if "tuning_grid" in shipped["deid"]:
        minimal["deid"]["tuning_grid"] = shipped["deid"]["tuning_grid"]
    assert validate_config(minimal, SCHEMA) == shipped


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (
            ("deid", "dk"),
            ["fifty"],
            "config parameter 'deid/dk/0': 'fifty' is not of type 'integer'",
        ),
        # k 1 hides no one: every k of anonymity is at least 2 (issue 26)
        (("deid", "fk"), [1], "config parameter 'deid/fk/0': 1 is less than the minimum of 2"),
        (("deid", "dk"), [1], "config parameter 'deid/dk/0': 1 is less than the minimum of 2"),
        (
            ("tabular", "release", "k"),
            1,
            "config parameter 'tabular/release/k': 1 is less than the minimum of 2",
        ),
        (
            ("codes", "lda", "k"),
            [1, 5],
            "config parameter 'codes/lda/k/0': 1 is less than the minimum of 2",
        ),
        (
            ("codes", "gccens", "k_caps"),
            1,
            "config parameter 'codes/gccens/k_caps': 1 is less than the minimum of 2",
        ),
        (
            ("deid", "heuristic"),
            ["widest"],
            "config parameter 'deid/heuristic/0': 'widest' is not one of ['range', 'diversity']",
        ),
        (
            ("source", "kind"),
            "oracle",
            "config parameter 'source/kind': 'oracle' is not one of ['synthetic', 'csv', 'postgres']",
        ),
        (
            ("deid", "methods", "genetic", "fitness"),
            ["annealing"],
            "config parameter 'deid/methods/genetic/fitness/0': 'annealing' is not one of "
            "['annealed', 'DF', 'CI', 'NA']",
        ),
        (
            ("evaluate", "utility", "bootstrap"),
            1,
            "config parameter 'evaluate/utility/bootstrap': 1 is less than the minimum of 10",
        ),
        (
            ("evaluate", "utility", "cross"),
            "like_for_like",
            "config parameter 'evaluate/utility/cross': 'like_for_like' is not one of "
            "['shipped', 'gap_filled']",
        ),
        (
            ("series", "ihm_hours"),
            100000,
            "config parameter 'series/ihm_hours': 100000 is greater than the maximum of 8760",
        ),
    ],
)
def test_bad_value_names_the_parameter(config, path, value, expected):
    node = config
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    assert message(config) == expected


def test_unknown_key_is_rejected(config):
    config["deid"]["k"] = 5
    assert message(config) == (
        "config parameter 'deid': Additional properties are not allowed ('k' was unexpected)"
    )


def test_stages_are_checked_against_the_stage_list_and_default_to_all_of_it(config):
    """The schema lists no stage: config `stages` is checked against mimic_deid.stages and,
    absent, selects every stage in list order; the schema still refuses a repeated name."""
    config["stages"] = ["series", "notes", "codes"]
    assert message(config) == (
        "config parameter 'stages': unknown stage 'notes'; expected one of ['series', "
        "'tabular', 'codes', 'sequences']"
    )
    config["stages"] = "[codes, series]"  # as --config stages=[codes,series] gives it
    assert validate_config(copy.deepcopy(config), SCHEMA)["stages"] == ["codes", "series"]
    del config["stages"]
    assert validate_config(config, SCHEMA)["stages"] == ["series", "tabular", "codes", "sequences"]
    config["stages"] = ["codes", "codes"]
    assert message(config) == (
        "config parameter 'stages': ['codes', 'codes'] has non-unique elements"
    )


def test_renamed_key_names_the_new_one(config):
    config["deid"]["optimizers"] = config["deid"].pop("methods")
    assert message(config) == (
        "config parameter 'deid/optimizers' has been renamed: use 'deid/methods' (same contents)"
    )


def test_config_strings_are_coerced_to_the_schema_types(config):
    # what Snakemake's --config deid='{"fk": [5]}' gives: nested values as strings
    config["deid"]["fk"] = ["5"]
    config["deid"]["dk"] = "[40, 50]"
    config["evaluate"]["standardise"] = "true"
    config["seed"] = "7"
    out = validate_config(config, SCHEMA)
    assert out["deid"]["fk"] == [5] and out["deid"]["dk"] == [40, 50]
    assert out["evaluate"]["standardise"] is True and out["seed"] == 7


def test_fk_above_a_dk_is_refused_at_start(config):
    config["deid"]["dk"] = [20, 50]
    config["deid"]["fk"] = [10, 30]
    assert message(config) == (
        "config parameters 'deid/fk' and 'deid/dk': every fk must be <= every dk (a Mondrian "
        "class lies inside a duration class), got fk [10, 30] and dk [20, 50]"
    )


def test_split_fractions_must_sum_to_one(config):
    config["series"]["split"]["test"] = 0.3
    assert message(config) == (
        "config parameter 'series/split': fractions must sum to 1, got "
        "{'train': 0.7, 'validation': 0.15, 'test': 0.3}"
    )


def test_csv_source_needs_a_path(config):
    config["source"]["kind"] = "csv"
    assert message(config) == (
        "config parameter 'source/csv/path': required when source kind is csv"
    )


@pytest.mark.parametrize(
    "dsn",
    ["host=db dbname=mimic user=me password=hunter2", "postgresql://me:hunter2@db/mimic"],
)
def test_a_password_in_the_dsn_is_refused_without_echoing_it(config, dsn):
    config["source"]["kind"] = "postgres"
    config["source"]["postgres"] = {"dsn": dsn}
    text = message(config)
    assert text == (
        "config parameter 'source/postgres/dsn': contains a password; remove it and give the "
        "password to libpq instead (PGPASSWORD, ~/.pgpass or a service file named by "
        "PGSERVICE), so that it never reaches logs, job scripts or the process list"
    )
    assert "hunter2" not in text


def test_an_unparsable_dsn_is_refused_without_echoing_it(config):
    config["source"]["kind"] = "postgres"
    config["source"]["postgres"] = {"dsn": "host=db password=hunter2 garbage"}
    assert message(config) == (
        "config parameter 'source/postgres/dsn': cannot be parsed (expected 'key=value ...' "
        "or a postgresql:// URI); it is not shown because it may contain a password"
    )


def test_postgres_source_with_a_csv_path_is_refused(config):
    config["source"]["kind"] = "postgres"
    config["source"]["csv"]["path"] = "/data/mimic"
    assert message(config) == (
        "config parameters 'source/kind' and 'source/csv/path': kind is postgres but a CSV "
        "path is set; remove one of them"
    )


def test_unknown_feature_variable_is_refused(config):
    config["deid"]["features"]["pulse"] = ["mean"]
    variables = load_variables(ROOT / "config" / "variables.yaml")
    dimensions = sorted(v.name for v in series_variables(variables))
    assert message(config) == (
        "config parameter 'deid/features': unknown variable(s) ['pulse']; expected some of "
        f"{dimensions}"
    )


def test_method_labels_expand_the_product_and_round_trip(config):
    config["deid"]["methods"]["genetic"] = {}  # not in the shipped sweep: schema defaults
    grid = validate_config(config, SCHEMA)["deid"]["methods"]
    grid["genetic"]["mutation_sd"] = [2.0, 3.0, 5.0]
    grid["genetic"]["parents"] = [2, 3]
    labels = method_labels(grid)
    adhoc = len(grid["adhoc"]["iterations"]) * len(grid["adhoc"]["noise_sd"])
    # mdav and mdav-spread have no parameter of their own: one label each
    assert len(labels) == 2 + adhoc + 6
    assert len(set(labels)) == len(labels)
    for label in labels:
        name, params = parse_method_label(label)
        assert label.startswith(name)
        for key, value in params.items():
            assert value in grid[name][key]
    label = "genetic-NA-pop24-tour5-par2-msd3-mp0.2-isd1-pat100-max600-norm1-layseries_dimension-initgaussian"
    assert parse_method_label(label)[1]["normalise_features"] is True


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("bogus-it5", "method label 'bogus-it5': unknown release method 'bogus'"),
        ("adhoc-it5", "method label 'adhoc-it5': expected 2 parameters"),
        ("adhoc-itx-ns0.1", "method label 'adhoc-itx-ns0.1': bad value for iterations: 'x'"),
        (
            "genetic-XX-pop2-tour5-par2-msd3-mp0.2-isd1-pat100-max600-norm1-layseries_dimension-initgaussian",
            "method label 'genetic-XX-pop2-tour5-par2-msd3-mp0.2-isd1-pat100-max600-norm1-layseries_dimension-initgaussian': "
            "expected a fitness in ('annealed', 'DF', 'CI', 'NA')",
        ),
    ],
)
def test_bad_method_label(label, expected):
    with pytest.raises(ConfigError) as err:
        parse_method_label(label)
    assert str(err.value) == expected


def _leaf_parameters(node: dict, definitions: dict, path: tuple[str, ...] = ()):
    if "$ref" in node:
        node = {**definitions[node["$ref"].split("/")[-1]], **node}
    if node.get("type") == "object" and "properties" in node:
        for key, child in node["properties"].items():
            yield from _leaf_parameters(child, definitions, (*path, key))
    else:
        yield ".".join(path)


def test_config_readme_documents_every_parameter():
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    text = (SCHEMA.parent / "README.md").read_text(encoding="utf-8")
    params = set(_leaf_parameters(schema, schema["definitions"]))
    # the tuning grid takes the genetic method's parameters, documented once
    params = {p for p in params if not p.startswith("deid.tuning_grid.")} | {"deid.tuning_grid"}
    missing = sorted(p for p in params if f"`{p}`" not in text)
    assert missing == [], f"config/README.md does not document {missing}"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("deid:\n  dk: [10]\n  fk: [3]\nseed: 1\ndeid:\n  dk: [20]\n", "'deid' (lines 1 and 5)"),
        ("deid:\n  dk: [10]\n  fk: [3]\n  dk: [20]\n", "'deid/dk' (lines 2 and 4)"),
        ("source:\n  csv:\n    path: /a\n    path: /b\n", "'source/csv/path' (lines 3 and 4)"),
    ],
)
def test_a_key_given_twice_in_a_config_file_is_refused(tmp_path, text, key):
    from mimic_deid.config import check_config_files

    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("deid:\n  dk: [10]\nseed: 1\n")
    bad.write_text(text)
    check_config_files([good])
    with pytest.raises(ConfigError) as err:
        check_config_files([good, bad])
    assert str(err.value) == (
        f"config file {bad}: key {key} is given twice; give each key once (YAML readers keep "
        "the last one and silently drop the first)"
    )


def test_a_weak_release_k_warns_in_one_line_naming_each_parameter():
    from mimic_deid.config import weak_k_warning

    config = {"deid": {"dk": [50, 4], "fk": [3]}, "tabular": {"release": {"k": 5}}}
    assert weak_k_warning(config) == (
        "mimic-deid: warning: k below 5 hides each person among fewer than 5 (the strong "
        "attacker's bound 1/k is above 20 %): config parameter 'deid/dk' = 4, 'deid/fk' = 3"
    )
    assert (
        weak_k_warning({"deid": {"dk": [50], "fk": [10]}, "tabular": {"release": {"k": 5}}}) is None
    )
