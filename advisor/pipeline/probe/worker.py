"""The probe itself: one rank of a short, bounded HF Trainer run on synthetic tokens.

Started by the run's launcher (torchrun / accelerate launch / python) as
``python -m advisor.pipeline.probe.worker SPEC.json``; never the user's script. Each rank writes
``rank-<RANK>.json`` into the spec's out_dir; rank 0 also keeps ``progress.json`` current.

Measured per rank:
- samples per optimizer step (a forward pre-hook counts the sequences the model sees between two
  optimizer steps), so the sum over ranks is the effective batch as it really happens;
- seconds per optimizer step after warm-up (from one step end to the next: data loading included),
  tokens per second;
- right after the first optimizer step (gradients still there, optimizer states just created):
  the bytes of parameters, gradients and optimizer states;
- on CUDA: torch.cuda.max_memory_allocated / max_memory_reserved over the whole run.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_OOM = 0, 1, 3


def _write_json(path: Path, data: dict[str, Any]) -> None:
    from advisor.core.safe_write import replace_file  # a random O_EXCL temporary: no planted link followed

    replace_file(path, json.dumps(data, indent=2, default=str), durable=False)


class SyntheticTokens:
    """Deterministic random token ids of one length; labels are the inputs (causal LM)."""

    def __init__(self, n: int, seq_len: int, vocab: int, seed: int = 0) -> None:
        self.n, self.seq_len, self.vocab, self.seed = n, seq_len, vocab, seed

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, Any]:
        import torch

        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        ids = torch.randint(0, self.vocab, (self.seq_len,), generator=g)
        return {"input_ids": ids, "labels": ids.clone()}


def _dtype(name: str) -> Any:
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def _tensor_bytes(t: Any) -> int:
    if hasattr(t, "to_local"):  # DTensor (FSDP2): the local shard
        t = t.to_local()
    return int(t.numel()) * int(t.element_size())


def term_bytes(model: Any, optimizer: Any) -> dict[str, int]:
    """Bytes of unique parameters, their gradients, and the optimizer's per-parameter states."""
    seen: set[int] = set()
    params = grads = trainable = total = 0
    trainable_bytes = 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        n = _tensor_bytes(p)
        params += n
        total += int(p.to_local().numel() if hasattr(p, "to_local") else p.numel())
        if p.requires_grad:
            trainable += int(p.numel())
            trainable_bytes += n
        if p.grad is not None:
            grads += _tensor_bytes(p.grad)
    opt_bytes = scalar_bytes = 0
    inner = getattr(optimizer, "optimizer", optimizer)
    state = getattr(inner, "state", {}) or {}
    for st in state.values():
        if not isinstance(st, dict):
            continue
        for v in st.values():
            if hasattr(v, "element_size"):
                if v.dim() == 0:
                    scalar_bytes += _tensor_bytes(v)
                else:
                    opt_bytes += _tensor_bytes(v)
    return {
        "param_bytes": params,
        "grad_bytes": grads,
        "optimizer_bytes": opt_bytes,
        "optimizer_scalar_bytes": scalar_bytes,
        "trainable_params": trainable,
        "trainable_bytes": trainable_bytes,
        "total_params": total,
    }


def _build_model(spec: dict[str, Any], device: str) -> Any:
    import torch
    import transformers

    dtype = _dtype(spec["weights_dtype"])
    cfg = dict(spec["hf_config"])
    model_type = cfg.pop("model_type")
    for key in ("transformers_version", "_name_or_path", "torch_dtype", "dtype", "quantization_config"):
        cfg.pop(key, None)
    config = transformers.AutoConfig.for_model(model_type, **cfg)
    method = spec["method"]
    if method == "qlora":
        return _build_qlora_model(spec, config, dtype)
    if spec.get("real_weights") and spec.get("model_path"):
        return transformers.AutoModelForCausalLM.from_pretrained(
            spec["model_path"], dtype=dtype, local_files_only=True
        )
    torch.manual_seed(spec.get("seed", 0))
    # random init straight on the GPU (seconds instead of minutes for a 1.5B model on CPU); sharded
    # strategies build on the CPU and let DeepSpeed / FSDP place the shards
    place = (
        torch.device(device)
        if device.startswith("cuda") and spec.get("strategy") in {"single", "ddp"}
        else None
    )
    with place if place is not None else contextlib.nullcontext():
        try:
            return transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
        except TypeError:  # transformers < 4.56 spells it torch_dtype
            return transformers.AutoModelForCausalLM.from_config(config, torch_dtype=dtype)


