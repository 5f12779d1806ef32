"""`--verify`: a short real training probe that backs the static advice with measurements.

The probe is our own training program (advisor/pipeline/probe/worker.py), never the user's script. It is
started under the run's own launcher settings (torchrun / accelerate launch, process count,
CUDA_VISIBLE_DEVICES, accelerate config), builds the run's model from its config with random
weights, applies the run's method and TrainingArguments, trains a bounded number of steps with the
HF Trainer on synthetic tokens and writes one JSON file per rank.

Nothing in this package imports torch at module level: the parent side (spec, launch, results,
stage) only starts processes and reads JSON; torch, transformers, accelerate and peft are imported
inside the child processes (worker.py, envinfo.py). They come with the optional extra `verify`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

RECORDED_FILE = ".gpu-advise-verify.json"
INSTALL_HINT = "pip install torch==2.13.0 && pip install 'gpu-advise[verify]'"
REQUIRED = ("torch", "transformers", "accelerate", "peft")


def missing_requirements() -> list[str]:
    """The packages --verify needs that are not importable here (no import happens)."""
    import importlib.util  # here: every check imports this package for recorded_measurements

    return [name for name in REQUIRED if importlib.util.find_spec(name) is None]


def unavailable_message() -> str | None:
    missing = missing_requirements()
    if not missing:
        return None
    return (
        f"--verify needs {', '.join(missing)} (not installed); the static check still ran. "
        f"Install them with: {INSTALL_HINT}"
    )


def recorded_measurements(settings: Any, paths: list[Path]) -> Path | None:
    """Measurements recorded by `--verify-report .gpu-advise-verify.json`: at the root of the settings
    file when there is one, else in the folder of the first path checked."""
    if settings is not None and getattr(settings, "source", None) is not None:
        roots = [Path(settings.source).parent]
    else:
        first = paths[0] if paths else Path.cwd()
        roots = [first if first.is_dir() else first.parent]
    for root in roots:
        candidate = root / RECORDED_FILE
        # whatever is at the name is read (and refused by the reader when it is not a regular file:
        # a folder or a dangling link there is said, not silently taken for "nothing recorded")
        if os.path.lexists(candidate):
            return candidate
    return None
