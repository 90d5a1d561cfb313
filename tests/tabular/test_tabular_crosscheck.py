"""Cross-checks against independent implementations from PyPI (test extra):

- ``crowds`` (the seed author's OLA): on small random tables, the minimal members of its
  k-minimal set, the chosen node's Prec loss and its k equal ours when ``crowds`` is called
  with a fresh k-minimal set (its ``_k_min`` keeps the set in a mutable default argument,
  shown below).
- ``pycanon``: every table released here (OLA release, epsilon-safe LA) is re-checked for k.

Both are in the ``test`` extra; with ``constraints.txt`` pip picks the pycanon release whose
requirements agree with the pinned numpy/scipy (1.0.1.post2).
"""

from __future__ import annotations

import crowds.kanonymity.ola as crowds_ola
import numpy as np
import pandas as pd
import pytest
from crowds.kanonymity.generalizations import GenRule
from crowds.kanonymity.information_loss import prec_loss
from crowds.kanonymity.lattice import Node
from pycanon import anonymity
from tabular_reference import epsilon_safe_la

from mimic_deid.core.seeding import derive_rng
from mimic_deid.tabular import (
    Encoded,
    encode,
    node_classes,
    ola,
    release_table,
)


def table_with_hierarchies(rng: np.random.Generator, n: int, q: int):
    """A random table, our hierarchy steps and the equivalent crowds GenRules."""
    cols, ours, rules = {}, {}, {}
    for j in range(q):
        nv = int(rng.integers(2, 6))
        values = [f"v{j}{i}" for i in range(nv)]
        cols[f"c{j}"] = rng.choice(values, n)
        maps = []
        labels = values
        for d in range(int(rng.integers(0, 3))):
            mapping = {
                lab: f"g{j}{d}{i % max(1, len(labels) // 2)}" for i, lab in enumerate(labels)
            }
            maps.append(mapping)
            labels = sorted(set(mapping.values()))
        ours[f"c{j}"] = [
            *(
                {
                    "kind": "groups",
                    "body": {g: [k for k, v in m.items() if v == g] for g in set(m.values())},
                }
                for m in maps
            ),
            {"kind": "suppress", "body": "*"},
        ]
        levels = []
        for d in range(len(maps)):

            def level(value, upto=d, maps=maps):
                for m in maps[: upto + 1]:
                    value = m[value]
                return value

            levels.append(level)
        rules[f"c{j}"] = GenRule(levels)  # crowds adds the suppression level itself
    return pd.DataFrame(cols), ours, rules


def crowds_k_minimal(df, rules, k, max_sup):
    bottom, top = Node.build_network(rules, df, crowds_ola._check_kanonymity)
    return crowds_ola._k_min(bottom, top, k, max_sup, set())


def test_crowds_default_k_minimal_set_is_shared_between_calls():
    """Why the project does not reuse crowds.anonymize: its k-minimal set outlives a call."""
    assert crowds_ola._k_min.__defaults__ == (set(),)
    rng = np.random.default_rng(0)
    df, _, rules = table_with_hierarchies(rng, 30, 2)
    bottom, top = Node.build_network(rules, df, crowds_ola._check_kanonymity)
    shared = crowds_ola._k_min(bottom, top, 2, 0)
    assert crowds_ola._k_min.__defaults__[0] is shared and len(shared) > 0
    shared.clear()


def test_ola_matches_crowds_with_a_fresh_k_minimal_set():
    rng = np.random.default_rng(1)
    compared = 0
    for _ in range(25):
        n = int(rng.integers(8, 40))
        df, ours, rules = table_with_hierarchies(rng, n, int(rng.integers(1, 4)))
        k = int(rng.integers(1, n + 1))
        max_sup = float(rng.choice([0, 5, 10, 50]))
        enc = encode(df, list(df.columns), ours)
        mine = ola(enc, k, max_sup, "prec")
        theirs = crowds_k_minimal(df, rules, k, max_sup)
        theirs_nodes = {tuple(node.gen_state[c] for c in df.columns) for node in theirs}
        # crowds also keeps a node found above one already in its set; its minimal members
        # are exactly our k-minimal set
        minimal = {
            a for a in theirs_nodes
            if not any(b != a and all(x <= y for x, y in zip(b, a, strict=True)) for b in theirs_nodes)
        }  # fmt: skip
        assert set(mine.k_minimal) == minimal
        best = min(theirs, key=prec_loss)
        assert prec_loss(best) == pytest.approx(mine.loss)
        node = tuple(best.gen_state[c] for c in df.columns)
        if node == mine.node:
            _, sizes_a = node_classes(enc, node)
            _, sizes_b = node_classes(enc, mine.node)
            assert sizes_a[sizes_a >= k].min() == sizes_b[sizes_b >= k].min()
            compared += 1
    assert compared > 10


def test_pycanon_confirms_the_k_of_every_release(tmp_path):
    rng = np.random.default_rng(2)
    df, ours, _ = table_with_hierarchies(rng, 300, 3)
    qis = list(df.columns)
    for k in (2, 5, 12):
        release, summary = release_table(df, ours, qis, k, 10, "prec")
        assert anonymity.k_anonymity(release, qis) == summary["smallest_class"] >= k
    enc = encode(df, qis, ours)
    result = epsilon_safe_la(enc, 5, 0.75, 1.0, 0.04, "suppression", 5, derive_rng(3, "la"))
    kept = Encoded(enc.columns, enc.codes[result.released], enc.hierarchies)
    if kept.n_rows:
        released = kept.labels(result.node)
        assert anonymity.k_anonymity(released, qis) >= 5
