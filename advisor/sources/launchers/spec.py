"""The declarative description every launcher module exports (see launchers/__init__.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from advisor.records import field, record

# How the words after the launcher are read:
# "script": launcher flags, then the training script (or -m module), then the script's own flags;
# "subcommand": a command word (train, sft) that starts a run, then flags and the config file;
# "server": an inference server, every flag is the launcher's, the model is its first word;
# "interpreter": python itself (its own options, -m MODULE or a script).
Form = Literal["script", "subcommand", "server", "interpreter"]


@record(frozen=True, slots=True)
class Flags:
    """A launcher's command-line flags, spelled with underscores: switches take no value."""

    bools: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()
    shorts: tuple[tuple[str, str], ...] = ()  # (-m, module): one-letter forms and their long name

    def knows(self, key: str) -> bool:
        return key in self.bools or key in self.values


NO_FLAGS = Flags()


@record(frozen=True, slots=True)
class Processes:
    """How a launcher decides how many processes it starts on a node (facts/world_size.py counts them)."""

    flags: tuple[str, ...] = ()  # launcher flags that give the count per node
    env: tuple[str, ...] = ()  # environment variables that give it
    default: str = ""  # what happens when nothing gives it


@record(frozen=True, slots=True)
class LauncherSpec:
    name: str  # LaunchCommand.launcher
    summary: str
    commands: tuple[tuple[str, ...], ...]  # how it is started: ("accelerate", "launch"), ("torchrun",)
    form: Form = "script"
    flags: Flags = NO_FLAGS
    modules: tuple[str, ...] = ()  # `python -m MODULE` forms that start the same launcher
    subcommands: frozenset[str] = frozenset()  # form "subcommand": the command words that start a run
    # form "subcommand": flags after the command word that are the launcher's, not the run's (trl's
    # accelerate flags), and those that stay the run's although the launcher also has them.
    subcommand_flags: Flags | None = None
    run_keeps: frozenset[str] = frozenset()
    env: Mapping[str, str] = field(default_factory=dict)  # environment variables it reads: meaning
    processes: Processes = Processes()
    source: str = ""  # where the behaviour is read from (file and line of the launcher's source)
