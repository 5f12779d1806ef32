"""The launcher registry: one module per launcher, each exporting SPEC (a LauncherSpec), collected
here as pre-commit collects its languages. Adding a launcher is one module plus a line below;
tests/sources/test_launchers.py then reads it from its spec alone, and its real forms go there.

The shell interpreter (advisor/sources/shell) asks this registry which launcher a command starts
and reads the launcher's words by its spec's form and flag table."""

from __future__ import annotations

import re

from advisor.sources.launchers import (
    accelerate,
    axolotl,
    deepspeed,
    llamafactory,
    python,
    swift,
    torchrun,
    trl,
    vllm,
)
from advisor.sources.launchers.spec import NO_FLAGS, Flags, LauncherSpec, Processes

__all__ = [
    "LAUNCHERS",
    "NO_FLAGS",
    "Flags",
    "LauncherSpec",
    "Processes",
    "by_module",
    "find",
    "starts_launcher",
]

LAUNCHERS: dict[str, LauncherSpec] = {
    m.SPEC.name: m.SPEC
    for m in (accelerate, axolotl, deepspeed, llamafactory, python, swift, torchrun, trl, vllm)
}

PYTHON_RE = re.compile(r"python(?:[0-9]+(?:\.[0-9]+)?)?")

# (executable, words that must follow it) and its launcher; longer forms first (`trl vllm-serve`
# is vLLM, `trl sft` is TRL).
_BY_COMMAND: list[tuple[tuple[str, ...], LauncherSpec]] = sorted(
    ((form, spec) for spec in LAUNCHERS.values() for form in spec.commands), key=lambda fs: -len(fs[0])
)
_BY_MODULE: dict[str, LauncherSpec] = {m: spec for spec in LAUNCHERS.values() for m in spec.modules}
_EXECUTABLES = {form[0] for form, _ in _BY_COMMAND}


def find(words: list[str | None]) -> tuple[LauncherSpec, int] | None:
    """The launcher the command words start and how many words name it (`accelerate launch`: 2).
    A subcommand launcher needs one of its command words (`llamafactory-cli webui` starts no run)."""
    if not words or words[0] is None:
        return None
    base = words[0].rsplit("/", 1)[-1]
    if PYTHON_RE.fullmatch(base):
        return LAUNCHERS["python"], 1
    for form, spec in _BY_COMMAND:
        if form[0] != base or tuple(words[1 : len(form)]) != form[1:]:
            continue
        if spec.form == "subcommand" and (
            len(words) <= len(form) or words[len(form)] not in spec.subcommands
        ):
            continue
        return spec, len(form)
    return None


def by_module(module: str | None) -> LauncherSpec | None:
    """The launcher a `python -m MODULE` starts (torch.distributed.run is torchrun)."""
    if module is None:
        return None
    if module in _BY_MODULE:
        return _BY_MODULE[module]
    return LAUNCHERS["axolotl"] if module.startswith("axolotl.cli.train") else None


def starts_launcher(name: str) -> bool:
    """Whether an executable name may start a launcher (used to tell a command from a flag value)."""
    return name in _EXECUTABLES or bool(PYTHON_RE.fullmatch(name))
