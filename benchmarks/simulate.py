"""Simulate one training step of a Hugging Face model on fake tensors: the memory estimator's referee.

Issue 21 section 1. Nothing here is imported by `check` or the CLI: it needs torch, transformers and peft
(the torch extra) and it patches library internals.

How (torch 2.13 CPU, transformers 5.24, peft 0.21):
* the model is built on the meta device from its config (the catalog's, a local config.json or a run that
  `gpu-advise check` resolves: --from-check), wrapped with PEFT as the run does, then `to_empty()` inside
  torch._subclasses.fake_tensor.FakeTensorMode: tensors with shapes, dtypes and storages but no data;
  tied weights are re-tied after to_empty (it gives every parameter its own storage);
* fake CUDA tensors do not get through autograd on a CPU-only build (the device guard of the first
  requires_grad op), so the tensors are fake CPU tensors; what differs from a GPU is put back: every
  storage is rounded up to CUDA's 512-byte allocation unit (c10/cuda/CUDACachingAllocator.cpp kMinBlockSize
  / round_size), SDPA stands in for flash-attention (both keep O(s) per head: q, k, v, out, logsumexp);
* a TorchDispatchMode sees every op's outputs; each new storage is counted once and a weakref finalizer
  takes it off when autograd or Python frees it; the phases (forward, loss backward, backward, optimizer
  step) each record their peak;
* one step: `loss = model(input_ids, labels).loss` (the Trainer/TRL loops drop the outputs before backward),
  `loss.backward()`, `optimizer.step()`; the optimizer states are allocated in that first step, so the
  steady-state peak adds them to the forward/backward phases (they are static from step 2 on);
* with gradient checkpointing, Python reference cycles (torch.utils.checkpoint's frames) can keep tensors
  until the cyclic collector runs: the step is simulated with the collector off (the worst case) and with
  `gc.collect()` at every decoder layer call (the best case); both are reported.

What it does not see: kernel workspaces (cuBLAS, flash-attention's own), NCCL buffers, the CUDA context,
bitsandbytes kernels (QLoRA uses a stand-in: the 4-bit storage as uint8 plus absmax, dequantized to the
compute dtype per call, nothing saved for backward but the quantized weight, as bitsandbytes >= 0.43.2
MatMul4Bit), DeepSpeed and FSDP, the caching allocator's reserved figure and long-run fragmentation.
Autocast: the tensors are CPU tensors, so torch.autocast("cpu") is what runs, but with CUDA's cast policy
per op (benchmarks/cuda_autocast.py: CPU's lists run layer_norm, group_norm, pow, softmax ... in bf16 where
CUDA runs them in fp32). 8-bit optimizers (bitsandbytes) are not simulated: unknown.

Fewer layers than the model has can be simulated (--layers A,B): every term is then extrapolated linearly
from depths A and B to the real depth (every per-step quantity here is affine in the layer count for a
homogeneous stack; check it on full-depth cases, benchmarks/simulate_grid.py --check-scaling).

Run:
    python3 benchmarks/simulate.py --model meta-llama/Llama-3.1-8B --method lora --batch 1 --seq 2048 --gc
    python3 benchmarks/simulate.py --from-check path/to/project [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
import weakref
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import cuda_autocast

GIB = 2**30
CUDA_ROUND = 512  # c10/cuda/CUDACachingAllocator.cpp: kMinBlockSize, every block is a multiple of it
_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
PEFT_TYPES = ("lora", "qlora", "dora", "ia3", "loha", "lokr")


@dataclass
class SimRun:
    """One single-GPU training step as the simulation needs it (per device)."""

    config: dict[str, Any]
    method: str = "full"  # full | lora | qlora | dora | ia3 | loha | lokr
    lora_r: int = 16
    lora_targets: list[str] | None = None  # None: PEFT's default for the model type
    lora_dropout: float = 0.05
    storage: str = "bf16"  # the base weights as loaded
    trainable: str | None = None  # adapters' dtype; None: PEFT's autocast_adapter_dtype (fp32)
    autocast: str | None = "bf16"  # None: no autocast
    micro_batch: int = 1
    seq: int = 2048
    gradient_checkpointing: bool = False
    attn: str = "sdpa"  # sdpa (stands in for flash_attention_2) | eager
    optimizer: str = "adamw_torch_fused"  # adamw_torch_fused | adamw_torch (foreach) | adamw_hf | sgd
    layers: int | None = None  # simulate this many decoder layers (None: the model's own)


@dataclass
class SimResult:
    """Bytes per term (CUDA-rounded), per-phase peaks, and what the step cost to simulate."""

    terms: dict[str, float]
    phases: dict[str, float]  # dynamic peak of each phase (above weights + optimizer states)
    peak_first_step: float
    peak_steady: float  # weights + optimizer states + the largest phase
    peak_steady_gc_collect: float | None = None
    phases_gc_collect: dict[str, float] | None = None
    flops: float | None = None
    layers: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


# ---- the model ------------------------------------------------------------------------------------
def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, _DTYPES[name])


def build_config(cfg: dict[str, Any], layers: int | None, attn: str) -> Any:
    import transformers

    c = dict(cfg)
    mt = c.pop("model_type")
    c.pop("torch_dtype", None)
    c.pop("dtype", None)
    c.pop("quantization_config", None)
    config = transformers.AutoConfig.for_model(mt, **c)
    text = getattr(config, "text_config", None) or config
    if layers is not None:
        for key in ("num_hidden_layers", "n_layer", "num_layers"):
            if hasattr(text, key) and isinstance(getattr(text, key), int):
                setattr(text, key, layers)
        if getattr(text, "layer_types", None) is not None:  # gemma2/3, qwen2 sliding patterns
            text.layer_types = list(text.layer_types)[:layers] + [text.layer_types[-1]] * max(
                0, layers - len(text.layer_types)
            )
    config._attn_implementation = attn
    config.use_cache = False
    return config


def depth(cfg: dict[str, Any]) -> int:
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if isinstance(cfg.get(key), int):
            return int(cfg[key])
    raise ValueError("config has no layer count")


class _Linear4bit:
    """QLoRA stand-in factory (bitsandbytes is not simulated): see the module docstring."""

    @staticmethod
    def replace(model: Any, compute: Any, skip: tuple[str, ...] = ("lm_head",)) -> int:
        import torch
        from torch import nn

        class Dequant(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, q: Any, shape: Any) -> Any:
                ctx.q, ctx.shape = q, shape
                w = q.new_empty(shape, dtype=compute)  # the dequantized weight, freed after the call
                return x.to(compute) @ w.t()

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                w = ctx.q.new_empty(ctx.shape, dtype=compute)
                return g @ w, None, None

        class Linear4bit(nn.Module):
            def __init__(self, lin: nn.Linear) -> None:
                super().__init__()
                self.in_features, self.out_features = lin.in_features, lin.out_features
                n = lin.in_features * lin.out_features
                self.weight_q = nn.Parameter(
                    torch.empty((n + 1) // 2, dtype=torch.uint8, device="meta"), requires_grad=False
                )
                self.register_buffer("absmax", torch.empty(n // 64, dtype=torch.float32, device="meta"))
                self.bias = lin.bias
                self.shape = (lin.out_features, lin.in_features)

            def forward(self, x: Any) -> Any:
                out = Dequant.apply(x, self.weight_q, self.shape)
                return out + self.bias if self.bias is not None else out

        count = 0
        for _name, mod in list(model.named_modules()):
            for child_name, child in list(mod.named_children()):
                if isinstance(child, nn.Linear) and child_name not in skip:
                    setattr(mod, child_name, Linear4bit(child))
                    count += 1
        return count


def patch_transformers() -> None:
    """transformers treats a FakeTensor as tracing (utils/import_utils.py:1948 is_tracing ->
    is_fake_tensor): masking_utils.py:280-353 then builds an explicit causal mask instead of letting SDPA
    run is_causal, and sdpa_attention.py:51 use_gqa_in_sdpa (mask None) fails, so the CPU step would
    materialise a mask and repeat_kv copies a GPU run does not. The simulation is not tracing."""
    import transformers.masking_utils as mu

    mu.is_tracing = lambda *_a, **_k: False
    # one sequence per row (padded or a single packed sample): masking_utils.py:761 would read the fake
    # position ids' values to find packed sequences
    mu.find_packed_sequence_indices = lambda *_a, **_k: None
    # CPU dropout is not CUDA's: aten/src/ATen/native/Dropout.cpp uses the fused native_dropout (a bool mask
    # saved for backward) only when is_fused_kernel_acceptable (input.is_cuda()); on CPU it saves a noise
    # tensor in the input's dtype (4 bytes per element for PEFT's fp32 adapter input). Dropout as on CUDA:
    import torch
    import torch.nn.functional as F

    if not getattr(F.dropout, "_sim", False):

        def dropout(x: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
            if not training or p == 0.0:
                return x
            return torch.native_dropout(x, p, True)[0]

        dropout._sim = True  # type: ignore[attr-defined]
        F.dropout = dropout


def build_model(run: SimRun) -> tuple[Any, list[str]]:
    """The model on the meta device, wrapped with PEFT as the run does."""
    import torch
    import transformers

    patch_transformers()

    notes: list[str] = []
    config = build_config(run.config, run.layers, run.attn)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=_torch_dtype(run.storage))
    model.train()
    if run.method == "full":
        if run.gradient_checkpointing:
            model.gradient_checkpointing_enable()
        return model, notes
    import peft

    if run.method == "qlora":
        compute = _torch_dtype(run.autocast or run.storage)
        n = _Linear4bit.replace(model, compute)
        notes.append(f"QLoRA stand-in: {n} Linears as uint8 4-bit storage + fp32 absmax/64 (no bnb kernels)")
    mt = run.config["model_type"]
    targets = run.lora_targets
    if run.method == "ia3":
        pc: Any = peft.IA3Config(task_type="CAUSAL_LM", target_modules=targets, feedforward_modules=[])
    elif run.method == "loha":
        pc = peft.LoHaConfig(task_type="CAUSAL_LM", r=run.lora_r, target_modules=targets)
    elif run.method == "lokr":
        pc = peft.LoKrConfig(task_type="CAUSAL_LM", r=run.lora_r, target_modules=targets)
    else:
        if run.method == "qlora" and targets is not None and "all-linear" in targets:
            targets = sorted(
                {n.split(".")[-1] for n, m in model.named_modules() if type(m).__name__ == "Linear4bit"}
            )
        if targets == ["all-linear"]:
            targets = "all-linear"  # type: ignore[assignment]  # PEFT wants the bare string
        pc = peft.LoraConfig(
            task_type="CAUSAL_LM",
            r=run.lora_r,
            lora_alpha=2 * run.lora_r,
            lora_dropout=run.lora_dropout,
            target_modules=targets,
            use_dora=run.method == "dora",
        )
    if run.method == "qlora":
        _register_4bit_dispatch(peft)
    model = peft.get_peft_model(model, pc, autocast_adapter_dtype=run.trainable is None)
    if run.trainable is not None:
        for p in model.parameters():
            if p.requires_grad:
                p.data = p.data.to(_torch_dtype(run.trainable))
    if run.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()  # what the Trainer does for PEFT models with checkpointing
    notes.append(f"{mt}: PEFT {type(pc).__name__}")
    return model, notes


def _register_4bit_dispatch(peft: Any) -> None:
    """Teach PEFT's LoRA to wrap the stand-in like a Linear (its in/out features are all it reads)."""
    from peft.tuners.lora import layer as lora_layer

    if getattr(lora_layer, "_sim_4bit", False):
        return
    original_dispatch = lora_layer.dispatch_default

    def dispatch(target: Any, adapter_name: str, config: Any, **kwargs: Any) -> Any:
        base = target.get_base_layer() if hasattr(target, "get_base_layer") else target
        if type(base).__name__ == "Linear4bit":
            return lora_layer.Linear(target, adapter_name, config=config, **kwargs)
        return original_dispatch(target, adapter_name, config=config, **kwargs)

    lora_layer.dispatch_default = dispatch
    import peft.tuners.lora.model as lora_model

    lora_model.dispatch_default = dispatch
    lora_layer._sim_4bit = True


