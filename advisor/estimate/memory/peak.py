"""Phase-aware peak GPU memory per device for a training setup (memory-model.md section 6).

    peak_allocated = static terms + max over phases (the terms live in it) + every-phase buffers
    peak_reserved  = peak_allocated + ALLOCATOR_FRAG * (the churning part: everything but static terms)
    peak_smi       = peak_reserved + CUDA context (+ NCCL for multi-GPU) + paged optimizer state

backward start   saved activations + the larger of the logits/loss buffers and one layer's working set
                 (its gradient temporaries, recompute, dequant buffer) plus the logits a loop of its own
                 keeps (+ gradients when they persist: gradient accumulation, zero_grad(set_to_none=False))
                 + autocast weight copies
end of backward  all gradients + one layer's working set (+ a tied embedding's gradient) (+ kept logits)
optimizer step   gradients + optimizer temporaries (+ DeepSpeed's fp32 gradient partition) (+ kept logits)
"""

from __future__ import annotations

from typing import Literal

from advisor.core.records import record, replace
from advisor.estimate import constants as K
from advisor.estimate.memory import terms
from advisor.estimate.memory.activations import adapter_call_peak
from advisor.estimate.memory.optimizers import optimizer_profile
from advisor.estimate.memory.packed import PACKED
from advisor.estimate.memory.resolve import ResolvedSetup, resolve_setup
from advisor.estimate.memory.setup import MemoryEstimate, MemoryItem, Phase, Term, TrainingSetup
from advisor.estimate.memory.zero12 import zero12_buffers

__all__ = ["PhaseTerms", "estimate_memory", "phase_terms", "what_if"]

_PHASE_LABELS = {
    terms.VISION_FORWARD: "vision tower forward",
    terms.BACKWARD: "backward start (activations + logits)",
    terms.END: "end of backward (all gradients)",
    terms.STEP: "optimizer step",
}


@record(frozen=True, slots=True)
class PhaseTerms:
    """Every term of one setup, grouped by when it is live."""

    resolved: ResolvedSetup
    static: list[Term]  # allocated once: weights, optimizer states, DDP buckets
    live: list[Term]  # distributed buffers that churn in every phase
    phases: dict[Phase, list[Term]]  # the terms of backward start, end of backward, optimizer step
    trainable: int
    host: float  # bytes offloaded to CPU RAM / NVMe
    soft: float  # paged optimizer state (CUDA unified memory)
    # reserved, not allocated: the freed logits/loss blocks the caching allocator still holds while the
    # last checkpointed layer is recomputed (see estimate_memory)
    held_after_free: float = 0.0


