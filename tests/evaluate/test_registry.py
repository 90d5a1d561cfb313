"""The evaluator registry (issue 46): an attacker is one class and one registry line, and the
privacy rule runs every entry in one pass over each class's blocks."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

from mimic_deid.deid.classes import ClassArray
from mimic_deid.deid.features import ATTACKER_STATS, feature_spec
from mimic_deid.evaluate import evaluators, privacy, registry
from mimic_deid.evaluate.privacy import evaluate_release
from mimic_deid.evaluate.registry import EVALUATORS, FeatureAttack

DIMS = ["a", "b", "c"]
FEATURES = {"a": ["mean", "var", "min", "max"], "b": ["mean", "max"]}
STRONG = {"a": ["mean", "var", "min", "max", "count"], "c": ["mean", "count"]}
ALT = {"c": ["mean", "max"]}
ERRORS = (0.0, 0.1)


def _release():
    """Two classes of original and released series, and their pseudonyms."""
    classes, released = [], []
    for i, (n, length) in enumerate([(30, 4), (70, 6)]):
        rng = np.random.default_rng(20 + i)
        X = rng.normal(80, 15, (n, length, len(DIMS)))
        X[rng.random(X.shape) < 0.3] = np.nan
        keys = np.arange(n, dtype=np.int64) + 1000 * i
        classes.append(ClassArray("all", length, keys, X))
        released.append(ClassArray("all", length, keys, X + rng.normal(0, 2, X.shape)))
    keys = np.concatenate([c.keys for c in classes])
    pseudonyms = pd.DataFrame({"icustay_id": keys, "pseudonym": [f"p{k}" for k in keys]})
    return classes, released, pseudonyms


def _evaluate(**kw):
    classes, released, pseudonyms = _release()
    return evaluate_release(
        classes, released, pseudonyms, DIMS, FEATURES, False, ERRORS, seed=5,
        strong_features=STRONG, fk=3, alt_features=ALT, family=["summary", "shape"], **kw,
    )  # fmt: skip


class StrongTwin(FeatureAttack):
    """A new attacker in one class: the strong attacker's knowledge and noise stream, under
    its own name."""

    name = "strong_twin"
    stream = ("strong",)

    def spec(self, request):
        return feature_spec(STRONG, list(request.dims), allowed=ATTACKER_STATS)

    def collect(self, request, results, out):
        out.linkage[self.name] = self.summary(results)


def test_a_new_attacker_is_one_class_and_one_registry_line(monkeypatch) -> None:
    """Added to the registry, the new entry runs in the same pass: the other results do not
    move, and its own equal those of the attacker it copies."""
    before = _evaluate()
    monkeypatch.setitem(EVALUATORS, StrongTwin.name, StrongTwin())
    per_series, summary, linkage = _evaluate()
    pd.testing.assert_frame_equal(per_series, before[0], check_exact=True)
    pd.testing.assert_frame_equal(summary, before[1], check_exact=True)
    assert {k: v for k, v in linkage.items() if k != "strong_twin"} == before[2]
    assert linkage["strong_twin"] == linkage["strong"]


def test_every_entry_is_one_class_named_by_its_key() -> None:
    assert list(EVALUATORS) == ["seed", "strong", "alternative", "family"]
    for name, entry in EVALUATORS.items():
        assert entry.name == name
        assert inspect.getmodule(type(entry)) is registry
        assert sum(type(e) is type(entry) for e in EVALUATORS.values()) == 1


def test_each_class_is_walked_once_whatever_the_attackers(monkeypatch) -> None:
    """One pass per class: the blocks of a class are made once and given to every entry (the
    alternative attacker no longer walks each class a second time)."""
    calls = []
    run = evaluators.run_blocks

    def counting(series, rows, evaluator_list, block_rows):
        calls.append(len(evaluator_list))
        return run(series, rows, evaluator_list, block_rows)

    monkeypatch.setattr(privacy, "run_blocks", counting)
    _evaluate()
    assert calls == [4, 4]  # two classes; seed, strong, alternative and family each time


@pytest.mark.parametrize("missing", ["strong_features", "alt_features", "family"])
def test_an_entry_without_its_input_does_not_run(missing) -> None:
    kw = {"strong_features": None, "alt_features": None, "family": None}
    classes, released, pseudonyms = _release()
    args = (classes, released, pseudonyms, DIMS, FEATURES, False, ERRORS)
    full = {"strong_features": STRONG, "alt_features": ALT, "family": ["summary"]}
    given = {k: v for k, v in full.items() if k != missing}
    per_series, _, linkage = evaluate_release(*args, seed=5, fk=3, **{**kw, **given})
    key = {"strong_features": "strong", "alt_features": "alternative", "family": "family"}
    assert key[missing] not in linkage
    assert ("auc_alt" in per_series.columns) == (missing != "alt_features")
