"""`gpu-advise estimate`, the building half: memory and time for a model id with flags, or for the runs
under PATHS, as plain data (what `--format json` prints). advisor/report/estimate_view.py only renders it.

Nothing here imports torch, transformers or rich (start-up matters: the whole command answers in a few
hundred milliseconds); the run reports go through the check pipeline (build_plans) and the facts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.core.errors import CheckError
from advisor.core.records import record, replace

# GPUs the verdict is shown for when no --hardware is given: one per memory class.
REFERENCE_GPUS = ("RTX-4090", "L40S", "A100-SXM-80GB", "H100-NVL", "H200", "B200")
METHODS = ("full", "lora", "qlora")
# Ways to spread one run, cheapest to most involved.
LAYOUTS: tuple[tuple[str, str, bool], ...] = (
    ("none", "1 GPU", False),
    ("ddp", "DDP", False),
    ("zero2", "ZeRO-2", False),
    ("zero3", "ZeRO-3", False),
    ("zero3", "ZeRO-3 + CPU offload", True),
)
# Counts above this are typos, not setups (the estimator rejects them).
MAX_FLAG_COUNT = 10**12


class EstimateError(CheckError):
    """The estimate cannot be made (exit code 2): unknown model, bad option, unknown hardware."""


@record
class Request:
    """`gpu-advise estimate MODEL` flags."""

    model: str
    method: str = "full"
    batch: int | None = None
    seq: int | None = None
    gpus: int | None = None
    strategy: str | None = None
    offload: bool = False
    hardware: str | None = None
    online: bool = False
    optimizer: str | None = None
    grad_ckpt: bool | None = None
    precision: str | None = None
    tokens: float | None = None


# ---- building ----------------------------------------------------------------------------------
def is_model_path(target: str) -> bool:
    """A local model: a folder holding a config.json with a model_type, or such a config.json itself."""
    import json

    p = Path(target)
    cfg = p / "config.json" if p.is_dir() else p
    if cfg.suffix != ".json" or not cfg.is_file():
        return False
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "model_type" in data


def _load_machine(name: str | None) -> Any:
    if name is None:
        return None
    from advisor.sources.hardware import HardwareError, load_hardware

    try:
        return load_hardware(name)
    except HardwareError as exc:
        raise EstimateError(str(exc), lines=exc.lines) from None


def _resolve(name: str, online: bool) -> tuple[Any, Any]:
    from advisor.estimate import UnknownModelTypeError, catalog_ids, resolve_model

    # a name found nowhere as written is resolved by what it says, and the estimate says so (info.assumption)
    info = resolve_model(name, online=online, from_name=True)
    if info is None:
        hint = (
            "the Hub did not answer either"
            if online
            else "pass --online to fetch its config.json from the Hub"
        )
        raise EstimateError(
            f"unknown model '{name}': not a local folder with config.json, not in the HF cache, "
            f"not among the {len(catalog_ids())} built-in models; {hint}"
        )
    try:
        return info, info.count()
    except UnknownModelTypeError as exc:
        raise EstimateError(f"model '{name}': {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise EstimateError(f"model '{name}': its config.json cannot be counted ({exc})") from None


def _offload_update(strategy: str, offload: bool) -> dict[str, str]:
    if not offload:
        return {"offload_optimizer": "none", "offload_params": "none"}
    return {"offload_optimizer": "cpu", "offload_params": "cpu" if strategy in {"zero3", "fsdp"} else "none"}


def _usable_by_gpu(machine: Any) -> list[tuple[str, float]]:
    if machine is not None:
        return [(machine.gpu.id, float(machine.memory_gib))]
    from advisor.sources.hardware import gpu_catalog

    catalog = gpu_catalog()
    return [(g, float(catalog[g].usable_gib)) for g in REFERENCE_GPUS if g in catalog]


def _comparison(
    setup: Any, n: int, dp: int, machine: Any, near: float, reference_copy: bool
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every method x layout: peak per GPU and where it fits. n: GPUs for the multi-GPU layouts; dp: the
    run's data-parallel size (on one GPU, accumulation grows by dp to keep the effective batch)."""
    from advisor.estimate.memory.setup import fully_trained
    from advisor.facts.estimates import peak_of, verdict_for

    gpus = _usable_by_gpu(machine)
    rows: list[dict[str, Any]] = []
    base = setup
    for method in METHODS:
        for strategy, label, offload in LAYOUTS:
            count = 1 if strategy == "none" else n
            if count == 1 and strategy != "none":
                continue
            update: dict[str, Any] = {
                "method": method,
                "strategy": strategy,
                "world_size": count,
                **_offload_update(strategy, offload),
            }
            if method != base.method:
                update |= {"lora_r": base.lora_r or 16, "lora_targets": base.lora_targets or ["all-linear"]}
            if strategy == "none":
                update["grad_accum"] = base.grad_accum * max(dp, 1)
            trial = replace(base, **update)
            if method == "full":
                trial = fully_trained(trial)  # a partly frozen run's "full fine-tune" row trains everything
            peak = peak_of(trial, reference_copy and method == "full")
            fits_on = [g for g, usable in gpus if verdict_for(peak, usable, near) == "fits"]
            smallest = min(
                ((g, usable) for g, usable in gpus if verdict_for(peak, usable, near) == "fits"),
                key=lambda x: x[1],
                default=None,
            )
            row = {
                "method": method,
                "strategy": strategy,
                "layout": label,
                "gpus": count,
                "offload": offload,
                "peak_gib": round(peak, 1),
                "verdict": verdict_for(peak, gpus[0][1], near) if machine is not None else None,
                "smallest_gpu": smallest[0] if smallest else None,
                "fits_on": fits_on,
                "_cost": count * smallest[1] if smallest else None,
            }
            rows.append(row)
    cheapest: dict[str, Any] = {}
    for method in METHODS:
        fitting = [r for r in rows if r["method"] == method and r["_cost"] is not None]
        if machine is not None:
            fitting = [r for r in fitting if r["gpus"] <= machine.total_gpus]
        if fitting:
            best = min(fitting, key=lambda r: (r["_cost"], rows.index(r)))
            cheapest[method] = {k: v for k, v in best.items() if not k.startswith("_")}
        else:
            cheapest[method] = None
    for r in rows:
        r.pop("_cost")
    return rows, cheapest