def phase_terms(setup: TrainingSetup) -> PhaseTerms:
    """Resolve the setup and compute each memory term with the phases it is live in."""
    r = resolve_setup(setup)
    s = setup
    train = terms.trainables(r)
    shards = terms.placement(r)
    weights, host = terms.weights(r, train, shards)
    g, head_grad, grad_note = terms.gradients(r, train, shards)
    opt = terms.optimizer_states(r, train, shards, g)
    host += opt.host
    if opt.grads_offloaded:
        g = 0.0  # FSDP moves the shards; DeepSpeed reduces straight into the fp32 CPU partition
    act = terms.activations(r)
    grads_persist = (s.grad_accum > 1 or not s.zero_grad_set_to_none) and not s.optimizer_in_backward
    vt = None
    if s.vision is not None:
        # the image tower and projector (advisor/estimate/memory/vision.py); the projector's gradients go
        # through the same DDP / ZeRO buckets and optimizer step as the language model's
        from advisor.estimate.memory.vision import vision_terms  # LLaVA-style runs only

        vt = vision_terms(
            r,
            shards.n if shards.weights else 1,
            shards.n if shards.grads else 1,
            shards.n if shards.optimizer else 1,
        )
    bucketed = replace(train, count=train.count + vt.trainable) if vt is not None else train
    ddp_buckets, live = terms.distributed_buffers(r, bucketed, shards)
    step = terms.step_temporaries(r, bucketed, shards)
    zero12 = zero12_buffers(r, bucketed.count, bucketed.grad_bytes, shards.n if shards.optimizer else 1)
    if zero12.step_flat_copy:
        step = replace(
            step, bytes=step.bytes + zero12.step_flat_copy, note=step.note + " + the flattened 16-bit copy"
        )
    logits = terms.logits(r, head_grad, grads_persist)
    kept = terms.kept_logits(r)
    # one layer's working set: its gradient temporaries, its recompute under checkpointing, a quantized
    # Linear's dequant buffer. The loss backward frees the logits/loss buffers before it runs when the loop
    # has dropped the model outputs (HF Trainer/TRL compute_loss returns the loss only: transformers 5.24
    # trainer.py:2172/2217, 4.44 trainer.py:3363/3388; torchtune `del logits`), as benchmarks/simulate.py
    # measures: the larger of the two, not their sum. A loop that keeps `outputs` holds its logits beside
    # the layer's working set, at the end of backward and through the optimizer step.
    dequant = terms.dequant_buffer(r)
    bnb = terms.bnb_input_note(r)
    if bnb is not None:
        r.assumptions.append(bnb)
    # bitsandbytes before 0.43.2 (pinned): each 4-bit Linear's input saved, in the recomputed layer only
    # under reentrant checkpointing, in every layer otherwise (terms.bnb_recomputed_only)
    bnb_in = terms.bnb_kept_inputs(r) if s.bnb_keeps_input else 0.0
    # the backward working set, or the (re)computed forward's costliest adapter / 4-bit Linear call
    # (activations.adapter_call_peak), whichever is larger: they are not live at the same time. A bnb 4-bit
    # Linear's dequantized weight lives for its own backward, beside its input's and its output's gradients,
    # not beside the other temporaries (MatMul4Bit.backward `matmul(grad_output, dequantize_4bit(B).t())`)
    nf4 = s.method == "qlora" and r.dtypes.quant not in PACKED
    if nf4 and dequant.bytes:
        largest = max(r.pc.linears, key=lambda lin: lin.d_in * lin.d_out)
        bwd_work = max(act.work.bytes, dequant.bytes + r.cb * (largest.d_in + largest.d_out) * r.tokens)
    else:
        bwd_work = act.work.bytes + dequant.bytes
    call = adapter_call_peak(r, quantized=nf4 and r.hf and r.dtypes.quant != "int8")
    bnb_one = terms.bnb_recomputed_only(r)
    layer_work = act.last_layer + (bnb_in if bnb_one else 0.0) + max(bwd_work, call)
    held = min(logits.bytes, layer_work + kept.bytes)  # what the sum counts beyond the larger of the two
    beyond = Term(
        act.work.name,
        max(0.0, layer_work + kept.bytes - logits.bytes),
        act.work.phases,
        "one layer's gradient temporaries"
        + (" + its recompute" if act.last_layer else "")
        + (f" + the {dequant.name}" if dequant.bytes else "")
        + (" + its 4-bit Linear inputs" if bnb_in and bnb_one else "")
        + (" + the kept logits" if kept.bytes else "")
        + " beyond the logits/loss buffers, freed before it",
    )
    backward = [
        act.saved,
        logits,
        beyond,
        Term(
            "gradients",
            g if grads_persist else 0.0,
            (terms.BACKWARD,),
            grad_note + "; kept across micro-batches",
        ),
        terms.autocast_copies(r, shards),
        terms.packed_weights_saved(r),
        Term(
            "4-bit Linear inputs",
            0.0 if bnb_one else bnb_in * r.pc.layers,
            (terms.BACKWARD,),
            "bitsandbytes < 0.43.2 keeps every 4-bit Linear's input for backward (PR #1270)",
        ),
        *zero12.during_backward,
    ]
    grads = Term("gradients", g, (terms.END, terms.STEP), grad_note)
    # a tied embedding's gradient is formed last, as a new V x h tensor beside the lm_head's already
    # accumulated one, and then added in place (aten embedding_dense_backward_cuda allocates grad_weight;
    # torch/csrc/autograd/input_buffer.cpp accumulates in place): by then the layers' temporaries are gone
    pc = r.pc
    tied = pc.embedding * train.grad_bytes if (r.full and pc.tied and not s.optimizer_in_backward) else 0.0
    if r.partly_frozen:
        tied = 0.0  # partly frozen: the embedding is frozen
    # The first decoder layer's recompute and working set peak before its own weight gradients exist and
    # before the embeddings' (both formed after it), so they sit on the gradients of the layers above only
    # (terms.late_gradients); at the very end it is all gradients and the embedding's backward.
    bottom = layer_work + (act.layer_input if r.gc else act.one_layer)
    work_end = max(0.0, bottom - terms.late_gradients(r, train, shards, g, grads_persist))
    end = [
        grads,
        Term(
            "last layer recompute + backward working set",
            work_end,
            (terms.END,),
            "the first layer's saved tensors and working set beyond the gradients formed after it",
        ),
        Term(
            "tied embedding gradient",
            max(0.0, tied - work_end),
            (terms.END,),
            "the embedding's V x h gradient before it is added to the lm_head's (beyond layer temporaries)",
        ),
        kept,
        *zero12.during_backward,
    ]
    phases: dict[Phase, list[Term]] = {
        terms.BACKWARD: backward,
        terms.END: end,
        terms.STEP: [grads, step, kept],
    }
    static = [weights, opt.term, ddp_buckets]
    trainable = train.count
    if vt is not None:
        trainable += vt.trainable
        static.append(vt.weights)
        if opt.grads_offloaded:
            host += vt.optimizer.bytes + vt.gradients
            static.append(replace(vt.optimizer, bytes=0.0, note=vt.optimizer.note + "; offloaded"))
        else:
            static.append(vt.optimizer)
        pg = 0.0 if opt.grads_offloaded else vt.gradients
        proj_grads = Term("projector gradients", pg, (terms.END, terms.STEP), "the projector's gradients")
        phases[terms.BACKWARD].append(vt.saved)
        if grads_persist:
            phases[terms.BACKWARD].append(replace(proj_grads, note="kept across micro-batches"))
        phases[terms.END].append(proj_grads)
        phases[terms.STEP].append(proj_grads)
        kept_grads = (g + pg) if grads_persist else 0.0
        phases[terms.VISION_FORWARD] = [
            vt.forward,
            Term("gradients", kept_grads, (terms.VISION_FORWARD,), "kept across micro-batches"),
        ]
    return PhaseTerms(r, static, [live], phases, trainable, host, opt.soft, held)


