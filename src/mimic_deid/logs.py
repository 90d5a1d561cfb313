"""Logging set-up and progress reporting for long steps.

Log lines carry counts and timings only: never patient rows, identifiers or passwords.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator

__all__ = ["Progress", "configure", "get_logger", "run_stage"]

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def get_logger(name: str) -> logging.Logger:
    """Return the package logger ``mimic_deid.<name>``."""
    return logging.getLogger(f"mimic_deid.{name}" if not name.startswith("mimic_deid") else name)


def configure(log_file: str | None = None, level: int = logging.INFO) -> None:
    """Send package logs to ``log_file`` (a Snakemake ``log:``) and to stderr."""
    root = logging.getLogger("mimic_deid")
    root.setLevel(level)
    root.handlers.clear()
    formatter = logging.Formatter(FORMAT, datefmt="%Y-%m-%d %H:%M:%S")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file, mode="w", encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.propagate = False


class Progress:
    """Log ``label: done/total (pct) elapsed`` at most every ``every_s`` seconds."""

    def __init__(
        self, label: str, total: int | None, logger: logging.Logger, every_s: float = 10.0
    ) -> None:
        self.label, self.total, self.logger, self.every_s = label, total, logger, every_s
        self.done = 0
        self.start = self._last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= self.every_s:
            self._last = now
            self._emit(now)

    def close(self) -> None:
        self._emit(time.monotonic(), final=True)

    def _emit(self, now: float, final: bool = False) -> None:
        elapsed = now - self.start
        if self.total:
            pct = 100.0 * self.done / self.total
            msg = f"{self.label}: {self.done:,}/{self.total:,} ({pct:.0f}%) in {elapsed:.1f}s"
        else:
            msg = f"{self.label}: {self.done:,} in {elapsed:.1f}s"
        self.logger.info(msg + (" - done" if final else ""))


@contextlib.contextmanager
def run_stage(rule: str, log_file: str | None = None) -> Iterator[logging.Logger]:
    """Run one workflow stage: log to ``log_file`` and stderr, report errors in one line.

    A :class:`~mimic_deid.errors.MimicDeidError` (bad input, bad parameter, failed privacy
    check) ends the process with status 1 and the single line
    ``mimic-deid error in rule '<rule>': <message>`` on stderr, never a traceback.

    Parameters
    ----------
    rule : str
        The workflow rule (e.g. ``snakemake.rule``), named in the log and the error line.
    log_file : str, optional
        The rule's ``log:`` file.

    Yields
    ------
    logging.Logger
        The stage's logger.
    """
    from mimic_deid.errors import MimicDeidError

    configure(log_file)
    logger = get_logger(f"stage.{rule}")
    start = time.monotonic()
    try:
        yield logger
    except MimicDeidError as exc:
        logger.error("%s", exc)
        print(f"mimic-deid error in rule '{rule}': {exc}", file=sys.stderr)
        sys.exit(1)
    logger.info("rule %s finished in %.1f s", rule, time.monotonic() - start)
