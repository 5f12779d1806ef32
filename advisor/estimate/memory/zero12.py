"""What DeepSpeed's ZeRO stage 1/2 optimizer (DeepSpeedZeroOptimizer) allocates beyond the gradient
partition, with contiguous_gradients on (its default). The same code in deepspeed 0.12.4, 0.16.5 and 0.19.8;
lines of runtime/zero/stage_1_and_2.py at 0.19.8:

* every backward maps the reduction bucket, reduce_bucket_size elements, twice with overlap_comm
  (setup_buckets, 3256-3280); the epilogue releases it (_release_ipg_buffers, 924-932, called at 1061);
* the first gradient of a backward allocates a contiguous buffer for the whole partition
  (copy_grads_in_partition, 2142 and 2184-2194) and the gradients become views of it; the epilogue
  keeps those views as the accumulated gradients (all_grad_tensors / averaged_gradients, 1037-1055)
  and drops the buffer's name. With gradient accumulation the next micro-batch's backward allocates a
  second partition buffer while the first is held, and adds it into the first at its epilogue
  (accumulated_grad.add_, 1045): two gradient partitions through every backward after the first of an
  optimizer step;
* the step flattens the accumulated views into a new tensor (flatten_dense_tensors_aligned / flatten,
  3113-3117) and then converts it to the fp32 master's dtype (.to, 3118): the flat copy is live beside
  the accumulated gradients and the fp32 gradient partition until `del flat_grad_partition`. With an
  fp32 model `.to` returns the flat copy itself.

Not modelled: contiguous_gradients off (gradients stay per parameter), CPU offload (a different path)."""

from __future__ import annotations

from advisor.core.records import record
from advisor.estimate import constants as K
from advisor.estimate.memory.resolve import ResolvedSetup
from advisor.estimate.memory.setup import Phase, Term

__all__ = ["Zero12Buffers", "zero12_buffers"]

_BACKWARD: Phase = "backward start"
_END: Phase = "end of backward"


@record(frozen=True, slots=True)
class Zero12Buffers:
    during_backward: list[Term]  # live at the start and at the end of a backward
    step_flat_copy: float  # bytes, live at the optimizer step's conversion to fp32


def zero12_buffers(r: ResolvedSetup, trainable: int, grad_bytes: int, partitions: int) -> Zero12Buffers:
    """The buffers for `trainable` parameters whose gradients are `grad_bytes` wide, partitioned `partitions`
    ways; nothing when the run is not DeepSpeed ZeRO-1/2 with contiguous gradients on the GPU."""
    s = r.s
    applies = (
        s.strategy in ("zero1", "zero2")
        and s.ds_contiguous_gradients
        and s.offload_optimizer == "none"
        and trainable > 0
    )
    if not applies:
        return Zero12Buffers([], 0.0)
    partition = trainable * grad_bytes / max(partitions, 1)
    second = partition if s.grad_accum > 1 else 0.0
    terms = [
        Term(
            "second gradient partition",
            second,
            (_BACKWARD, _END),
            "DeepSpeed ZeRO gradient accumulation: the next micro-batch's contiguous buffer beside the "
            "accumulated one",
        )
    ]
    if partitions == 1:  # with more processes advisor.estimate.memory.terms.distributed_buffers counts them
        rb = s.ds_reduce_bucket_size if s.ds_reduce_bucket_size is not None else K.DS_BUCKET_DEFAULT
        buckets = 2 if s.ds_overlap_comm else 1
        terms.append(
            Term(
                "ZeRO reduction bucket",
                buckets * min(rb, trainable) * grad_bytes,
                (_BACKWARD, _END),
                f"{buckets} x reduce_bucket_size, mapped by every backward",
            )
        )
    return Zero12Buffers(terms, partition)
