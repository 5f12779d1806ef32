"""What every launcher module provides (pre-commit's `Language`: one module per launcher behind one
protocol, listed in launchers/__init__.py), and what it reads from the run to count its processes.

The launchers sit in the sources layer, below the plan and the facts: a launcher never sees a
RunPlan. facts/world_size.py hands it a `RunInputs`, the run as the launcher needs it (its flags, the
environment, the accelerate config, the GPUs the machine shows), and the launcher answers with a
`ProcessCount`."""

from __future__ import annotations

from typing import Any, Protocol

from advisor.core.document import Location
from advisor.core.provenance import Value
from advisor.core.records import record
from advisor.sources.launchers.spec import LauncherSpec


@record(frozen=True, slots=True)
class ProcessCount:
    """How many processes the launcher starts: per node and on how many nodes. pinned=False when the
    count follows the machine the run lands on (every visible GPU), not a number in the run's files."""

    per_node: Value
    nodes: Value
    pinned: bool = True


@record(frozen=True, slots=True)
class VisibleGpus:
    """The GPUs the run may use, as far as its files say (facts/gpu_visibility.py GpuList)."""

    ids: list[int] | None  # None: not said
    origin: Location | None
    via: str | None = None  # "CUDA_VISIBLE_DEVICES", "gpu_ids", "include", "exclude"


class RunInputs(Protocol):
    """The run, as a launcher's process count reads it (built by facts/world_size.py)."""

    @property
    def root(self) -> Location | None: ...  # the launch script (or config) the run starts from

    @property
    def named(self) -> bool: ...  # the launch names the launcher (False: implied by a config)

    @property
    def visible(self) -> VisibleGpus: ...

    @property
    def has_accelerate_config(self) -> bool: ...

    @property
    def hostfile(self) -> Any: ...  # advisor.sources.hostfile.Hostfile the launch names, or None

    def flag(self, key: str) -> Value | None: ...  # the launcher's flag as the plan holds it

    def env(self, key: str) -> Value | None: ...  # an environment variable of the launch

    def accelerate(self, key: str) -> Value | None: ...  # a key of the accelerate config (and flags)

    def accelerate_origin(self, key: str) -> Location | None: ...

    def count(self, value: Value | None) -> int | None: ...  # a positive whole number, or None

    def count_value(self, value: Value, what: str) -> Value: ...  # unknown unless a positive count

    def resolved(self, key: str, value: Value) -> Value: ...  # `--key $SLURM_NNODES` under #SBATCH

    def counted_at_run_time(self, key: str) -> str | None: ...  # `--key $(nvidia-smi ...)`: why

    def every_visible_gpu(self, reason: str, origin: Location | None) -> tuple[Value, bool]: ...

    def machine_gpus(self) -> int | None: ...  # the GPUs of the machine the settings give

    def gpu_exclusion(self) -> tuple[Value, list[int]] | None: ...  # deepspeed --exclude: flag, ids

    def hostfile_slots(  # advisor.sources.hostfile.active_slots of the hostfile's hosts
        self, include: str, exclude: str, num_nodes: int, num_gpus: int
    ) -> dict[str, list[int]] | str: ...

    def data_parallel(self) -> tuple[Value | None, bool]: ...  # plain python's nn.DataParallel


class Launcher(Protocol):
    """A launcher module: its spec (words, flags, what it implies) and its process count."""

    SPEC: LauncherSpec

    def processes(self, run: RunInputs) -> ProcessCount: ...
