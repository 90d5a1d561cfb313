"""``python -m mimic_deid``: the command-line interface (see ``mimic_deid.cli``)."""

from mimic_deid.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
