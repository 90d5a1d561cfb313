"""m-concealing (seed 003 §5.2, Formula 5.1): re-identification risk over knowledge states.

An adversary knows each column ``c`` independently with probability ``p_c`` (a knowledge state
is the set of columns known). Given the state ``q``, record ``i`` is guessed among the released
records equal to it on the known columns, with probability ``1 / |class_q(i)|``. The release is
m-concealing for

    m = inclusion * max_i sum_q P(q) / |class_q(i)|,

``inclusion`` being the disclosed probability that a person is in the release. With every
``p_c`` in {0, 1} a single state has weight 1 and ``1 / m`` is the smallest class size on the
known columns, i.e. the ``k`` of k-anonymity (seed §5.2). Columns known with probability 1 or 0
are not enumerated, so only the uncertain columns contribute ``2 ** n`` states.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mimic_deid.core.errors import ConfigError, InputDataError
from mimic_deid.tabular.anonymity import class_sizes

__all__ = ["MAX_UNCERTAIN", "ConcealingResult", "m_concealing"]

#: Most columns with a probability strictly between 0 and 1 (2 ** 16 knowledge states).
MAX_UNCERTAIN = 16


@dataclass
class ConcealingResult:
    """The m of a release.

    Attributes
    ----------
    m : float
        Largest probability of a correct re-identification over records (times inclusion).
    inverse_m : float
        ``1 / m``, comparable with k (seed Tables 6.4-6.7).
    risk : ndarray of float64, shape (n_rows,)
        Per record, ``sum_q P(q) / |class_q(i)|`` (before the inclusion factor).
    states : int
        Knowledge states enumerated.
    """

    m: float
    inverse_m: float
    risk: np.ndarray
    states: int


def _check_probabilities(probabilities: Sequence[float], n_columns: int) -> np.ndarray:
    p = np.asarray(probabilities, dtype=np.float64)
    if p.shape != (n_columns,):
        raise ConfigError(
            f"parameter 'probabilities' must give one probability per column ({n_columns}), "
            f"got {len(p)}"
        )
    bad = [float(x) for x in p if not 0.0 <= x <= 1.0]
    if bad:
        raise ConfigError(f"parameter 'probabilities' must lie in [0, 1], got {bad[0]!r}")
    return p


def m_concealing(
    codes: np.ndarray, probabilities: Sequence[float], inclusion: float = 1.0
) -> ConcealingResult:
    """m-concealing of a released table.

    Parameters
    ----------
    codes : ndarray of int, shape (n_rows, n_columns)
        The released records' values as non-negative integer codes (generalised
        quasi-identifiers and the other columns), suppressed records already removed.
    probabilities : sequence of float, shape (n_columns,)
        Probability that the adversary knows each column.
    inclusion : float
        Probability that a person is in the release, in ``(0, 1]``.

    Raises
    ------
    InputDataError
        ``codes`` is empty or not a 2-D array of non-negative integers.
    ConfigError
        A probability outside [0, 1], more than :data:`MAX_UNCERTAIN` uncertain columns, or
        ``inclusion`` outside (0, 1].
    """
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[0] == 0 or not np.issubdtype(codes.dtype, np.integer):
        raise InputDataError(
            f"m-concealing: expected a non-empty (rows, columns) integer array, got shape "
            f"{codes.shape} of {codes.dtype}"
        )
    if codes.size and codes.min() < 0:
        raise InputDataError("m-concealing: codes must be non-negative integers")
    p = _check_probabilities(probabilities, codes.shape[1])
    if not 0.0 < float(inclusion) <= 1.0:
        raise ConfigError(f"parameter 'inclusion' must lie in (0, 1], got {inclusion!r}")
    certain = np.flatnonzero(p == 1.0)
    uncertain = np.flatnonzero((p > 0.0) & (p < 1.0))
    if uncertain.size > MAX_UNCERTAIN:
        raise ConfigError(
            f"parameter 'probabilities': at most {MAX_UNCERTAIN} columns may have a probability "
            f"strictly between 0 and 1, got {uncertain.size}"
        )
    cards = codes.max(axis=0) + 1
    risk = np.zeros(codes.shape[0], dtype=np.float64)
    states = 1 << uncertain.size
    for state in range(states):
        known = uncertain[[(state >> b) & 1 == 1 for b in range(uncertain.size)]]
        weight = float(np.prod(np.where(np.isin(uncertain, known), p[uncertain], 1 - p[uncertain])))
        cols = np.sort(np.r_[certain, known]).astype(np.int64)
        inverse, sizes = class_sizes(codes[:, cols], cards[cols])
        risk += weight / sizes[inverse]
    m = float(inclusion) * float(risk.max())
    return ConcealingResult(m=m, inverse_m=1.0 / m, risk=risk, states=states)