def _build_qlora_model(spec: dict[str, Any], config: Any, dtype: Any) -> Any:
    """bitsandbytes quantizes at load time: save random weights once, reload them in 4-bit."""

    import torch
    import transformers

    compute = dtype if dtype != torch.float32 else torch.bfloat16
    quant = transformers.BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=compute,
    )
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if spec.get("real_weights") and spec.get("model_path"):
        source = spec["model_path"]
    else:
        source = str(Path(spec["out_dir"]) / "random-weights")
        marker = Path(source) / ".done"
        if local_rank == 0 and not marker.exists():
            torch.manual_seed(spec.get("seed", 0))
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=compute)
            model.save_pretrained(source)
            del model
            from advisor.core.safe_write import replace_file

            replace_file(marker, "ok")
        deadline = time.monotonic() + 600
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        source,
        quantization_config=quant,
        dtype=compute,
        local_files_only=True,
        device_map={"": local_rank},
    )
    from peft import prepare_model_for_kbit_training

    return prepare_model_for_kbit_training(
        model, use_gradient_checkpointing=bool(spec["training_args"].get("gradient_checkpointing"))
    )


def _apply_lora(model: Any, spec: dict[str, Any]) -> tuple[Any, list[str]]:
    from peft import LoraConfig, get_peft_model

    lora = spec["lora"] or {}
    r = int(lora.get("r") or 16)
    config = LoraConfig(
        r=r,
        lora_alpha=lora.get("alpha") or 2 * r,
        lora_dropout=float(lora.get("dropout") or 0.0),
        target_modules=lora.get("targets"),
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, config)
    wrapped = sorted(
        {name.rsplit(".", 2)[-2] for name, _ in model.named_modules() if name.endswith(".lora_A")}
    )
    if spec["training_args"].get("gradient_checkpointing"):
        model.enable_input_require_grads()
    return model, wrapped


