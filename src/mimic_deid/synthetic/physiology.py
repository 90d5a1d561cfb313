"""Latent physiology: the value of each signal for an admission at a time.

Every admission has a latent severity ``s ~ N(0, 1)`` (population.py also uses it for the
death probability and the length of stay). A signal's value at time ``t`` (seconds) is

    mean + between * z[adm, signal] + coef * s_eff(t) + amp * sin(2 pi t / day + phase) + noise

in the signal's canonical unit (bpm, mmHg, breaths/min, %, °C, mg/dL, pH, FiO2 fraction, GCS
points, mL per 2 h), clipped to ``[low, high]``. ``z`` is a per-admission random effect (the
patient's own baseline) and ``s_eff(t)`` is the effective severity: survivors improve (their
severity shrinks by up to half over the first five days), patients who die deteriorate as
death approaches (``+ RAMP * exp(-(death - t) / TAU)``), so the signal is strongest near
death. Model constants differ by age group (adult, child, newborn).
"""

from __future__ import annotations

import numpy as np

from mimic_deid.synthetic.population import ADULT, CHILD, DAY, HOUR, NEONATE, Population
from mimic_deid.synthetic.reference import read_table

RAMP = 2.0  # severity added at the moment of death
TAU = 24 * HOUR  # e-folding time of the pre-death deterioration
RECOVERY = 0.5  # share of the initial severity a survivor loses ...
RECOVERY_TIME = 5 * DAY  # ... over this time from admission


#: Per signal and age group, the value model's parameters in the canonical unit: mean,
#: between (sd of the per-admission baseline), severity (shift per unit of effective
#: severity), amplitude (diurnal oscillation), noise (per-measurement sd), low, high. Children
#: and newborns list only the signals where they differ from adults.
_SIGNAL_ROWS = read_table("signals", (str, str) + (float,) * 7)
SIGNALS = tuple(row[0] for row in _SIGNAL_ROWS if row[1] == "adult")


def _params(name: str) -> np.ndarray:
    """(3 groups, 7 parameters) for signal ``name`` (rows ADULT, CHILD, NEONATE)."""
    by_group = {group: values for signal, group, *values in _SIGNAL_ROWS if signal == name}
    rows = sorted(
        (code, by_group.get(group, by_group["adult"]))
        for code, group in ((ADULT, "adult"), (CHILD, "child"), (NEONATE, "neonate"))
    )
    return np.array([values for _, values in rows])


_PARAMS = {name: _params(name) for name in SIGNALS}


class Physiology:
    """Latent state of one block's admissions; ``level`` evaluates a signal at given times."""

    def __init__(self, pop: Population, rng: np.random.Generator) -> None:
        na = len(pop.a_id)
        self.group = pop.a_group
        self.severity = pop.a_severity
        self.admit = pop.a_admit
        self.death = np.where(np.isnan(pop.a_death), np.inf, pop.a_death)
        self.dies = ~np.isnan(pop.a_death)
        self.z = rng.standard_normal((na, len(SIGNALS)))
        self.phase = rng.uniform(0, 2 * np.pi, na)
        # Body size per admission (the subject's own, with a little drift between admissions).
        s_male = pop.s_male[pop.a_subj]
        age = (pop.a_admit - pop.s_dob[pop.a_subj]) / (365.2425 * DAY)
        age = np.minimum(age, 90.0)
        height = np.where(s_male, 176.0, 163.0) + 7.0 * rng.standard_normal(na)
        child_h = 75.0 + 6.0 * np.clip(age, 1, 17) + 6.0 * rng.standard_normal(na)
        height = np.where(self.group == CHILD, child_h, height)
        height = np.where(self.group == NEONATE, 50.0 + 3.0 * rng.standard_normal(na), height)
        self.height_cm = height
        bmi = np.exp(np.log(26.5) + 0.2 * rng.standard_normal(na))
        weight = bmi * (height / 100.0) ** 2
        weight = np.where(
            self.group == CHILD,
            2.0 + 2.6 * np.clip(age, 1, 17) * np.exp(0.15 * rng.standard_normal(na)),
            weight,
        )
        weight = np.where(
            self.group == NEONATE, np.clip(2.9 + 0.7 * rng.standard_normal(na), 0.6, 5.0), weight
        )
        self.weight_kg = weight

    def severity_at(self, adm: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Effective severity of admissions ``adm`` at times ``t`` (seconds)."""
        s = self.severity[adm]
        elapsed = np.clip((t - self.admit[adm]) / RECOVERY_TIME, 0.0, 1.0)
        dies = self.dies[adm]
        s = np.where(dies, s, s * (1.0 - RECOVERY * elapsed))
        to_death = np.maximum(self.death[adm] - t, 0.0)
        return s + np.where(dies, RAMP * np.exp(-to_death / TAU), 0.0)

    def level(
        self,
        name: str,
        adm: np.ndarray,
        t: np.ndarray,
        rng: np.random.Generator,
        noise_scale: float = 1.0,
    ) -> np.ndarray:
        """Value of signal ``name`` (canonical unit, unrounded) for rows (adm, t)."""
        p = _PARAMS[name][self.group[adm]]
        k = SIGNALS.index(name)
        x = (
            p[:, 0]
            + p[:, 1] * self.z[adm, k]
            + p[:, 2] * self.severity_at(adm, t)
            + p[:, 3] * np.sin(2 * np.pi * t / DAY + self.phase[adm])
            + p[:, 4] * noise_scale * rng.standard_normal(len(adm))
        )
        return np.clip(x, p[:, 5], p[:, 6])