_ALWAYS_SHOWN = {
    "weights",
    "activations",
    "logits + loss",
    "backward working set",
    "last layer recompute + backward working set",
    "optimizer-step temporaries",
}


def _shown(tm: Term, phase: str, soft: float) -> bool:
    """A breakdown row for every term with bytes, and for the terms that define the phase even at 0."""
    if tm.bytes or tm.name in _ALWAYS_SHOWN:
        return True
    if tm.name == "optimizer states":
        return bool(soft)
    return tm.name == "gradients" and phase != terms.BACKWARD


def _dtype_summary(r: ResolvedSetup) -> dict[str, str]:
    out = r.dtypes.as_dict()
    if not r.opt.follows_param_dtype:
        out["optimizer"] = r.opt.label + (" on an fp32 master copy" if r.dtypes.master else "")
    return out


def _allocator_growth(pt: PhaseTerms, assumptions: list[str]) -> float:
    """Reserved memory the caching allocator adds when batches change shape (issue 21 section 2).

    With batches padded to their longest (TRL's and HF's collators) or unpadded batch-1 samples, each new
    longest batch asks for larger logits/loss and layer blocks than any cached free block; the allocator
    maps new segments and returns cached ones only when cudaMalloc fails (c10/cuda/CUDACachingAllocator.cpp
    header comment, lines 58-64 at pytorch@001074d; its Note [Expandable Segments] describes this growth),
    so reserved memory exceeds the live set by up to one more copy of the largest transient working set per
    new longest batch. How many there are depends on the order and spread of the lengths, which a config
    does not give (in random order about ln n + 0.58 of n batches set a new longest), and on the exact op
    sequence: a replay of one simulated step's allocations (today's Qwen2-7B LoRA, 4 layers, checkpointed)
    through a model of that allocator (benchmarks/allocator_replay.py) over 1000 lognormal lengths up to
    4096 grew reserved memory by 2.7 to 4.5 times the step's working set across four shuffles. So the
    figure above the live set is unknown, not estimated: the point estimate stays the live set, the band's
    upper part counts one copy, the note says the rest.
    """
    s = pt.resolved.s
    if s.fixed_length is not False:
        return 0.0
    if s.expandable_segments:
        assumptions.append(
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: a longer batch extends the cached segments in "
            "place, so reserved memory stays near the live set on unpadded batches (PyTorch notes/cuda.rst)"
        )
        return 0.0
    transient = max(
        (tm.bytes for ts in pt.phases.values() for tm in ts if tm.name in _TRANSIENT),
        default=0.0,
    )
    if transient <= 0:
        return 0.0
    emptied = (
        f"; torch_empty_cache_steps {s.empty_cache_steps} returns the cached blocks every "
        f"{s.empty_cache_steps} steps, so it does not accumulate over the run"
        if s.empty_cache_steps
        else ""
    )
    assumptions.append(
        "batches are not padded to one length: reserved memory above the live set is unknown. Each new "
        "longest batch needs larger logits/loss blocks than the caching allocator holds, and it keeps the "
        f"old segments (pytorch#96995): up to {transient / K.GIB:.2f} GiB more per new longest batch (about "
        "ln n of n batches in random order), how many depends on the order and spread of the lengths; the "
        "band's upper part counts one. Most of it is given back before an OOM: on a failed cudaMalloc the "
        f"allocator frees its unsplit cached segments and retries (split ones stay){emptied}; "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True avoids it"
    )
    return transient


