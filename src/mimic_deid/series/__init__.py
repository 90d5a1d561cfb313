"""The series pipeline as a workflow stage (``series``): extraction, cohort, hourly series,
de-identification, evaluation and the report of the sweep. The algorithms live in
``pipeline/``, ``deid/`` and ``evaluate/``; :mod:`~mimic_deid.series.stage` declares what the
stage reads, builds and reports (its :data:`~mimic_deid.series.stage.STAGE`)."""
