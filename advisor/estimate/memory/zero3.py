"""DeepSpeed ZeRO-3's gathered-parameter working set: its prefetcher replayed over the model's module calls.

The stage-3 coordinator fetches a module's parameters at each hooked module call and then prefetches along
the recorded trace (deepspeed bf6b9802 runtime/zero/partitioned_param_coordinator.py:318-349; 0.16.5
:380-405):

    max_params_to_prefetch = min(max_n_available_params - n_available_params, prefetch_bucket_sz)
    while param_queue and numel_prefetching < max_params_to_prefetch:
        param = param_queue.popleft()
        if param.ds_status == NOT_AVAILABLE:
            params_to_prefetch.add(param); numel_prefetching += param.ds_numel

Every call prefetches (containers, norms, activations and LoRA's dropout / lora_A / lora_B included) and each
prefetch adds whole parameters while under the bound, so when a layer makes more calls than it has gathered
parameters the prefetcher runs ahead until stage3_max_live_parameters, overshooting by up to one parameter
(the embedding / lm_head of a large vocabulary). A module's parameters are released after its call
(release_sub_module :358-369); parameters under stage3_param_persistence_threshold are never partitioned
(parameter_offload.py:316-334 mark_persistent_parameters) and are not counted here.
"""

from __future__ import annotations

from collections import deque

from advisor.estimate import constants as K
from advisor.estimate.params import ParamCount

__all__ = ["forward_calls", "gathered_peak"]


def forward_calls(pc: ParamCount, adapted: set[str], persist_below: float) -> list[tuple[int, int]]:
    """The forward's hooked module calls as (parameter id, elements gathered): 0 elements for calls that
    gather nothing (containers, norms and biases under the persistence threshold, activations, LoRA's
    dropout / lora_A / lora_B). A tied lm_head gathers the embedding's parameter (the same id)."""
    calls: list[tuple[int, int]] = []
    pid = 0

    def gathered(numel: int) -> tuple[int, int]:
        nonlocal pid
        pid += 1
        return (pid, numel if numel >= persist_below else 0)

    emb = gathered(pc.embedding)
    calls.append(emb)
    attn = [lin for lin in pc.linears if lin.feeds_from in ("attn_in", "attn_out")]
    rest = [lin for lin in pc.linears if lin not in attn]
    extra_norms = max(pc.norms_per_layer - 1, 0)
    # the layer, attention, MLP containers and the activation module (K.ZERO3_CONTAINER_CALLS)
    for _ in range(pc.layers):
        calls += [(0, 0), (0, 0), (0, 0)]  # decoder layer, its first norm, attention container
        for group, before in ((attn, []), (rest, [(0, 0)] * (extra_norms + K.ZERO3_CONTAINER_CALLS - 2))):
            calls += before  # the other norms, the MLP container and its activation
            for lin in group:
                for _ in range(max(lin.count, 1)):
                    calls.append(gathered(lin.d_in * lin.d_out))
                    if lin.name in adapted:
                        calls += [(0, 0)] * 3
    calls.append((0, 0))  # final norm
    calls.append(emb if pc.tied or not pc.lm_head else gathered(pc.lm_head))
    return calls


def gathered_peak(calls: list[tuple[int, int]], prefetch: float, max_live: float) -> float:
    """Most parameter elements available at once over one forward, by the coordinator's rules above."""
    queue = deque((i, pid, n) for i, (pid, n) in enumerate(calls) if n)
    avail: dict[int, int] = {}
    peak = 0
    for i, (pid, n) in enumerate(calls):
        if n:
            avail[pid] = n
        while queue and queue[0][0] <= i:
            queue.popleft()
        room = min(max_live - sum(avail.values()), prefetch)
        got = 0
        while queue and got < room:
            _, qid, m = queue.popleft()
            if qid not in avail:
                avail[qid] = m
                got += m
        peak = max(peak, sum(avail.values()))
        if n:
            avail.pop(pid, None)  # release_sub_module after the call
    return float(peak)
