"""Synthetic MIMIC-III v1.4: a seeded, streaming generator of the official CSV.gz files.

Public entry point: :func:`generate` ``(out_dir, subjects, seed, chunk_subjects=500,
other_chart_rows=0.0) -> dict`` (also ``python -m mimic_deid synth --subjects N --seed S --out
DIR``). It writes PATIENTS,
ADMISSIONS, ICUSTAYS, CHARTEVENTS, LABEVENTS, OUTPUTEVENTS, D_ITEMS, D_LABITEMS, TRANSFERS and
CPTEVENTS (``sequences``: own random stream, seed 004 inputs) as
``<TABLE>.csv.gz`` in the official column order and quoting, plus ``SYNTHETIC.json`` (the
returned summary: subjects, admissions, icustays, rows per table, seed, other_chart_rows).

Modules: ``catalog`` (items, labels, units, text values), ``population`` (subjects,
admissions, stays, deaths), ``physiology`` (latent signals), ``schedule`` (irregular times),
``chart`` / ``labs`` / ``outputs`` (event rows), ``sequences`` (TRANSFERS, CPTEVENTS), ``quirks``
(empty ADMISSIONS demographics at real MIMIC-III shares; on request, CHARTEVENTS rows of
non-benchmark items at the real table's mix), ``writer`` (CSV.gz layout), ``generator``
(driver).

Design decisions
----------------
Determinism and scale. Subjects are drawn in blocks of 100, each with its own random stream
``default_rng([seed, block])``; ids (SUBJECT_ID < 100000, HADM_ID 100000-199999, ICUSTAY_ID
200000-299999, random gaps sized to fill ~90 % of each range for the requested N; above ~75,000
subjects they run beyond the range) and ROW_IDs are carried from block to block. Blocks are
appended to gzip streams (level 1, mtime 0, no file name) every ``chunk_subjects`` subjects, so
the bytes depend only on (subjects, seed), never on the chunk size, and memory is flat (about
270 MB peak at full size). Everything is written into a temporary sibling directory that
replaces ``out_dir`` at the end; a non-empty directory without ``SYNTHETIC.json`` is never
replaced. Measured on one core: ~460,000 CHARTEVENTS rows/s (about 2.2 s per million rows,
CSV formatting and gzip included); 3,000 subjects (2.7 M chart rows) in ~6 s; full size
46,520 subjects (41 M chart rows, 0.85 GB) in ~90 s.

Calibration (constants in ``population.py``; checked on 4 x 46,500 simulated subjects, and by
the tests at 3,000 subjects within 3 points). Published targets: 46,520 subjects, 58,976
admissions, 61,532 ICU stays; mimic3-benchmarks cohort rules drop (a) 9.3 % of stays for a
care-unit/ward transfer, (b) 10.1 % of the rest in admissions with several remaining stays,
(c) 15.8 % of the rest aged < 18, leaving 42,276; half of those last >= 48 h and 13.2 % of
those die in hospital.

- Admissions per subject 1.27: adults are readmitted with probability 0.245, extra admissions
  ~ Geometric(0.6); a death in hospital ends a subject's admissions.
- Stays per admission 1.043: 2 % of adult admissions have no ICU stay; otherwise 1/2/3 stays
  with probabilities 0.944/0.051/0.005, which makes rule (b) drop ~10.1 %.
- Rule (a): each stay has a transfer with probability 0.093 (55 % change care unit, the rest
  only the ward).
- Rule (c): 18.5 % of subjects are NICU newborns (age 0, CareVue only) and 1.2 % children
  1-17; exactly round(N x 300 / 46,520) subjects have shifted ages (DOB ~300 years before
  their first admission).
- Length of stay: log-normal, median 2.0 days, +0.6 log-days per unit of severity and a
  log-sd of 0.875 of its own (1.06 in all), capped at 175 days (~0.5 % of stays beyond 30
  days); the severity term makes a stay longer than 7 days predictable from its first 48 h.
- In-hospital death (adults): logit = -3.34 + 1.7 x severity + 0.3 x (age - 65) / 15, giving
  ~13.2 % among cohort stays >= 48 h; 72 % die in the ICU (OUTTIME at death), 8 % are
  recorded by DOD only (DEATHTIME empty, HOSPITAL_EXPIRE_FLAG 1); 28 % of adult survivors die
  later (DOD after discharge, DOD_SSN only).

Mortality signal. Each admission has a latent severity N(0, 1) that raises heart rate,
respiratory rate, glucose and temperature and lowers blood pressure, SpO2, pH and GCS (see
``physiology.py``); survivors recover by up to half of it over five days, patients who die
deteriorate exponentially (time constant 24 h) towards death. A standardised logistic
regression on mean/min/max/sd of the first 48 h of numeric chart values reaches a held-out
ROC-AUC of ~0.84 (0.82-0.85 over seeds 1-5) at 3,000 subjects.

Realism features (each found by a test in ``tests/synthetic/test_synthetic.py``): vitals hourly with
jitter, skips and extra readings; labs every 4-24 h over the whole admission without
ICUSTAY_ID (many rows outside ICU stays, some outpatient rows without HADM_ID); per-stay
missing variables; CareVue items (< 220000, older shifted years) and MetaVision items; °F/°C
temperatures, kg/lb/oz weights, inch/cm heights, SpO2 fractions, FiO2 percent and fractions;
"120/80" blood pressure text in both systolic and diastolic rows; GCS and capillary refill
text; heart rate 0/999 and temperature 0 artefacts; MetaVision ERROR = 1 rows; ~12 % of
chart rows from distractor items listed in D_ITEMS; one ICU stay per block of 100 subjects
(~0.8 % of stays) with OUTTIME = INTIME and LOS 0 (``generator.zero_length_stays``, own random
stream; real MIMIC-III has such stays, in a share REAL-MIMIC.md does not measure, so this one
is chosen to exercise the cohort rule ``valid_times``; the stays keep their events).
"""

import hashlib
from pathlib import Path

from mimic_deid.synthetic.generator import generate

__all__ = ["generate", "generator_fingerprint"]


def generator_fingerprint() -> str:
    """sha256 of the generator's source files (this package), hex.

    The workflow's ``synthesize`` rule takes it as a parameter, so a copy made by an older
    generator (other tables, other value sets) is regenerated instead of silently reused.
    """
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