def _report(
    *,
    info: Any,
    setup: Any,
    n: int,
    machine: Any,
    near: float,
    reference_copy: bool,
    total_tokens: float | None,
    max_steps: int | None,
    busbw: float | None,
    extra_assumptions: list[str],
    data: Any = None,
    name: str | None = None,
    dtype_sources: dict[str, str] | None = None,
    tf32: bool | None = None,
    fp8: str | None = None,
) -> dict[str, Any]:
    from advisor.facts.estimates import analyse, verdict_for
    from advisor.facts.memory_kinds import memory_figures

    an = analyse(
        setup,
        machine=machine,
        dp=n,
        near_fraction=near,
        reference_copy=reference_copy,
        total_tokens=total_tokens,
        max_steps=max_steps,
        busbw_gbs=busbw,
        compare=False,
        savings=True,
        data=data,
        tf32=tf32,
        fp8=fp8,
    )
    gpus = _usable_by_gpu(machine)
    spread = n if n > 1 else (machine.total_gpus if machine is not None and machine.total_gpus > 1 else 8)
    rows, cheapest = _comparison(setup, spread, n, machine, near, reference_copy)
    te = an.time
    out: dict[str, Any] = {
        "version": 1,
        "run": name,
        "model": {
            "name": info.name,
            "hub_id": info.hub_id,
            "source": info.source,
            "model_type": setup.model.model_type,
        },
        "params": int(setup.model.total),
        "trainable_params": int(an.memory.trainable_params),
        "setup": {
            "method": setup.method,
            "micro_batch": setup.micro_batch,
            "seq_len": setup.seq_len,
            "gpus": n,
            "strategy": setup.strategy,
            "offload_optimizer": setup.offload_optimizer,
            "offload_params": setup.offload_params,
            "precision": setup.precision,
            "gradient_checkpointing": setup.gradient_checkpointing,
            "optimizer": setup.optimizer,
            "lora_r": setup.lora_r,
        },
        "hardware": (
            {
                "name": machine.name,
                "gpu": machine.gpu.id,
                "usable_gib": round(float(machine.memory_gib), 1),
                "gpus": machine.total_gpus,
            }
            if machine is not None
            else None
        ),
        "memory": {
            "metric": "nvidia-smi",
            "peak_gib": round(an.peak, 2),
            "low_gib": round(an.low, 2),
            "high_gib": round(an.high, 2),
            "phase": an.memory.phase,
            "host_gib": round(an.memory.host_gib, 2),
            "paged_gib": round(an.memory.soft_gib, 2),
            # peak_gib is the device figure; the three a trainer or a monitor may report, apart
            **memory_figures(an.allocated, an.reserved, an.peak, an.band, 2, growth=an.memory.growth_gib),
        },
        "dtypes": dtype_rows(an.memory.dtypes, dtype_sources or {}),
        "breakdown": an.items,
        "verdict": an.verdict,
        "verdicts": [
            {"gpu": g, "usable_gib": round(usable, 1), "verdict": verdict_for(an.peak, usable, near)}
            for g, usable in gpus
        ],
        "what_if": [{"change": label, "saves_gib": gib} for label, gib in an.savings],
        "comparison": rows,
        "cheapest": cheapest,
        "time": None,
        "time_reason": an.time_reason if te is None else None,
        "assumptions": list(dict.fromkeys([*extra_assumptions, *an.assumptions])),
    }
    if te is not None:
        out["time"] = {
            "step_time_s": round(te.step_time_s, 3),
            "tokens_per_s": round(te.tokens_per_s),
            "real_tokens_known": te.real_tokens_known,  # False: tokens_per_s counts samples at max_length
            "not_timed": list(te.not_timed),  # what the step time leaves out, each with why
            "tokens_per_s_single_gpu": round(te.tokens_per_s_single_gpu),
            "scaling_efficiency": round(te.scaling_efficiency, 3),
            "comm_s": round(te.comm_s, 3),  # collectives per optimizer step, before overlap
            "exposed_comm_s": round(te.exposed_comm_s, 3),  # what compute does not hide
            "mfu": round(te.mfu, 3),
            "total_tokens": te.total_tokens,
            "hours_single_gpu": round(te.hours_single_gpu, 3) if te.hours_single_gpu is not None else None,
            "hours": round(te.hours_n_gpus, 3) if te.hours_n_gpus is not None else None,
        }
    return out


