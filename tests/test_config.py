"""Config validation and optimiser labels: bad values are named, labels round-trip."""

from pathlib import Path

import pytest
import yaml

from mimic_deid.config import optimizer_labels, parse_optimizer_label, validate_config
from mimic_deid.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "config" / "schema.yaml"


@pytest.fixture
def config():
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def test_shipped_config_is_valid(config):
    validate_config(config, SCHEMA)


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("deid", "dk"), ["fifty"], "deid/dk/0"),
        (("deid", "fk"), [0], "deid/fk/0"),
        (("deid", "heuristic"), ["widest"], "deid/heuristic/0"),
        (("source", "kind"), "oracle", "source/kind"),
        (("deid", "optimizers", "genetic", "fitness"), ["annealing"], "fitness/0"),
        (("evaluate", "utility", "bootstrap"), 1, "evaluate/utility/bootstrap"),
    ],
)
def test_bad_value_names_the_parameter(config, path, value, expected):
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ConfigError, match=expected):
        validate_config(config, SCHEMA)


def test_unknown_key_is_rejected(config):
    config["deid"]["k"] = 5
    with pytest.raises(ConfigError, match="deid"):
        validate_config(config, SCHEMA)


def test_split_fractions_must_sum_to_one(config):
    config["series"]["split"]["test"] = 0.3
    with pytest.raises(ConfigError, match="series/split"):
        validate_config(config, SCHEMA)


def test_csv_source_needs_a_path(config):
    config["source"]["kind"] = "csv"
    with pytest.raises(ConfigError, match="source/csv/path"):
        validate_config(config, SCHEMA)


def test_optimizer_labels_expand_the_product_and_round_trip(config):
    grid = config["deid"]["optimizers"]
    grid["genetic"]["mutation_sd"] = [2.0, 3.0, 5.0]
    grid["genetic"]["parents"] = [2, 3]
    labels = optimizer_labels(grid)
    assert len(labels) == len(grid["adhoc"]["iterations"]) * len(grid["adhoc"]["noise_sd"]) + 6
    assert len(set(labels)) == len(labels)
    for label in labels:
        name, params = parse_optimizer_label(label)
        assert label.startswith(name)
        for key, value in params.items():
            if key != "fitness":
                assert value in grid[name][key]
    assert parse_optimizer_label("genetic-NA-pop24-tour5-par2-msd3-mp0.2-isd1-pat100-max600-norm1")[
        1
    ]["normalise_features"]


@pytest.mark.parametrize("label", ["bogus-it5", "adhoc-it5", "adhoc-itx-ns0.1", "genetic-XX-pop2"])
def test_bad_optimizer_label(label):
    with pytest.raises(ConfigError, match="optimiser"):
        parse_optimizer_label(label)