# the terms that are allocated and freed within every step and scale with the batch's tokens
_TRANSIENT = ("logits + loss", "backward working set", "last layer recompute + backward working set")


def estimate_memory(setup: TrainingSetup) -> MemoryEstimate:
    pt = phase_terms(setup)
    s, r = setup, pt.resolved
    static_terms, live_terms, phases = pt.static, pt.live, pt.phases
    A = r.assumptions
    soft = pt.soft
    totals = {name: sum(tm.bytes for tm in ts) for name, ts in phases.items()}
    phase = max(totals, key=lambda k: totals[k])
    dyn = totals[phase]
    static = sum(tm.bytes for tm in static_terms)
    live = sum(tm.bytes for tm in live_terms)
    alloc = static + dyn + live
    frag = K.ALLOCATOR_FRAG * (dyn + live)
    # The allocated peak at backward start is the larger of the logits/loss buffers and the recomputed
    # layer (the loss backward frees the first before the second runs: benchmarks/simulate.py). The
    # figures users compare with are mostly reserved or nvidia-smi ones, and those measured peaks follow the
    # sum: the caching allocator keeps the freed blocks cached (they go back to the driver only on
    # empty_cache) and the layer's tensors, of other sizes, are mostly new segments. On the 71 calibration
    # rows and on the 141 held-out memory rows of sources never calibrated on, holding them in reserved
    # memory gives median |error| 9.1 % / 20.5 % against 12.2 % / 22.2 % without (issue 21 notes).
    held = pt.held_after_free if phase == terms.BACKWARD else 0.0
    reserved = alloc + frag + held
    ctx = (s.cuda_context_gib if s.cuda_context_gib is not None else K.CUDA_CONTEXT_GIB) * K.GIB
    nccl = K.NCCL_GIB * K.GIB if (s.world_size > 1 and s.strategy != "none") else 0.0
    smi = reserved + ctx + nccl + soft
    if s.cuda_context_gib is None and s.metric == "nvidia-smi":
        A.append(
            f"CUDA context assumed {K.CUDA_CONTEXT_GIB} GiB (lazy-loading CUDA >= 11.7; older stacks ~1.3)"
        )

    gi = K.GIB
    shown = [tm for tm in (*static_terms, *phases[phase], *live_terms) if _shown(tm, phase, soft)]
    items = [MemoryItem(name=tm.name, gib=tm.bytes / gi, note=tm.note) for tm in shown]
    if s.metric in ("reserved", "nvidia-smi") and held:
        items.append(
            MemoryItem(
                name="freed logits still reserved",
                gib=held / gi,
                note="the caching allocator holds the logits/loss blocks while the last layer is recomputed",
            )
        )
    if s.metric in ("reserved", "nvidia-smi"):
        items.append(
            MemoryItem(
                name="allocator overhead",
                gib=frag / gi,
                note=f"reserved - allocated ~ {K.ALLOCATOR_FRAG:.0%} of the churning memory",
            )
        )
    if s.metric == "nvidia-smi":
        items.append(MemoryItem(name="CUDA context" + (" + NCCL" if nccl else ""), gib=(ctx + nccl) / gi))
        if soft:
            items.append(
                MemoryItem(
                    name="paged optimizer states",
                    gib=soft / gi,
                    note="unified memory, resident while it fits",
                )
            )

    peak = {"allocated": alloc, "reserved": reserved, "nvidia-smi": smi}[s.metric] / gi
    band = K.BAND_BASE
    if s.method == "qlora" or (s.strategy in ("fsdp", "fsdp_grad_op", "zero2", "zero3") and r.n > 1):
        band = K.BAND_SHARDED_OR_QUANT
    growth = _allocator_growth(pt, A)  # apart from the band: memory_figures(growth=) adds it to reserved
    fits: bool | None = None
    verdict: Literal["fits", "borderline", "oom"] | None = None
    if s.gpu_memory_gib is not None:
        need = smi / gi
        fits = need <= s.gpu_memory_gib
        if need > s.gpu_memory_gib * (1 + band):
            verdict = "oom"
        elif need < s.gpu_memory_gib * (1 - band):
            verdict = "fits"
        else:
            verdict = "borderline"
    return MemoryEstimate(
        items=items,
        peak_gib=peak,
        low_gib=peak * (1 - band),
        high_gib=peak * (1 + band),
        metric=s.metric,
        peak_allocated_gib=alloc / gi,
        peak_reserved_gib=reserved / gi,
        peak_smi_gib=smi / gi,
        phase=_PHASE_LABELS[phase],
        phases_gib={_PHASE_LABELS[k]: v / gi for k, v in totals.items()},
        host_gib=pt.host / gi,
        soft_gib=soft / gi,
        growth_gib=growth / gi,
        trainable_params=pt.trainable,
        dtypes=_dtype_summary(r),
        fits=fits,
        verdict=verdict,
        assumptions=A,
    )