DTYPE_ROWS = (
    ("storage", "weights"),
    ("trainable", "trainable"),
    ("compute", "compute"),
    ("optimizer", "optimizer"),
)


def dtype_rows(resolved: dict[str, str], sources: dict[str, str]) -> list[dict[str, str]]:
    """The storage, trainable, compute and optimizer dtypes the estimate assumed, and where each is from."""
    return [
        {"what": label, "dtype": resolved[key], "source": sources.get(key, "assumed (no file sets it)")}
        for key, label in DTYPE_ROWS
        if key in resolved
    ]


def build_model_report(req: Request) -> dict[str, Any]:
    from advisor.estimate import TrainingSetup
    from advisor.facts.estimates import NEAR_FRACTION_DEFAULT

    machine = _load_machine(req.hardware)
    info, pc = _resolve(req.model, req.online)
    total = machine.total_gpus if machine is not None else None
    n = req.gpus if req.gpus is not None else (total or 1)
    if n < 1:
        raise EstimateError(f"--gpus {n}: give at least 1")
    if total is not None and n > total:
        raise EstimateError(f"--gpus {n}: {machine.name} has {total} GPU{'s' if total != 1 else ''}")
    strategy = req.strategy or ("ddp" if n > 1 else "none")
    if req.batch is not None and req.batch < 1:
        raise EstimateError(f"--batch {req.batch}: give at least 1")
    if req.seq is not None and req.seq < 1:
        raise EstimateError(f"--seq {req.seq}: give at least 1")
    if req.optimizer is not None:
        from advisor.estimate.memory import has_optimizer_profile

        if not has_optimizer_profile(req.optimizer):
            raise EstimateError(f"--optim {req.optimizer}: no memory profile for this optimizer")
    for flag, value in (("--batch", req.batch), ("--seq", req.seq), ("--gpus", req.gpus)):
        if value is not None and value > MAX_FLAG_COUNT:
            raise EstimateError(f"{flag} {value}: at most {MAX_FLAG_COUNT:,}")
    setup = TrainingSetup(
        model=pc,
        method=req.method,  # type: ignore[arg-type]
        micro_batch=req.batch,
        seq_len=req.seq,
        gradient_checkpointing=req.grad_ckpt,
        precision=req.precision,  # type: ignore[arg-type]
        amp=False if req.precision in {"bf16", "fp16"} else None,
        optimizer=req.optimizer,
        strategy=strategy if n > 1 or strategy != "ddp" else "none",  # type: ignore[arg-type]
        world_size=n,
        gpu_memory_gib=float(machine.memory_gib) if machine is not None else None,
        **_offload_update(strategy, req.offload),  # type: ignore[arg-type]
    )
    busbw = None
    if machine is not None and n > 1:
        from advisor.facts import topology

        ids = list(range(n))
        busbw = topology.slowest_link_busbw_gbs(machine, ids)
    extra = [info.assumption] if info.assumption else []
    extra += pc.caveats  # a term the count cannot size (a hybrid's mixer layers, a vision tower)
    if req.precision in {"bf16", "fp16"}:
        extra.append(f"model loaded in {req.precision} (torch_dtype), no fp32 master weights")
    return _report(
        info=info,
        setup=setup,
        n=n,
        machine=machine,
        near=NEAR_FRACTION_DEFAULT,
        reference_copy=False,
        total_tokens=req.tokens,
        max_steps=None,
        busbw=busbw,
        extra_assumptions=extra,
        dtype_sources=(
            {
                "storage": f"--precision {req.precision}: loaded in {req.precision}",
                "compute": f"--precision {req.precision}",
                "optimizer": "follows the trainable parameters' dtype",
            }
            if req.precision
            else {}
        ),
    )


