"""The series pipeline after the source: the variables, the cohort, cleaning, hourly series
and splits."""