# ---- the tracker ----------------------------------------------------------------------------------
def _round(n: int) -> int:
    return max(CUDA_ROUND, -(-n // CUDA_ROUND) * CUDA_ROUND) if n else 0


def make_tracker() -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map_only

    class Tracker(TorchDispatchMode):
        """Live bytes of every storage an op creates, freed by a weakref finalizer; peak per window."""

        def __init__(self) -> None:
            super().__init__()
            self.live = 0
            self.peak = 0
            self.sizes: dict[int, int] = {}
            self.inplace_shapes: set[tuple[int, ...]] = set()  # tied trainable weights (their grads)
            self.params: set[int] = set()  # the parameters' storages
            self.casts: set[int] = set()  # storages an op made from a parameter's: autocast's weight casts
            self.watched: set[int] = set()  # the storages live at the lm_head's input, while they live

        def add(self, t: Any) -> None:
            if t.device.type == "meta":
                return
            st = t.untyped_storage()
            k = id(st)
            if k in self.sizes:
                return
            n = _round(st.nbytes())
            self.sizes[k] = n
            self.live += n
            if self.live > self.peak:
                self.peak = self.live
            weakref.finalize(st, self._free, k)

        def _free(self, k: int) -> None:
            self.live -= self.sizes.pop(k, 0)
            # a freed storage's id can be reused by a new one: it is no longer a cast or a watched storage
            self.casts.discard(k)
            self.watched.discard(k)

        def bytes_of(self, tensors: Any) -> int:
            seen: set[int] = set()
            total = 0
            for t in tensors:
                if t is None:
                    continue
                st = t.untyped_storage()
                if id(st) not in seen:
                    seen.add(id(st))
                    total += _round(st.nbytes())
            return total

        def window(self) -> int:
            """Start a new peak window; returns the live bytes now."""
            self.peak = self.live
            return self.live

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if func is torch.ops.aten.embedding_dense_backward.default:
                # the fake tensor runs torch/_decomp/decompositions.py embedding_dense_backward, which
                # accumulates in fp32 and casts (an extra V x h fp32 + cast); CUDA's kernel
                # (aten/src/ATen/native/cuda/Embedding.cu embedding_dense_backward_cuda) writes grad_weight
                # in the gradient's dtype with per-segment fp32 partial sums (tokens x h)
                g, idx, num_weights = args[0], args[1], args[2]
                partial = g.new_empty((idx.numel(), g.shape[-1]), dtype=torch.float32)
                self.add(partial)
                del partial
                out = g.new_zeros((num_weights, g.shape[-1]))
                self.add(out)
                return out
            if (
                func is torch.ops.aten.add.Tensor
                and self.inplace_shapes
                and isinstance(args[1], torch.Tensor)
                and tuple(args[0].shape) in self.inplace_shapes
                and args[0].shape == args[1].shape
                and args[0].dtype == args[1].dtype
            ):
                # a tied weight's two gradients are summed in autograd's InputBuffer, in place on a GPU
                # (torch/csrc/autograd/input_buffer.cpp can_accumulate_inplace), out of place on a fake
                # tensor (a tensor subclass): sum in place as the GPU does
                return args[0].add_(args[1])
            out = func(*args, **(kwargs or {}))
            tree_map_only(torch.Tensor, self.add, out)
            if (
                func is torch.ops.aten._to_copy.default
                and isinstance(args[0], torch.Tensor)
                and id(args[0].untyped_storage()) in self.params
                and isinstance(out, torch.Tensor)
            ):
                self.casts.add(id(out.untyped_storage()))
            return out

        def live_of(self, keys: set[int], casts: bool) -> int:
            """Live bytes of the storages in keys that are (casts=True) or are not weight casts."""
            return sum(n for k, n in self.sizes.items() if k in keys and (k in self.casts) == casts)

    return Tracker()


def make_optimizer(name: str, params: list[Any]) -> Any:
    import torch

    if name in ("adamw_torch_fused", "adamw_fused"):
        return torch.optim.AdamW(params, lr=1e-5, fused=True)
    if name in ("adamw_torch", "adamw_foreach", "adamw"):
        return torch.optim.AdamW(params, lr=1e-5, foreach=True)
    if name in ("adamw_hf", "adamw_for_loop"):  # a per-parameter loop (transformers' old AdamW)
        return torch.optim.AdamW(params, lr=1e-5, foreach=False, fused=False)
    if name == "sgd":  # HF's optim=sgd: torch SGD without momentum
        return torch.optim.SGD(params, lr=1e-5, momentum=0.0)
    raise SystemExit(f"optimizer {name!r} is not simulated (8-bit / paged / custom states: unknown)")


# ---- one step -------------------------------------------------------------------------------------
def _find_lm_head(model: Any) -> Any:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None:
        raise ValueError("no output embeddings (lm_head): not a causal LM")
    return getattr(head, "base_layer", head)


def _layers(model: Any) -> list[Any]:
    from torch import nn

    best: list[Any] = []
    for mod in model.modules():
        if isinstance(mod, nn.ModuleList) and len(mod) > len(best):
            best = list(mod)
    return best


_MODELS: dict[str, tuple[Any, Any, list[str]]] = {}


def _materialised(run: SimRun) -> tuple[Any, Any, list[str]]:
    """The model as fake CPU tensors, built once per model shape (a grid reuses it across batch, sequence
    length and optimizer)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    key = json.dumps(
        [
            run.config,
            run.method,
            run.lora_r,
            run.lora_targets,
            run.lora_dropout,
            run.storage,
            run.trainable,
            run.autocast,
            run.gradient_checkpointing,
            run.attn,
            run.layers,
        ],
        sort_keys=True,
        default=str,
    )
    if key not in _MODELS:
        if len(_MODELS) > 2:
            _MODELS.clear()
        model, notes = build_model(run)
        fm = FakeTensorMode(allow_non_fake_inputs=True)
        with fm:
            model.to_empty(device="cpu")
        model.tie_weights()  # to_empty gave the tied lm_head its own storage
        inner = model.get_base_model() if hasattr(model, "get_base_model") else model
        inner.tie_weights()
        _MODELS[key] = (model, fm, notes)
        gc.collect()  # the steps run with the cyclic collector off: collect once per model, not per step
    return _MODELS[key]


def _tied(model: Any, shape: tuple[int, ...]) -> bool:
    """True when the input embedding and the output head share a weight of this shape."""
    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    head = getattr(head, "base_layer", head)
    return bool(
        emb is not None
        and head is not None
        and emb.weight is head.weight
        and tuple(emb.weight.shape) == shape
    )


def _collect(*_: Any) -> None:
    gc.collect()  # a forward pre-hook's return value would replace the layer's inputs


Step = tuple[dict[str, float], dict[str, float], float]


def _step(run: SimRun, collect: bool, optimizers: list[str]) -> tuple[list[Step], list[str]]:
    """Per optimizer (terms, phase peaks, first-step peak), and notes, of one simulated step: forward and
    backward once, then each optimizer's first step from the same gradients (its states freed after)."""
    import torch

    model, fm, notes = _materialised(run)
    for p in model.parameters():
        p.grad = None
    tr = make_tracker()
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    for t in [*params, *model.buffers()]:
        tr.add(t)
    tr.params = {id(p.untyped_storage()) for p in params}
    static_keys = set(tr.sizes)
    shapes = [tuple(p.shape) for p in trainable]
    tr.inplace_shapes = {sh for sh in shapes if len(sh) == 2 and shapes.count(sh) == 1 and _tied(model, sh)}
    weights = tr.bytes_of(params)
    buffers = tr.live - weights
    head = _find_lm_head(model)
    marks: dict[str, int] = {}

    def pre_head(_m: Any, args: Any) -> None:
        marks["at_head"] = tr.live
        tr.watched.update(k for k in tr.sizes if k not in static_keys)
        marks["peak_before_head"] = tr.peak
        tr.window()
        x = args[0]
        if x.requires_grad:
            x.register_hook(on_head_grad)

    def on_head_grad(_g: Any) -> None:
        marks["head_peak"] = tr.peak
        tr.window()  # the rest of backward: its own window (a max of two affine figures is not affine)

    hooks = [head.register_forward_pre_hook(pre_head)]
    if collect:
        for layer in _layers(model):
            hooks.append(layer.register_forward_pre_hook(_collect))
    was = gc.isenabled()
    steps: list[tuple[int, int, int]] = []
    gc.disable()
    try:
        # CUDA's autocast lists, not CPU's, for the forward and for checkpointing's recompute in backward
        # (torch/utils/checkpoint.py re-enters the forward's autocast state)
        with cuda_autocast.cuda_policy(), fm, tr:
            ids = torch.zeros(run.micro_batch, run.seq, dtype=torch.long)
            ctx: Any = (
                torch.autocast("cpu", dtype=_torch_dtype(run.autocast))
                if run.autocast
                else torch.autocast("cpu", enabled=False)
            )
            tr.window()
            with ctx:
                loss = model(input_ids=ids, labels=ids).loss
            fwd_peak = max(tr.peak, marks.get("peak_before_head", 0))
            fwd_end = tr.live
            # what the layers left at the head that backward still needs (saved tensors, checkpoint inputs),
            # apart from the weight casts autocast made (alive at the end of the forward: saved for
            # backward; autocast's cache itself is cleared when its context exits, torch/amp/autocast_mode.py
            # __exit__ clear_autocast_cache) and from what was alive at the head only (a frozen lm_head's
            # input, the casts a checkpointed forward made)
            saved_at_head = tr.live_of(tr.watched, casts=False)
            casts_saved = tr.live_of(set(tr.sizes), casts=True)
            casts_at_head = tr.live_of(tr.watched, casts=True)
            tr.window()
            loss.backward()
            del loss
            if collect:
                gc.collect()
            bwd_peak = tr.peak
            grads = tr.bytes_of(p.grad for p in trainable)
            bwd_end = tr.live
            for name in optimizers:
                opt = make_optimizer(name, trainable)
                tr.window()
                opt.step()
                states = tr.bytes_of(
                    v for st in opt.state.values() for v in st.values() if isinstance(v, torch.Tensor)
                )
                steps.append((tr.peak, states, tr.live))
                del opt
                if tr.live > bwd_end:
                    gc.collect()  # the states sit in a reference cycle
    finally:
        for h in hooks:
            h.remove()
        if was:
            gc.enable()
    static = weights + buffers
    at_head = marks.get("at_head", fwd_end)
    out: list[Step] = []
    for step_peak, states, after_step in steps:
        out.append(_figures(locals(), step_peak, states, after_step))
    for p in params:
        p.grad = None
    return out, notes


def _figures(v: dict[str, Any], step_peak: int, states: int, after_step: int) -> Step:
    static, at_head, marks = v["static"], v["at_head"], v["marks"]
    weights, buffers, grads = v["weights"], v["buffers"], v["grads"]
    fwd_peak, fwd_end, bwd_peak, bwd_end = v["fwd_peak"], v["fwd_end"], v["bwd_peak"], v["bwd_end"]
    saved, casts, casts_at_head = v["saved_at_head"], v["casts_saved"], v["casts_at_head"]
    persisting = static + saved + casts  # a cast made after the head (lm_head's) is live at its peak too
    terms = {
        "weights": float(weights),
        "buffers": float(buffers),
        "gradients": float(grads),
        "optimizer states": float(states),
        "optimizer-step temporaries": float(max(0, step_peak - after_step)),
        "activations": float(saved),
        "autocast weight copies": float(casts),
        "alive at the head only": float(max(0, at_head - static - saved - casts_at_head)),
        # the head's and the loss's own working set: its peak above what the layers leave for backward
        "logits + loss": float(max(0, marks.get("head_peak", at_head) - persisting)),
        "saved at end of forward": float(fwd_end - static),
        "left after backward": float(bwd_end - static - grads),
    }
    phases = {
        "forward": float(fwd_peak - static),
        "loss backward": float(marks.get("head_peak", bwd_peak) - static),
        "layers backward": float(bwd_peak - static),
        "optimizer step": float(step_peak - static - states),
    }
    first = float(max(fwd_peak, bwd_peak, marks.get("head_peak", 0), step_peak))
    return terms, phases, first


def _affine(a: float, b: float, la: int, lb: int, lfull: int) -> float:
    return a + (b - a) * (lfull - la) / (lb - la)


def simulate(run: SimRun, depths: tuple[int, int] | None = None, both_gc: bool = True) -> SimResult:
    """Simulate the run; with `depths` (A, B) simulate A and B layers and extrapolate to the real depth."""
    return simulate_each(run, [run.optimizer], depths, both_gc)[run.optimizer]


def simulate_each(
    run: SimRun, optimizers: list[str], depths: tuple[int, int] | None = None, both_gc: bool = True
) -> dict[str, SimResult]:
    """simulate() for each optimizer, sharing the forward and backward."""
    return {o: r for o, r in zip(optimizers, _simulate(run, optimizers, depths, both_gc), strict=True)}


def _simulate(
    run: SimRun, optimizers: list[str], depths: tuple[int, int] | None, both_gc: bool
) -> list[SimResult]:
    t0 = time.perf_counter()
    full = depth(run.config)
    if depths is None or depths[1] >= full:
        runs = [(replace(run, layers=run.layers), None)]
    else:
        runs = [(replace(run, layers=depths[0]), depths[0]), (replace(run, layers=depths[1]), depths[1])]
    per: dict[bool, list[list[Step]]] = {False: [], True: []}
    notes: list[str] = []
    modes = [False, True] if (both_gc and run.gradient_checkpointing) else [False]
    for collect in modes:
        for r, _ in runs:
            steps, notes = _step(r, collect, optimizers)
            per[collect].append(steps)
    results = []
    for i in range(len(optimizers)):
        out = {k: [steps[i] for steps in per[k]] for k in modes}
        results.append(_combine(run, out, modes, runs, depths, full, list(notes), t0))
    return results


def _combine(
    run: SimRun,
    out: dict[bool, list[Step]],
    modes: list[bool],
    runs: list[Any],
    depths: tuple[int, int] | None,
    full: int,
    notes: list[str],
    t0: float,
) -> SimResult:
    if len(runs) == 2:
        la, lb = depths or (0, 0)
        notes.append(f"simulated {la} and {lb} of {full} layers, every figure extrapolated linearly")

        def ext(key: bool) -> tuple[dict[str, float], dict[str, float], float]:
            (ta, pa, fa), (tb, pb, fb) = out[key]
            return (
                {k: _affine(ta[k], tb[k], la, lb, full) for k in ta},
                {k: _affine(pa[k], pb[k], la, lb, full) for k in pa},
                _affine(fa, fb, la, lb, full),
            )

        res = {k: ext(k) for k in modes}
    else:
        res = {k: out[k][0] for k in modes}
    terms, phases, first = res[False]
    steady = terms["weights"] + terms["buffers"] + terms["optimizer states"] + max(phases.values())
    result = SimResult(
        terms=terms, phases=phases, peak_first_step=first, peak_steady=steady, layers=full, notes=notes
    )
    if True in res:
        t2, p2, _ = res[True]
        result.phases_gc_collect = p2
        result.peak_steady_gc_collect = (
            t2["weights"] + t2["buffers"] + t2["optimizer states"] + max(p2.values())
        )
    result.seconds = time.perf_counter() - t0
    return result


# ---- the analytic side, for the same run ----------------------------------------------------------
def analytic(run: SimRun) -> dict[str, float]:
    """The analytic estimate's terms (bytes) for the same run: advisor.estimate.memory.phase_terms."""
    from advisor.estimate import count_params
    from advisor.estimate.memory import TrainingSetup, estimate_memory, phase_terms

    pc = count_params(run.config)
    method = "qlora" if run.method == "qlora" else ("full" if run.method == "full" else "lora")
    setup = TrainingSetup(
        model=pc,
        method=method,  # type: ignore[arg-type]
        lora_r=run.lora_r,
        lora_targets=run.lora_targets,
        lora_dropout=run.lora_dropout,
        micro_batch=run.micro_batch,
        seq_len=run.seq,
        gradient_checkpointing=run.gradient_checkpointing,
        storage_dtype=run.storage,  # type: ignore[arg-type]
        trainable_dtype=run.trainable,  # type: ignore[arg-type]
        autocast=run.autocast or "off",  # type: ignore[arg-type]
        optimizer=run.optimizer,
        attn_implementation=run.attn,  # type: ignore[arg-type]
        prepare_kbit_training=False,
        qlora_double_quant=False,
        metric="allocated",
    )
    pt = phase_terms(setup)
    out: dict[str, float] = {}
    for tm in [*pt.static, *pt.live, *(t for ts in pt.phases.values() for t in ts)]:
        if tm.name not in out or tm.bytes > out[tm.name]:
            out[tm.name] = tm.bytes
    totals = {k: sum(t.bytes for t in ts) for k, ts in pt.phases.items()}
    out["phase: backward start"] = totals["backward start"]
    out["phase: end of backward"] = totals["end of backward"]
    out["phase: optimizer step"] = totals["optimizer step"]
    out["peak allocated"] = estimate_memory(setup).peak_allocated_gib * GIB
    return out


# the analytic term each simulated figure is compared with
PAIRS = (
    ("weights", "weights"),
    ("gradients", "gradients"),
    ("optimizer states", "optimizer states"),
    ("optimizer-step temporaries", "optimizer-step temporaries"),
    ("activations", "activations"),
    ("logits + loss", "logits + loss"),
    ("autocast weight copies", "autocast weight copies"),
)


def compare(sim: SimResult, ana: dict[str, float]) -> dict[str, tuple[float, float]]:
    """{term: (simulated bytes, analytic bytes)} for the terms both model, plus the phases and the peak."""
    out = {s: (sim.terms[s], ana.get(a, 0.0)) for s, a in PAIRS if s in sim.terms}
    # the weights with their buffers: QLoRA's absmax is quantization state; rotary inv_freq is < 1 KiB
    out["weights"] = (sim.terms["weights"] + sim.terms["buffers"], ana.get("weights", 0.0))
    out["backward phase (dynamic)"] = (
        max(sim.phases["forward"], sim.phases["loss backward"], sim.phases["layers backward"]),
        max(ana["phase: backward start"], ana["phase: end of backward"]),
    )
    out["optimizer-step phase (dynamic)"] = (sim.phases["optimizer step"], ana["phase: optimizer step"])
    out["peak allocated"] = (sim.peak_steady, ana["peak allocated"])
    return out


# ---- inputs ---------------------------------------------------------------------------------------
def _catalog_config(name: str) -> dict[str, Any]:
    from advisor.estimate import resolve_model

    p = Path(name)
    if p.is_file() and p.suffix == ".json":
        return dict(json.loads(p.read_text(encoding="utf-8")))
    return dict(resolve_model(name).config)


def run_from_check(path: str) -> tuple[SimRun, list[str]]:
    """The run as `gpu-advise check` resolves it (read-only use of the plan and its estimator inputs)."""
    from advisor.estimate.memory import resolve_setup
    from advisor.facts import run_names
    from advisor.facts.estimates import plan_inputs
    from advisor.pipeline.check import CheckOptions, build_plans
    from advisor.sources.settings import Settings

    settings = Settings()
    plans, _ = build_plans([Path(path)], CheckOptions(settings=settings), settings)
    if not plans:
        raise SystemExit(f"{path}: no training run found")
    names = run_names(plans[0])
    inputs = plan_inputs(plans[0], names)
    if inputs.setup is None or inputs.info is None:
        raise SystemExit(f"{path}: no estimate: {inputs.reason}")
    s = inputs.setup
    r = resolve_setup(s)
    d = r.dtypes
    run = SimRun(
        config=dict(inputs.info.config),
        method=s.method,
        lora_r=r.lora_r or 16,
        lora_targets=sorted(r.targets) if s.method != "full" else None,
        lora_dropout=r.lora_dropout,
        storage=d.storage,
        trainable=None if d.trainable == "fp32" and s.method != "full" else d.trainable,
        autocast=d.autocast,
        micro_batch=r.b,
        seq=r.seq,
        gradient_checkpointing=r.gc,
        attn="eager" if r.attn == "eager" else "sdpa",
        optimizer=r.opt_name,
    )
    notes = [f"from {path}: {plans[0].name}", *r.assumptions]
    if s.strategy != "none" and s.world_size > 1:
        notes.append(
            f"strategy {s.strategy} x{s.world_size} is not simulated: one GPU's step without sharding"
        )
    return run, notes


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="catalog name / hub id / config.json path")
    ap.add_argument(
        "--from-check", metavar="PATH", help="a project folder or config `gpu-advise check` reads"
    )
    ap.add_argument("--method", default="full", choices=["full", *PEFT_TYPES])
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--targets", default=None, help="comma-separated (all-linear); default: PEFT's")
    ap.add_argument("--lora-dropout", type=float, default=0.05)
    ap.add_argument("--storage", default="bf16", choices=list(_DTYPES))
    ap.add_argument("--autocast", default="bf16", choices=[*_DTYPES, "off"])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--gc", action="store_true", help="gradient checkpointing")
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    ap.add_argument("--optimizer", default="adamw_torch_fused")
    ap.add_argument("--layers", default=None, help="A,B: simulate A and B layers and extrapolate")
    ap.add_argument("--json", action="store_true")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = _parse(argv)
    notes: list[str] = []
    if a.from_check:
        run, notes = run_from_check(a.from_check)
    elif a.model:
        run = SimRun(
            config=_catalog_config(a.model),
            method=a.method,
            lora_r=a.lora_r,
            lora_targets=a.targets.split(",") if a.targets else None,
            lora_dropout=a.lora_dropout,
            storage=a.storage,
            autocast=None if a.autocast == "off" else a.autocast,
            micro_batch=a.batch,
            seq=a.seq,
            gradient_checkpointing=a.gc,
            attn=a.attn,
            optimizer=a.optimizer,
        )
    else:
        raise SystemExit("give --model or --from-check")
    depths = tuple(int(x) for x in a.layers.split(",")) if a.layers else None
    sim = simulate(run, depths)  # type: ignore[arg-type]
    sim.notes = notes + sim.notes
    ana = analytic(run)
    cmp_ = compare(sim, ana)
    if a.json:
        run_d = asdict(run)
        print(
            json.dumps({"run": run_d, "simulated": asdict(sim), "analytic": ana, "compare": cmp_}, indent=1)
        )
        return 0
    print(f"{'term':<34} {'simulated':>10} {'analytic':>10}   diff")
    for name, (s, an) in cmp_.items():
        diff = f"{(an - s) / s:+.1%}" if s else "-"
        print(f"{name:<34} {s / GIB:8.3f} G {an / GIB:8.3f} G   {diff}")
    print(f"first-step peak (states allocated in the step) {sim.peak_first_step / GIB:.3f} GiB")
    if sim.peak_steady_gc_collect is not None:
        print(
            f"gradient checkpointing: steady peak {sim.peak_steady / GIB:.3f} GiB with the cyclic collector "
            "off, "
            f"{sim.peak_steady_gc_collect / GIB:.3f} GiB with gc.collect() at every layer call"
        )
    print(
        "phases (dynamic, above weights + states): "
        + ", ".join(f"{k} {v / GIB:.3f} G" for k, v in sim.phases.items())
    )
    for n in sim.notes:
        print(f"  note: {n}")
    print(f"  ({sim.seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
