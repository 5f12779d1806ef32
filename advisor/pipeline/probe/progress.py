"""What --verify is doing, on stderr, while it does it.

On a terminal a rich progress bar, with the same lines printed above it; piped (a CI log, `| tee`)
plain lines: one when a probe starts ("verify: launch.sh: starting 4 processes (CPU, gloo)..."),
one per optimizer step, one every HEARTBEAT_S while nothing changes (importing torch and building
the model take long before the first step) and one when it ends. Before these, a probe that took
600 s printed nothing at all when piped. Run names are the user's: escaped, one line each.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from advisor.core.escape import escape_text
from advisor.sources import launchers

HEARTBEAT_S = 30.0
Update = Callable[[int, int], None]


def describe(procs: int | str | None, device: str, launcher: str) -> str:
    """'4 processes (CPU, gloo)', '1 process (CUDA)', 'gpu processes (CUDA, nccl)'."""
    many = procs != 1
    spread = many and not launchers.spec_of(launcher).is_interpreter  # several processes talk
    backend = ("gloo" if device == "cpu" else "nccl") if spread else None
    where = "CPU" if device == "cpu" else "CUDA"
    label = f"{procs} process{'es' if many else ''}"
    return f"{label} ({where}{', ' + backend if backend else ''})"


class ProbeProgress:
    """Progress of the probes of one check; silent when disabled (the API's progress=False)."""

    def __init__(self, enabled: bool, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.bar: Any = None
        if enabled and self.stream is sys.stderr and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )

    def __enter__(self) -> ProbeProgress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.stop()

    def say(self, text: str) -> None:
        """One line: `verify: TEXT`."""
        if not self.enabled:
            return
        line = escape_text(f"verify: {text}")
        if self.bar is not None:
            self.bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
            return
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr must not stop the probe's clean-up
            self.enabled = False

    def task(self, label: str, total: int, clock: Callable[[], float] = time.monotonic) -> Update:
        """The launcher's progress callback for one probe: step lines and heartbeats, or the bar."""
        if not self.enabled:
            return lambda step, tot: None
        if self.bar is not None:
            bar = self.bar
            task_id = bar.add_task(escape_text(f"probe {label}"), total=total)

            def update_bar(step: int, tot: int) -> None:
                bar.update(task_id, completed=step, total=tot or total)

            return update_bar
        start = clock()
        state = {"step": -1, "said": start}

        def update(step: int, tot: int) -> None:
            now = clock()
            of = tot or total
            if step != state["step"]:
                if step > 0:
                    self.say(f"{label}: step {step}/{of} ({now - start:.0f} s)")
                state["step"], state["said"] = step, now
            elif now - state["said"] >= HEARTBEAT_S:
                doing = (
                    "starting (importing torch, building the model)" if step <= 0 else f"at step {step}/{of}"
                )
                self.say(f"{label}: still {doing}, {now - start:.0f} s")
                state["said"] = now

        return update
