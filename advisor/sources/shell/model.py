"""What the launch-script reader returns: resolved words and launch commands."""

from __future__ import annotations

from advisor.core.document import Span
from advisor.core.records import field, record


@record(frozen=True, slots=True)
class Word:
    """One resolved shell word/value."""

    text: str | None  # the resolved value; None when it cannot be resolved statically
    raw: str  # as written, e.g. "${NUM_GPUS:-4}" or "$(nvidia-smi -L | wc -l)"
    span: Span  # 1-based position of the raw word in the file
    unknown: str | None = None  # why it is unknown


@record(frozen=True, slots=True)
class Workdir:
    """Where a command runs after the script's `cd`, `pushd` and `popd` (a subshell's stay inside it).

    `path` is normalised POSIX text: absolute, or relative to the folder the script is started from
    (`script_dir`: relative to the script's own folder instead, as `cd "$(dirname "$0")"` makes it).
    None when the folder is not known statically (`cd $1`), with the reason."""

    path: str | None
    span: Span  # the `cd` (or `pushd`, `popd`) that made it
    script_dir: bool = False
    reason: str | None = None


@record(slots=True)
class LaunchCommand:
    # "accelerate" | "torchrun" | "deepspeed" | "python" | "llamafactory" | "trl" | "axolotl" | "vllm"
    launcher: str
    span: Span  # where the command starts
    env: dict[str, Word] = field(default_factory=dict)
    launcher_args: dict[str, Word] = field(default_factory=dict)
    script: Word | None = None
    module: bool = False
    subcommand: bool = False  # script is the launcher's command word (llamafactory-cli train), not a file
    script_args: dict[str, Word] = field(default_factory=dict)
    positional: list[Word] = field(default_factory=list)
    workdir: Workdir | None = None  # None: the folder the script is started from


@record(frozen=True, slots=True)
class WrittenFile:
    """A file the script writes by a redirection (`cat <<EOF > ds.json`, `echo ... >> cfg.yaml`) or `tee`:
    it exists for the commands after it even when the repository does not hold it."""

    path: str  # as expanded, relative to `workdir`'s folder
    span: Span  # the redirection operator (or the `tee` word)
    workdir: Workdir | None = None  # where the writing command runs (None: the folder the script starts in)


@record(slots=True)
class LaunchScript:
    commands: list[LaunchCommand] = field(default_factory=list)
    written: list[WrittenFile] = field(default_factory=list)  # in the order the script writes them
    sbatch: dict[str, Word] = field(default_factory=dict)
    variables: dict[str, Word] = field(default_factory=dict)
    # read from a Markdown file's code blocks (advisor/sources/readme_launch.py): documentation of a
    # launch, not a file anyone runs
    documented: bool = False
