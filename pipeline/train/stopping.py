"""Stopping a run at a signal (Slurm's warning before a time limit, the limit's SIGTERM, preemption) without losing
its updates: the trainer finishes the update in hand, writes a checkpoint and exits with status 75 (StopSignals,
pipeline.errors.Stopped)."""
from __future__ import annotations

import signal
import threading

SIGNALS = (signal.SIGTERM, signal.SIGUSR1)  # Slurm's time limit and its --signal warning (the rules ask for SIGTERM)


class StopSignals:
    """Catches SIGTERM and SIGUSR1 while a run trains (a context manager); `name` is the first one caught (None
    before). Outside the main thread (no handler can be installed there) it catches nothing."""

    def __init__(self):
        self.name: str | None = None
        self._previous: dict = {}

    def _catch(self, number, frame) -> None:
        self.name = self.name or signal.Signals(number).name

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.signal(sig, self._catch) for sig in SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}
