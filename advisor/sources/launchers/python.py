"""python itself: `python script.py`, `python -m MODULE` (a launcher's module starts that launcher);
one process, which may use several GPUs through DataParallel."""

from __future__ import annotations

from advisor.core.provenance import Value
from advisor.sources.launchers.counting import one_node
from advisor.sources.launchers.protocol import ProcessCount, RunInputs
from advisor.sources.launchers.spec import LauncherSpec, LocalStart, Processes

SPEC = LauncherSpec(
    name="python",
    summary="the Python interpreter",
    commands=(),  # python, python3, python3.11: matched by name in the registry
    form="interpreter",
    processes=Processes(default="one process"),
    probe_many_as="torchrun",  # the probe starts more than one process of a plain script under torchrun
    local_start=LocalStart(),  # the probe's worker: `python -m advisor.pipeline.probe.worker`
)


def processes(run: RunInputs) -> ProcessCount:
    """One process; pinned=False when the HF Trainer's nn.DataParallel takes every visible GPU."""
    n_gpu, pinned = run.data_parallel()
    note = n_gpu.note if n_gpu is not None and n_gpu.note else "plain python starts one process"
    return ProcessCount(Value(1, run.root, "launch", note=note), one_node(), pinned)
