"""DeepSpeed ZeRO-3's per-GPU working set beyond the shards: the whole gradient bucket, the gathered
parameters the prefetcher keeps ahead (up to stage3_max_live_parameters), in the module's dtype, at any world
size. The PEFT README's ZeRO-3 CPU-offload column (peft 5d602fd README.md, 1x A100 80GB, fp32 LoRA r8, batch
8 x 64) reports 18.1 GB for bloomz-7b1 where its plain-PyTorch column's activations alone are ~5 GB."""

import collections

import pytest

from advisor.estimate import TrainingSetup, estimate_memory, resolve_model

GIB = 2**30


def _setup(model="bigscience/bloom-7b1", prec="fp32", **kw):
    fields = dict(
        micro_batch=8,
        seq_len=64,
        precision=prec,
        storage_dtype=prec,
        amp=False,
        optimizer="adamw_torch",
        gradient_checkpointing=False,
        attn_implementation="eager",
        metric="allocated",
        method="lora",
        lora_r=8,
        lora_targets=["query_key_value"],
        strategy="zero3",
        world_size=1,
        offload_params="cpu",
        offload_optimizer="cpu",
    )
    fields.update(kw)
    return TrainingSetup(model=resolve_model(model).count(), **fields)


def _buffers(setup):
    est = estimate_memory(setup)
    return next(i.gib for i in est.items if i.name == "distributed buffers"), est


def _replay_prefetch(modules, pf, max_live):
    """A hand-written copy of DeepSpeed's forward fetch + prefetch + release (deepspeed bf6b9802
    partitioned_param_coordinator.py fetch_sub_module :239-356, release_sub_module :358-369, with the
    trace complete; every module's params released after its call, as nothing is reused within the forward):

        params_to_fetch = iter_params(current_submodule); __all_gather_params(params_to_fetch)
        max_params_to_prefetch = min(max_n_available_params - n_available_params, prefetch_bucket_sz)
        while param_queue and numel_prefetching < max_params_to_prefetch:
            param = param_queue.popleft()
            if param.ds_status == NOT_AVAILABLE: params_to_prefetch.add(param); numel_prefetching += numel

    `modules` is the forward order of (module, numel of its own parameter) (0 for containers). Returns the
    most parameter elements available at once."""
    queue = collections.deque((i, n) for i, (_, n) in enumerate(modules) if n)
    avail: dict[int, int] = {}
    peak = 0
    for i, (_, n) in enumerate(modules):
        if n and i not in avail:
            avail[i] = n
        while queue and queue[0][0] <= i:  # the current module's entry leaves the queue
            queue.popleft()
        room = min(max_live - sum(avail.values()), pf)
        got = 0
        while queue and got < room:
            j, m = queue.popleft()
            if j not in avail:
                avail[j] = m
                got += m
        peak = max(peak, sum(avail.values()))
        avail.pop(i, None)  # release after the module's forward
    return peak


def _bloom_forward(pc, lora=True):
    """BloomForCausalLM's module calls (transformers modeling_bloom.py): the embedding, per block the block,
    its norms, attention (+ the LoRA Linear's dropout, lora_A, lora_B), dense, MLP container, dense_h_to_4h,
    gelu, dense_4h_to_h; then ln_f and the tied lm_head. Biases and norms are under the persistence
    threshold (1e5 elements) and never gathered."""
    h = pc.hidden
    mods = [("word_embeddings", pc.embedding)]
    for _ in range(pc.layers):
        mods += [("block", 0), ("ln0", 0), ("attn", 0), ("qkv", 3 * h * h)]
        if lora:
            mods += [("drop", 0), ("A", 0), ("B", 0)]
        mods += [("dense", h * h), ("ln1", 0), ("mlp", 0), ("h4h", 4 * h * h), ("gelu", 0)]
        mods += [("4hh", 4 * h * h)]
    return [*mods, ("ln_f", 0), ("lm_head", pc.embedding)]


def test_one_gpu_offload_keeps_the_whole_gradient_bucket_in_the_param_dtype():
    # stage3.py:385-389 @bf6b9802: torch.empty(self.reduce_bucket_size, dtype=self.dtype) however few train
    small, _ = _buffers(_setup(ds_reduce_bucket_size=1e8))
    big, _ = _buffers(_setup(ds_reduce_bucket_size=5e8))
    assert big - small == pytest.approx(4 * 4e8 / GIB, rel=1e-6)  # fp32: 4 B per bucket element


def test_gathered_parameters_follow_the_module_dtype():
    fp32, _ = _buffers(_setup(prec="fp32"))
    bf16, _ = _buffers(_setup(prec="bf16"))
    assert fp32 == pytest.approx(2 * bf16, rel=1e-6)


def test_one_gpu_is_not_free_of_zero3_buffers():
    # world_size 1 shards nothing, but the engine still gathers each module from the CPU partition
    buffers, est = _buffers(_setup())
    assert buffers > 8  # >= 1e9 gathered + the 1.03B embedding + 5e8 bucket, fp32
    assert 14 < est.peak_gib < 22  # the README's 18.1 GB for bloomz-7b1


def test_prefetch_lead_matches_a_replay_of_the_coordinator():
    pc = resolve_model("bigscience/bloom-7b1").count()
    for pf, ml in ((5e7, 1e9), (1.5e7, 1e9), (5e7, 3e8)):
        replay = _replay_prefetch(_bloom_forward(pc), pf, ml)
        setup = _setup(ds_prefetch_bucket_size=pf, ds_max_live_parameters=ml, offload_params="none")
        buffers, _ = _buffers(setup)
        gathered = buffers * GIB / 4 - 5e8  # less the bucket
        assert gathered == pytest.approx(replay, rel=0.05), (pf, ml, replay, gathered)


def test_smaller_max_live_shrinks_the_working_set():
    default, _ = _buffers(_setup())
    tight, _ = _buffers(_setup(ds_max_live_parameters=1e8))
    assert default - tight == pytest.approx(4 * 9e8 / GIB, rel=0.05)
