"""The machine a run lands on, as plain facts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from advisor.core.provenance import Value
from advisor.facts import topology
from advisor.facts.declare import FactNamespace, fact

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan


class HardwareFacts(
    FactNamespace,
    name="hardware",
    doc="The machine descriptor the run is judged on (--hardware, the settings, or the run's own).",
):
    name_ = fact(str, "the descriptor's name", key="name")
    gpu_model = fact(str, "GPU catalog key of the machine's GPUs")
    gpu_name = fact(str, "the GPU's display name")
    count = fact(int, "GPUs per node", unit="GPUs")
    nodes = fact(int, "nodes of the machine", unit="nodes")
    total_gpus = fact(int, "GPUs over all nodes", unit="GPUs")
    memory_gib = fact(float, "memory of one GPU", unit="GiB")
    cpu_cores = fact(int, "CPU cores per node", unit="cores")
    ram_gib = fact(float, "host memory per node", unit="GiB")
    compute_capability = fact(float, "CUDA compute capability (8.0 for A100)")
    bf16 = fact(bool, "the GPU computes in bfloat16")
    tf32 = fact(bool, "TrainingArguments(tf32=True) accepts this GPU (NVIDIA Ampere or newer)")
    fp8 = fact(bool, "the GPU has FP8 matrix cores")
    network = fact(str, "what joins the nodes (e.g. ib-400g)")
    nvlink_all = fact(bool, "every GPU of a node reaches every other over NVLink (NVSwitch)")


def _cc(text: Any) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def hardware_facts(plan: RunPlan) -> HardwareFacts:
    ns = HardwareFacts()
    machine = plan.hardware
    if machine is None:
        return ns
    gpu = machine.gpu
    cc = _cc(gpu.compute_capability)
    facts = {
        "name": machine.name,
        "gpu_model": gpu.id,
        "gpu_name": gpu.display_name,
        "count": machine.gpus.count,
        "nodes": machine.nodes,
        "total_gpus": machine.gpus.count * machine.nodes,
        "memory_gib": machine.memory_gib,
        "cpu_cores": machine.cpu_cores,
        "ram_gib": machine.ram_gib,
        "compute_capability": cc,
        # from the catalog, not from the compute capability: on ROCm torch reports the gfx target
        # (MI250X gfx90a = 9.0) and CDNA2 has bf16 but neither TF32 nor FP8
        "bf16": topology.bf16_supported(gpu),
        # as TrainingArguments(tf32=True) judges it: transformers 5.24 utils/import_utils.py:751
        # (is_torch_tf32_available) says no whenever torch.version.cuda is None, i.e. on every ROCm
        # build, MI300X's TF32 matrix cores included, and training_args.py:1682 then raises
        "tf32": topology.tf32_supported(gpu) and gpu.vendor == "nvidia",
        "fp8": topology.fp8_supported(gpu),
        "network": machine.network,
        "nvlink_all": machine.nvlink == "all",
    }
    for key, value in facts.items():
        ns.set(key, Value(value, None, "hardware", note=f"hardware {machine.name}"))
    return ns
