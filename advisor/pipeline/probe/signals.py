"""While probes run, SIGINT, SIGTERM and SIGHUP unwind the probe instead of killing us on the spot.

Python's default for SIGTERM and SIGHUP ends the interpreter at once: no `finally` runs, so the
launcher's process group (torchrun or accelerate and their workers) ran on until its wall-time
limit and the staging folder stayed. Inside `stop_on_signals()` each of the three signals raises
ProbeStopped in the main thread; launch() then ends every process of the launch (advisor/pipeline/probe/
launch.py: terminate), the stage removes its staging folder, and `stopped_exit` prints one line and
exits 128 + the signal number (130, 143, 129), the shell's convention. A second signal while we clean
up is recorded, not raised, so the clean-up itself is not cut short. The previous handlers are back
when the block ends.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

HANDLED = tuple(
    s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None
)


class ProbeStopped(BaseException):
    """A signal stopped the probe. BaseException, so no `except Exception` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class SignalGuard:
    """What the handler saw. `hold()` switches from raising to recording (for the clean-up)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.raising = True

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        if self.raising:  # only once: a second signal must not cut the clean-up short
            self.raising = False
            raise ProbeStopped(signum)

    def hold(self) -> None:
        self.raising = False

    def check(self) -> None:
        """Raise ProbeStopped for a signal that was recorded while holding."""
        if self.received is not None:
            raise ProbeStopped(self.received)


@contextmanager
def stop_on_signals() -> Iterator[SignalGuard]:
    """Turn SIGINT/SIGTERM/SIGHUP into ProbeStopped for the duration of the block (main thread only:
    elsewhere Python cannot install handlers, and the block runs with the handlers it has)."""
    guard = SignalGuard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    previous = {}
    try:
        for sig in HANDLED:
            previous[sig] = signal.signal(sig, guard.handle)
        yield guard
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)


def stopped_exit(stop: ProbeStopped, staging: str | None) -> NoReturn:
    """One line on stderr saying what happened, then exit 128 + signal number."""
    cleaned = "probe processes ended" + (", staging folder removed" if staging else "")
    with contextlib.suppress(OSError, ValueError):  # SIGHUP: the terminal may be gone
        print(f"gpu-advise: --verify stopped by {stop.name}; {cleaned}", file=sys.stderr, flush=True)
    raise SystemExit(stop.exit_code)