def run(spec: dict[str, Any], result: dict[str, Any], started: float) -> None:
    import torch
    import transformers
    from transformers import Trainer, TrainerCallback, TrainingArguments

    out = Path(spec["out_dir"])
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    cuda = spec["device"] == "cuda"
    if cuda and not torch.cuda.is_available():
        raise RuntimeError("the probe was planned for CUDA but this process sees no GPU")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local_rank)
        result["device_name"] = torch.cuda.get_device_name(local_rank)
        result["device_total_memory"] = torch.cuda.get_device_properties(local_rank).total_memory

    model = _build_model(spec, f"cuda:{local_rank}" if cuda else "cpu")
    if spec["method"] in {"lora", "qlora"}:
        model, wrapped = _apply_lora(model, spec)
        result["lora_wrapped"] = wrapped

    targs = dict(spec["training_args"])
    warmup, steps = int(spec["warmup_steps"]), int(spec["steps"])
    micro = int(targs.get("per_device_train_batch_size", 8))
    accum = int(targs.get("gradient_accumulation_steps", 1))
    targs.update(
        output_dir=str(out / "trainer"),
        max_steps=warmup + steps,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        logging_strategy="no",
        disable_tqdm=True,
        remove_unused_columns=False,
        dataloader_drop_last=True,
        push_to_hub=False,
        seed=int(targs.get("seed", spec.get("seed", 0))),
    )
    if not cuda:
        targs["use_cpu"] = True
        if world > 1:
            targs["ddp_backend"] = "gloo"
    args = TrainingArguments(**targs)
    result["resolved"] = {
        "world_size": args.world_size,
        "per_device_train_batch_size": args.per_device_train_batch_size,
        "gradient_accumulation_steps": args.gradient_accumulation_steps,
        "optim": str(getattr(args.optim, "value", args.optim)),
        "bf16": args.bf16,
        "fp16": args.fp16,
        "gradient_checkpointing": args.gradient_checkpointing,
        "dataloader_num_workers": args.dataloader_num_workers,
        "distributed_type": str(getattr(getattr(args, "distributed_state", None), "distributed_type", "")),
        "backend": str(getattr(getattr(args, "distributed_state", None), "backend", "")),
        "weights_dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
    }

    vocab = int(getattr(model.config, "vocab_size", None) or spec["hf_config"].get("vocab_size") or 256)
    n_samples = (warmup + steps) * micro * accum * max(1, args.world_size)
    dataset = SyntheticTokens(n_samples, int(spec["seq_len"]), vocab, seed=int(spec.get("seed", 0)))

    counter = {"samples": 0}

    def count(_module: Any, args_: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids")
        if ids is None and args_:
            ids = args_[0]
        if ids is not None and hasattr(ids, "shape"):
            counter["samples"] += int(ids.shape[0])

    model.register_forward_pre_hook(count, with_kwargs=True)
    deadline = started + float(spec["deadline_s"])
    total = warmup + steps

    class Probe(TrainerCallback):
        def __init__(self) -> None:
            self.step_ends: list[float] = []
            self.samples: list[int] = []
            self.terms: dict[str, int] | None = None
            self.stopped: str | None = None

        def on_optimizer_step(
            self, args: Any, state: Any, control: Any, optimizer: Any = None, **kw: Any
        ) -> None:
            self.samples.append(counter["samples"])
            counter["samples"] = 0
            if self.terms is None:
                if cuda:
                    torch.cuda.synchronize()
                self.terms = term_bytes(model, optimizer)

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if cuda:
                torch.cuda.synchronize()
            now = time.perf_counter()
            self.step_ends.append(now)
            over = time.monotonic() > deadline
            if world > 1 and torch.distributed.is_initialized():
                flag = torch.tensor([1.0 if over else 0.0], device=args.device)
                torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
                over = bool(flag.item() > 0)
            if over and state.global_step < total:
                self.stopped = f"wall-time limit: stopped after {state.global_step} of {total} steps"
                control.should_training_stop = True
            if rank == 0:
                _write_json(out / "progress.json", {"step": state.global_step, "total": total})

    probe = Probe()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    trainer = Trainer(model=model, args=args, train_dataset=dataset, callbacks=[probe])
    t0 = time.perf_counter()
    try:
        trainer.train()
    finally:
        result["train_seconds"] = time.perf_counter() - t0
        result["steps_done"] = len(probe.step_ends)
        result["samples_per_step"] = probe.samples
        result["terms"] = probe.terms
        result["stopped"] = probe.stopped
        if cuda:
            result["max_memory_allocated"] = int(torch.cuda.max_memory_allocated())
            result["max_memory_reserved"] = int(torch.cuda.max_memory_reserved())
    ends = probe.step_ends
    timed = (
        [b - a for a, b in zip(ends[warmup - 1 : -1], ends[warmup:], strict=False)]
        if len(ends) > warmup
        else []
    )
    if not timed and len(ends) >= 2:
        timed = [b - a for a, b in itertools.pairwise(ends)]
        result.setdefault("warnings", []).append("too few steps after warm-up: timed the warm-up steps too")
    result["step_seconds"] = timed
    if timed:
        sps = sum(timed) / len(timed)
        result["seconds_per_step"] = sps
        result["seconds_per_step_median"] = sorted(timed)[len(timed) // 2]
        steady = probe.samples[warmup:] or probe.samples
        per_step = max(set(steady), key=steady.count) if steady else 0
        result["tokens_per_s"] = per_step * int(spec["seq_len"]) / sps if sps > 0 else None
    steady = probe.samples[warmup:] or probe.samples
    result["samples_per_optimizer_step"] = max(set(steady), key=steady.count) if steady else None
    result["transformers"] = transformers.__version__


def main(argv: list[str]) -> int:
    started = time.monotonic()
    if len(argv) != 1:
        print("usage: python -m advisor.pipeline.probe.worker SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    out = Path(spec["out_dir"])
    rank = int(os.environ.get("RANK", "0"))
    result: dict[str, Any] = {
        "rank": rank,
        "local_rank": int(os.environ.get("LOCAL_RANK", "0")),
        "world_size": int(os.environ.get("WORLD_SIZE", "1")),
        "pid": os.getpid(),
        "device": spec["device"],
        "status": "started",
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    code = EXIT_OK
    try:
        import torch

        try:
            run(spec, result, started)
            result["status"] = "stopped" if result.get("stopped") else "ok"
        except torch.OutOfMemoryError as exc:
            result["status"] = "oom"
            result["error"] = str(exc).splitlines()[0] if str(exc) else "CUDA out of memory"
            result["oom_at_step"] = result.get("steps_done", 0) + 1
            code = EXIT_OOM
    except KeyboardInterrupt:
        result["status"] = "interrupted"
        code = EXIT_FAILED
    except BaseException as exc:
        result["status"] = "failed"
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc(limit=8)[-4000:]
        code = EXIT_FAILED
    finally:
        try:
            import resource

            result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        except Exception:
            pass
        result["elapsed_s"] = time.monotonic() - started
        _write_json(out / f"rank-{rank}.json", result)
        _shutdown(code)
    return code


def _shutdown(code: int) -> None:
    """Destroy the process group (without it runs abort at exit now and then)."""
    if "torch" not in sys.modules:
        return
    import torch

    try:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            if code == EXIT_OK:
                torch.distributed.barrier()
            torch.distributed.destroy_process_group()
    except Exception:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