def what_if(setup: TrainingSetup) -> list[tuple[str, float]]:
    """The biggest single knobs and the GiB each saves at the peak (nvidia-smi metric), largest first."""
    base = estimate_memory(replace(setup, metric="nvidia-smi")).peak_smi_gib
    trials: list[tuple[str, TrainingSetup]] = []
    s = setup
    if not s.gradient_checkpointing:
        trials.append(("enable gradient checkpointing", replace(s, gradient_checkpointing=True)))
    if (s.micro_batch or 1) > 1:
        trials.append(
            (
                f"micro-batch 1 (x{s.micro_batch} gradient accumulation keeps the effective batch)",
                replace(s, micro_batch=1, grad_accum=s.grad_accum * (s.micro_batch or 1)),
            )
        )
    opt = optimizer_profile(s.optimizer or "adamw_torch_fused")
    if opt is not None and opt.states is None and opt.mult >= 2:
        how = "optim=adamw_bnb_8bit"
        if (s.optimizer or "").startswith("deepspeed_"):  # the Trainer's optim is ignored beside the block
            how += " and no optimizer block in the DeepSpeed config"
        trials.append((f"8-bit AdamW ({how})", replace(s, optimizer="adamw_8bit")))
    if s.task == "causal_lm" and s.loss == "standard" and not s.liger_kernel:
        trials.append(("fused linear cross-entropy (use_liger_kernel=True)", replace(s, liger_kernel=True)))
    # BAdam under ZeRO-3 partitions its active block itself, which is not modelled (advisor/facts/badam.py)
    if s.method == "full" and s.strategy not in ("zero3", "fsdp") and not s.block_optimizer:
        n = s.world_size if s.world_size > 1 else 8
        trials.append((f"ZeRO-3 across {n} GPUs", replace(s, strategy="zero3", world_size=n)))
    if s.method == "full":
        trials.append(
            (
                "LoRA r=16 on all linear layers",
                replace(s, method="lora", lora_r=16, lora_targets=["all-linear"], lora_dropout=0.05),
            )
        )
    if s.method == "lora":
        trials.append(("QLoRA (4-bit NF4 base)", replace(s, method="qlora")))
    out = []
    for label, trial in trials:
        saved = base - estimate_memory(replace(trial, metric="nvidia-smi")).peak_smi_gib
        if saved > 0.05:
            out.append((label, round(saved, 2)))
    return sorted(out, key=lambda x: -x[1])
