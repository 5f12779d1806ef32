"""The declarative description every launcher module exports (see launchers/__init__.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeVar

from advisor.core.records import field, record

# How the words after the launcher are read:
# "script": launcher flags, then the training script (or -m module), then the script's own flags;
# "subcommand": a command word (train, sft) that starts a run, then flags and the config file;
# "server": an inference server, every flag is the launcher's, the model is its first word;
# "interpreter": python itself (its own options, -m MODULE or a script).
Form = Literal["script", "subcommand", "server", "interpreter"]
_W = TypeVar("_W")


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
    # where a run writes the count it may leave to the launcher (facts/placement.py's fix): the plan's
    # namespace ("launch", "accelerate", "env") and key
    written_at: tuple[str, str] | None = None


@record(frozen=True, slots=True)
class LocalStart:
    """How a Python module (the probe's worker, pipeline/probe/launcher.py) is started under the
    launcher on this one machine: `python [-m MODULES[0]] BEFORE [--COUNT_FLAG N] [its accelerate config
    and flags] AFTER [--PORT_FLAG free-port] worker`. All empty: python itself runs the module."""

    before: tuple[str, ...] = ()  # its flags for one machine, before the count (torchrun --standalone)
    count_flag: str = ""  # takes the process count as its value (torchrun --nproc_per_node)
    after: tuple[str, ...] = ()  # its flags for one machine, after the others (accelerate --num_machines 1)
    port_flag: str = ""  # takes a free port of this machine (accelerate --main_process_port)


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
    # What the launcher implies for the run (facts, the plan and the probe ask these, never its name):
    serves: bool = False  # an inference server, no training script (facts/run.py `serving`)
    reads_accelerate_config: bool = False  # runs accelerate: its config, flags and gpu_ids apply
    runs_trainer: bool = False  # runs its own trainer script, which reads TrainingArguments
    runs_trl: bool = False  # that trainer is TRL's, named by the command word (`trl grpo`)
    own_defaults: bool = False  # its parser has defaults of its own, not TrainingArguments' (ms-swift)
    # that parser's flags spelled otherwise than TrainingArguments' (or the dialect's) names: theirs
    own_aliases: Mapping[str, str] = field(default_factory=dict)
    # the trainer of its own that runs the step, where read from its source: why its compute_loss leaves no
    # model output alive through backward (facts/training_loop.py), and why no batch it collates is of one
    # shape, packed or not (the caching allocator's growth); "" = not read
    drops_outputs: str = ""
    varied_shapes: str = ""
    # its parser's key that names the attention implementation, where not TrainingArguments' (ms-swift's
    # attn_impl), and why the rows of its `packing` switch attend within each sample ("" = not read)
    attention_key: str = ""
    packing_attention: str = ""
    # keys only its own parser reads: a YAML/JSON file holding one is its config (`swift sft cfg.yaml`), whose
    # keys no TrainingArguments / TRL table judges, whether or not a launch in the project names it
    config_marks: frozenset[str] = frozenset()
    # the entry files of its argument classes, which a run may start under another launcher (`torchrun
    # swift/cli/sft.py`, `-m swift.cli.sft`): their flags are this launcher's (launchers.argument_owner)
    route_scripts: tuple[str, ...] = ()
    route_modules: tuple[str, ...] = ()
    # `--deepspeed NAME` values it maps to a DeepSpeed config it ships, not a file of the project
    deepspeed_presets: frozenset[str] = frozenset()
    # its run's flags override keys of its own config (axolotl's `--key=value` into its pydantic config),
    # not TrainingArguments flags of an argparse
    flags_override_config: bool = False
    starts_deepspeed: bool = False  # the script it starts is a DeepSpeed run (--deepspeed_config)
    filters_gpus: bool = False  # --include/--exclude/--num_gpus pick the GPUs, dropping CUDA_VISIBLE_DEVICES
    flags_dialect: str = ""  # the dialect its run's flags are read in (llamafactory-cli: its own)
    implied_by_dialect: str = ""  # a training config of this dialect with no launch runs under it
    implied_by_kind: str = ""  # a run with a config file of this kind and no launch runs under it
    probe_as: str = ""  # the launcher the probe starts a run of it with ("": by the world size)
    probe_many_as: str = ""  # the launcher the probe uses instead for more than one process (python's)
    local_start: LocalStart | None = None  # how the probe starts its worker under it (None: it cannot)
    # axolotl: its flag that names the launcher it starts, and the launchers it may name (the default
    # first); the flags after `--` are that launcher's
    launcher_flag: str = ""
    starts: tuple[str, ...] = ()
    # switches that run its script as an executable, never as `-m` module (deepspeed --no_python)
    no_module_flags: frozenset[str] = frozenset()
    # form "server": `python -m MODULE` forms that start it only with this command word after them
    module_words: Mapping[str, str] = field(default_factory=dict)
    # the flags that name files it reads: the accelerate config (all: --config_file), the hostfile
    accelerate_config_flags: tuple[str, ...] = ("config_file",)
    hostfile_flags: tuple[str, ...] = ()

    @property
    def is_interpreter(self) -> bool:
        """python itself: one process."""
        return self.form == "interpreter"

    def accelerate_config_word(self, args: Mapping[str, _W]) -> _W | None:
        """The command's word that names the accelerate config file it reads."""
        return _first(args, self.accelerate_config_flags)

    def hostfile_word(self, args: Mapping[str, _W]) -> _W | None:
        """The command's word that names the hostfile it reads (deepspeed --hostfile)."""
        return _first(args, self.hostfile_flags)


def _first(args: Mapping[str, _W], flags: tuple[str, ...]) -> _W | None:
    return next((args[f] for f in flags if args.get(f) is not None), None)


# A run whose command names no launcher (a config alone): every capability off.
NO_LAUNCHER = LauncherSpec(name="", summary="no launcher", commands=())