def build_run_reports(
    paths: list[Path], hardware: str | None, online: bool, model: str | None = None
) -> list[dict[str, Any]]:
    """One report per run under `paths`; `model` (--model) names the model every run trains, over its
    settings entry and its files (advisor.facts.model_naming)."""
    from advisor.core.provenance import Value
    from advisor.facts import run_names
    from advisor.facts.estimates import fp8_training, matmul_tf32, plan_inputs
    from advisor.pipeline.check import CheckError, CheckOptions, build_plans, resolve_settings
    from advisor.sources.settings import SettingsError

    options = CheckOptions(hardware=hardware, online=online)
    try:
        settings = resolve_settings(paths, options)
        plans, _ = build_plans(paths, options, settings)
    except (CheckError, SettingsError) as exc:
        raise EstimateError(str(exc)) from None
    reports = []
    for plan in plans:
        if model is not None:
            plan.model.set("name", Value(model, None, "cli", note="--model"))
        names = run_names(plan)
        inputs = plan_inputs(plan, names)
        if inputs.setup is None:
            reports.append({"version": 1, "run": plan.name, "unknown": inputs.reason})
            continue
        reports.append(
            _report(
                info=inputs.info,
                setup=inputs.setup,
                n=inputs.dp,
                machine=inputs.machine,
                near=inputs.near_fraction,
                reference_copy=inputs.reference_copy,
                total_tokens=inputs.total_tokens,
                max_steps=inputs.max_steps,
                busbw=inputs.busbw_gbs,
                extra_assumptions=inputs.assumptions,
                data=inputs.data_length,
                name=plan.name,
                dtype_sources=inputs.dtypes.sources() if inputs.dtypes is not None else None,
                tf32=matmul_tf32(plan),
                fp8=fp8_training(plan),
            )
        )
    return reports
