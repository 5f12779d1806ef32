"""What would fit: strategies and methods tried with the estimator on the GIVEN machine.

A suggestion is only an option the machine has: ZeRO-3 needs more than one GPU and is tried across
the GPUs the machine has (all its nodes), never an invented 8-GPU box; LoRA and QLoRA are tried with
gradient checkpointing (the cheapest knob, and the way those recipes run). Each option is kept when
its predicted peak is within the card's usable memory.
"""

from __future__ import annotations

from typing import Any

from advisor.core.records import replace

MAX_OPTIONS = 3


def _candidates(setup: Any, machine_gpus: int, bf16: bool = True) -> list[tuple[str, Any]]:
    """The options tried, least intrusive first. `bf16`: the card has bf16 tensor cores
    (topology.bf16_supported); without them a half-precision base is offered in fp16, never bf16, the
    precision GA501 reports as unsupported there."""
    s = replace(setup, metric="nvidia-smi")
    ckpt = {"gradient_checkpointing": True}
    out: list[tuple[str, Any]] = []
    cheap = replace(s, **ckpt)
    if (s.micro_batch or 1) > 1:
        cheap = replace(cheap, micro_batch=1, grad_accum=s.grad_accum * (s.micro_batch or 1))
    if cheap != s:
        label = "gradient checkpointing" + (
            " and micro-batch 1 (more accumulation)" if cheap.micro_batch != s.micro_batch else ""
        )
        out.append((label, cheap))
    sharded = s.strategy in ("zero3", "fsdp")
    # BAdam under ZeRO-3 partitions the active block itself, which is not modelled (advisor/facts/badam.py)
    badam = s.block_optimizer
    if s.method == "full" and machine_gpus > 1 and (not sharded or s.world_size < machine_gpus) and not badam:
        out.append(
            (
                f"ZeRO-3 across the machine's {machine_gpus} GPUs with gradient checkpointing",
                replace(s, strategy="zero3", world_size=machine_gpus, **ckpt),
            )
        )
    # adapters are trained on a base loaded in the half-precision compute dtype (the LoRA/QLoRA recipes'
    # torch_dtype); micro-batch 1 where the run's own micro-batch is larger
    half = s.precision if s.precision in ("bf16", "fp16") else "bf16"
    precision: dict[str, Any] = {}
    if half == "bf16" and not bf16:
        # the card has no bf16 (V100, T4: GA501): fp16 weights and fp16 mixed precision instead
        half = "fp16"
        precision = {"precision": "fp16", "autocast": "fp16" if s.autocast == "bf16" else s.autocast}
    adapters = replace(
        s,
        storage_dtype=half,
        micro_batch=cheap.micro_batch,
        grad_accum=cheap.grad_accum,
        **precision,
        **ckpt,
    )
    tail = f"{half} base{', no bf16 on this card' if precision else ''}, gradient checkpointing" + (
        ", micro-batch 1" if cheap.micro_batch != s.micro_batch else ""
    )
    if s.method == "full":
        lora = replace(adapters, method="lora", lora_r=16, lora_targets=["all-linear"], lora_dropout=0.05)
        out.append((f"LoRA r=16 ({tail})", lora))
        out.append((f"QLoRA (4-bit NF4, {tail})", replace(lora, method="qlora")))
    elif s.method == "lora":
        out.append((f"QLoRA (4-bit NF4, {tail})", replace(adapters, method="qlora")))
    return out


def fitting_options(
    setup: Any, machine: Any, usable: float | None, reference_copy: bool = False
) -> list[str]:
    """Up to MAX_OPTIONS changes, in the order tried (least intrusive first), whose predicted peak per GPU
    fits the machine's card: "QLoRA (4-bit NF4 base) with gradient checkpointing (about 21.3 GiB)"."""
    if machine is None or usable is None:
        return []
    from advisor.facts.peak_memory import peak_of
    from advisor.facts.topology import bf16_supported

    gpus = int(machine.gpus.count or 1) * int(getattr(machine, "nodes", 1) or 1)
    try:
        bf16 = bf16_supported(machine)
    except Exception:  # a machine the catalog cannot place: keep the run's own precision
        bf16 = True
    out: list[str] = []
    for label, trial in _candidates(setup, gpus, bf16):
        try:
            peak = peak_of(trial, reference_copy)
        except Exception:  # an option the estimator cannot price is not offered
            continue
        if peak <= usable:
            out.append(f"{label} (about {peak:.1f} GiB)")
        if len(out) >= MAX_OPTIONS:
            break
    return out
