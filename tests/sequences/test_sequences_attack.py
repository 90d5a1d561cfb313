"""The verbatim-copy membership attack on a sequence release and the claims checked on it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_sequences import logs, make_log, synth_dir  # noqa: F401  (fixtures)

from mimic_deid.core.errors import InputDataError, ReleaseCheckError
from mimic_deid.sequences import Settings, fit_release, membership_attack, sequence_keys
from mimic_deid.sequences.attack import release_codes, split_log, verbatim_shares
from mimic_deid.sequences.check import (
    check_sequence_columns,
    check_sequence_release,
    check_verbatim_copies,
)


def _frame(seqs: list[list[int]], states: tuple[str, ...]) -> pd.DataFrame:
    """A release table holding ``seqs`` (one section per object)."""
    rows = [(o, 0, p, states[s]) for o, seq in enumerate(seqs) for p, s in enumerate(seq)]
    return pd.DataFrame(rows, columns=["object", "section", "position", "state"])


def test_keys_are_equal_exactly_for_equal_sequences():
    rng = np.random.default_rng(3)
    seqs = [list(rng.integers(0, 3, rng.integers(1, 5))) for _ in range(400)]
    seqs += [[0], [0, 0], [1, 0], [0, 1], [0, 0, 0]]  # prefixes, order, repeats
    obj = np.concatenate([np.full(len(s), i) for i, s in enumerate(seqs)])
    keys = sequence_keys(obj, np.concatenate(seqs))
    assert keys.shape == (len(seqs), 2) and keys.dtype == np.uint64
    by_seq = {}
    for key, seq in zip(map(tuple, keys), map(tuple, seqs), strict=True):
        assert by_seq.setdefault(seq, key) == key
    assert len(set(by_seq.values())) == len(by_seq)  # distinct sequences, distinct keys


def test_shares_of_verbatim_and_unique_copies():
    states = ("A", "B", "C")
    source = make_log([[0, 1], [0, 1], [0, 2], [2, 1, 0], [1, 1]], n_states=3)
    released = [[0, 1], [0, 2], [0, 2], [2, 1], [1, 1, 1]]
    shares = verbatim_shares(
        sequence_keys(source.obj, source.state),
        sequence_keys(*release_codes(_frame(released, states), states)),
    )
    # copies: [0,1] (not unique), [0,2] twice (unique); [2,1] is a prefix, [1,1,1] longer
    assert shares == {
        "released": 5,
        "verbatim": 0.6,
        "verbatim_unique": 0.4,
        "source_unique": 0.6,
        "unique_sequences": 3,
        "unique_reproduced": 1,
        "unique_reproduced_share": 1 / 3,
    }


def test_release_states_outside_the_source_never_match_and_columns_are_named():
    obj, state = release_codes(_frame([[0, 1]], ("A", "B")), ("A",))
    assert obj.tolist() == [0, 0] and state.tolist() == [0, 1]
    with pytest.raises(InputDataError) as err:
        release_codes(pd.DataFrame({"object": [0], "state": ["A"]}), ("A",))
    assert str(err.value) == (
        "sequence release: column 'section' missing (expected object, section, position, "
        "state; got object, state)"
    )


def test_split_halves_partition_the_objects():
    source = make_log([[0, 1], [1, 2], [2, 0], [0, 0], [1, 1]])
    a, b = split_log(source, np.random.default_rng(0))
    assert (a.n_objects, b.n_objects) == (3, 2)
    both = sorted(map(tuple, np.concatenate([a.state, b.state]).reshape(-1, 2).tolist()))
    assert both == sorted(map(tuple, source.state.reshape(-1, 2).tolist()))


def test_a_memorising_release_has_the_full_advantage_and_fails_the_claim():
    """A 'release method' that publishes its training half verbatim: every unique member path
    is found, no holdout path the members do not share; claim 13 fails with the figures."""
    rng = np.random.default_rng(5)
    source = make_log([list(rng.integers(0, 6, 6)) for _ in range(200)], n_states=6)

    def copy(half):
        return _frame([half.state[half.obj == o].tolist() for o in range(half.n_objects)],
                      half.states)  # fmt: skip

    attack = membership_attack(source, copy(source), copy, seed=1)
    assert attack["members"]["unique_reproduced_share"] == 1.0
    assert attack["holdout"]["unique_reproduced_share"] == 0.0  # 6^6 paths: no collision
    assert attack["advantage"] == 1.0 and attack["advantage_se"] == 0.0
    assert attack["release"]["verbatim"] == 1.0 and attack["release"]["verbatim_unique"] == 1.0
    with pytest.raises(ReleaseCheckError) as err:
        check_verbatim_copies(attack, "t", max_verbatim_unique=1.0, max_advantage=0.05)
    assert str(err.value) == (
        "sequence release t: membership advantage of the verbatim-copy attacker 100.0 % "
        "(standard error 0.0 %, lower bound 100.0 %) is above "
        "sequences.attack.max_advantage = 0.05 (5.0 %)"
    )
    with pytest.raises(ReleaseCheckError) as err:
        check_verbatim_copies(attack, "t", max_verbatim_unique=0.05, max_advantage=1.0)
    assert str(err.value) == (
        "sequence release t: 100.0 % of the released sequences copy a sequence unique in the "
        "source, above sequences.attack.max_verbatim_unique = 0.05 (5.0 %)"
    )


@pytest.mark.parametrize("table", ["transfers", "cptevents"])
def test_the_markov_release_passes_with_no_advantage(logs, table):  # noqa: F811
    """The seed's release on the synthetic tables: few verbatim copies of unique paths and an
    advantage within two standard errors of zero; the default claims hold."""
    log_ = logs[table]
    s = Settings(hashes=20)
    released = fit_release(log_, s, 3)[0].drop(columns=["time", "cluster"])
    attack = membership_attack(log_, released, lambda half: fit_release(half, s, 3)[0], 3)
    assert attack["member_objects"] + attack["holdout_objects"] == log_.n_objects
    assert attack["release"]["released"] == log_.n_objects
    # the configured default bound (0.10); TRANSFERS at 600 subjects copies unique paths in
    # 5.4-7.0 % of its sequences over seeds 3-6 (chance on 7 care units, docs/sequences.md)
    assert attack["release"]["verbatim_unique"] < 0.10
    assert abs(attack["advantage"]) <= 2 * attack["advantage_se"] + 0.02
    result = check_sequence_release(
        released, attack, table=table, max_verbatim_unique=0.10, max_advantage=0.05
    )
    assert result["passed"] and result["checks"]["sequence_columns"]["rows"] == len(released)
    again = membership_attack(log_, released, lambda half: fit_release(half, s, 3)[0], 3)
    assert again == attack  # deterministic


def test_sequence_columns_claim_names_the_problem():
    good = _frame([[0, 1], [1]], ("A", "B"))
    assert check_sequence_columns(good, "t") == {
        "columns": ["object", "section", "position", "state"],
        "objects": 2,
        "rows": 3,
    }
    with pytest.raises(ReleaseCheckError) as err:
        check_sequence_columns(good.assign(time=1.0), "t")
    assert str(err.value) == (
        "identifier, timestamp or age in the sequence release: t.time: name contains 'time'"
    )
    with pytest.raises(ReleaseCheckError) as err:
        check_sequence_columns(good.assign(subject_id=1), "t")
    assert str(err.value) == (
        "identifier, timestamp or age in the sequence release: t.subject_id: identifier column"
    )
    with pytest.raises(ReleaseCheckError) as err:
        check_sequence_columns(good.assign(cluster=0), "t")
    assert str(err.value) == (
        "sequence release t: columns must be object, section, position, state, got object, "
        "section, position, state, cluster"
    )
    with pytest.raises(ReleaseCheckError) as err:
        check_sequence_columns(good.assign(object=good["object"] + 10_000), "t")
    assert str(err.value) == (
        "sequence release t: objects must be synthetic numbers 0 .. 1, got values from 10000 "
        "to 10001"
    )
    with pytest.raises(ReleaseCheckError) as err:
        check_verbatim_copies({"release": {}}, "t", 0.05, 0.05)
    assert str(err.value) == (
        "sequence release t: the verbatim-copy attack was not measured (attack.json needs "
        "release.verbatim_unique, advantage and advantage_se)"
    )
