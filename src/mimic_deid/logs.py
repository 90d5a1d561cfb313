"""Logging set-up and progress reporting for long steps.

Log lines carry counts and timings only: never patient rows, identifiers or passwords.
"""

from __future__ import annotations

import logging
import sys
import time

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
