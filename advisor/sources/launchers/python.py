"""python itself: `python script.py`, `python -m MODULE` (a launcher's module starts that launcher);
one process, which may use several GPUs through DataParallel."""

from __future__ import annotations

from advisor.sources.launchers.spec import LauncherSpec, Processes

SPEC = LauncherSpec(
    name="python",
    summary="the Python interpreter",
    commands=(),  # python, python3, python3.11: matched by name in the registry
    form="interpreter",
    processes=Processes(default="one process"),
)
