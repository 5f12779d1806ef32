"""The launcher registry: one module per launcher, each a `Launcher` (protocol.py: SPEC, a
LauncherSpec, and processes(run), its process count), listed in REGISTRY as pre-commit lists its
languages. Adding a launcher is one module plus a line in REGISTRY; tests/sources/test_launchers.py
then reads it from its spec alone, and its real forms go there. Code outside this package asks a
launcher's spec what it implies (`spec_of(name).reads_accelerate_config`), never compares its name.

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
from advisor.sources.launchers.protocol import Launcher, ProcessCount, RunInputs, VisibleGpus
from advisor.sources.launchers.spec import NO_FLAGS, NO_LAUNCHER, Flags, LauncherSpec, LocalStart, Processes

__all__ = [
    "LAUNCHERS",
    "NO_FLAGS",
    "NO_LAUNCHER",
    "REGISTRY",
    "Flags",
    "Launcher",
    "LauncherSpec",
    "LocalStart",
    "ProcessCount",
    "Processes",
    "RunInputs",
    "VisibleGpus",
    "argument_owner",
    "by_module",
    "command_owner",
    "config_owner",
    "find",
    "implied_by_dialect",
    "implied_by_kind",
    "launcher",
    "probe_launcher",
    "spec_of",
    "started_launcher",
    "starts_launcher",
]

REGISTRY: tuple[Launcher, ...] = (
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
_BY_NAME: dict[str, Launcher] = {m.SPEC.name: m for m in REGISTRY}
LAUNCHERS: dict[str, LauncherSpec] = {name: m.SPEC for name, m in _BY_NAME.items()}


def launcher(name: str | None) -> Launcher | None:
    """The registered launcher of this id (LaunchCommand.launcher), None for none or an unknown one."""
    return _BY_NAME.get(name) if name is not None else None


def spec_of(name: str | None) -> LauncherSpec:
    """What the launcher of this id implies (its spec); NO_LAUNCHER, all off, for none."""
    found = launcher(name)
    return found.SPEC if found is not None else NO_LAUNCHER


def argument_owner(name: str | None, script: str | None, module: bool) -> LauncherSpec | None:
    """The launcher whose own argument classes read a command's flags: the command's launcher when its
    parser has defaults of its own (`swift sft`), or the one whose route file the command starts under
    another launcher (`torchrun swift/cli/sft.py`, `python -m swift.cli.sft`); None for a plain script."""
    own = spec_of(name)
    if own.own_defaults:
        return own
    if not script:
        return None
    path = script.replace("\\", "/")
    for spec in LAUNCHERS.values():
        routes = spec.route_modules if module else spec.route_scripts
        if routes and (script in routes if module else path.endswith(routes)):
            return spec
    return None


def command_owner(command: object) -> LauncherSpec | None:
    """argument_owner of a parsed launch command (a LaunchCommand): its launcher, the script it names
    (none for a subcommand form, `trl sft`) and whether that is a `-m` module."""
    script = getattr(command, "script", None)
    text = script.text if script is not None and not getattr(command, "subcommand", False) else None
    return argument_owner(getattr(command, "launcher", None), text, bool(getattr(command, "module", False)))


def config_owner(data: object) -> LauncherSpec | None:
    """The launcher whose own parser a config mapping is written for (a top-level key among its spec's
    config_marks), or None."""
    if not isinstance(data, dict):
        return None
    return next((spec for spec in LAUNCHERS.values() if spec.config_marks.intersection(data)), None)


def probe_launcher(name: str | None, processes: object) -> LauncherSpec:
    """The launcher `--verify` starts a run of launcher `name` under: its spec's probe_as, else python
    itself, which hands more than one process (`processes` not None or 1) to its probe_many_as."""
    own = spec_of(name).probe_as
    if own:
        return spec_of(own)
    if python.SPEC.probe_many_as and processes not in (None, 1):
        return spec_of(python.SPEC.probe_many_as)
    return python.SPEC


def started_launcher(spec: LauncherSpec, chosen: str | None) -> LauncherSpec | None:
    """The launcher `spec` starts (`axolotl --launcher torchrun`): the one its launcher_flag names
    (`chosen`) when it may start that one, else its default; None when it starts none."""
    if not spec.starts:
        return None
    return spec_of(chosen if chosen in spec.starts else spec.starts[0])


def implied_by_kind(kind: str) -> LauncherSpec | None:
    """The launcher a run with a config file of this kind (a Document kind) runs under when no launch names
    one: an accelerate config's, accelerate."""
    return next((m.SPEC for m in REGISTRY if m.SPEC.implied_by_kind == kind), None)


def implied_by_dialect(dialect: object) -> LauncherSpec | None:
    """The launcher a training config of this dialect runs under when no launch names one."""
    if not dialect:
        return None
    return next((m.SPEC for m in REGISTRY if m.SPEC.implied_by_dialect == dialect), None)


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
        return python.SPEC, 1
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
    return axolotl.SPEC if module.startswith("axolotl.cli.train") else None


def starts_launcher(name: str) -> bool:
    """Whether an executable name may start a launcher (used to tell a command from a flag value)."""
    return name in _EXECUTABLES or bool(PYTHON_RE.fullmatch(name))
