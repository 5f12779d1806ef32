"""The end-of-backward phase of a full fine-tune: the first decoder layer's recompute and working set sit on
the gradients of the layers above it only.

Its own weight gradients and the input embedding's are formed after it (autograd's AccumulateGrad creates a
parameter's .grad when its gradient arrives; with non-reentrant checkpointing, transformers 5.24's default,
the layer is recomputed when backward reaches its last op: torch/utils/checkpoint.py _checkpoint_hook). The
simulated step (benchmarks/simulate_grid.py) shows it: pythia-1.4b full, checkpointed, 4x512 peaks at all
gradients + the embedding's grad_output, not all gradients + one recomputed layer.
"""

from __future__ import annotations

import pytest

from advisor.estimate import TrainingSetup
from advisor.estimate.memory import terms
from advisor.estimate.memory.peak import phase_terms
from tests.estimate.setups import checkpointed_full_ft


def _setup(model: str, **kw: object) -> TrainingSetup:
    return checkpointed_full_ft(model, **{"micro_batch": 4, "seq_len": 512, **kw})  # type: ignore[arg-type]


def _end(s: TrainingSetup) -> tuple[float, float, float]:
    """(end-of-backward bytes above all gradients, the first layer's peak bytes, all gradients)."""
    pt = phase_terms(s)
    end = pt.phases["end of backward"]
    g = sum(t.bytes for t in end if t.name == "gradients")
    act = terms.activations(pt.resolved)
    pc = pt.resolved.pc
    tokens = (s.micro_batch or 1) * (s.seq_len or 0)
    # recomputed layer + its backward temporaries + its checkpointed input (bf16)
    layer = act.last_layer + act.work.bytes + 2 * pc.hidden * tokens
    return sum(t.bytes for t in end) - g, layer, g


def test_untied_full_finetune_leaves_out_the_first_layers_and_the_embeddings_gradients() -> None:
    s = _setup("EleutherAI/pythia-1.4b")
    above, layer, _g = _end(s)
    pc = phase_terms(s).resolved.pc
    assert not pc.tied
    late = 2.0 * (pc.per_layer + pc.embedding + pc.position_embedding)  # bf16 gradients
    assert layer > 0
    assert above == pytest.approx(max(0.0, layer - late))
    # a long sequence: the recomputed layer outgrows the gradients still to come
    long = _setup("EleutherAI/pythia-1.4b", micro_batch=8, seq_len=4096)
    above, layer, _g = _end(long)
    assert layer > late
    assert above == pytest.approx(layer - late)


def test_tied_embedding_gradient_already_exists_its_new_copy_is_formed_last() -> None:
    s = _setup("meta-llama/Llama-3.2-1B", micro_batch=8, seq_len=4096)
    above, layer, _g = _end(s)
    pc = phase_terms(s).resolved.pc
    assert pc.tied
    late = 2.0 * pc.per_layer  # the lm_head's gradient is the embedding's: only the layer's own come later
    assert layer > late
    assert above == pytest.approx(max(layer - late, 2.0 * pc.embedding))


def test_gradients_kept_across_micro_batches_all_exist() -> None:
    s = _setup("EleutherAI/pythia-1.4b", grad_accum=4)
    above, layer, _g = _end(s)
    assert above == pytest.approx(layer)


def test_freeze_tuning_leaves_the_frozen_embedding_out() -> None:
    # LLaMA-Factory's checkpointing (only layers with trainable parameters): backward stops at the lowest
    # trainable layer, whose weight gradients come after its recompute
    s = _setup(
        "EleutherAI/pythia-1.4b",
        micro_batch=8,
        seq_len=4096,
        trainable_layers=2,
        frozen_layers_checkpointed=False,
    )
    above, layer, _g = _end(s)
    pc = phase_terms(s).resolved.pc
    assert above == pytest.approx(max(0.0, layer - 2.0 * pc.per_layer))
    # transformers' checkpointing makes the embedding's output require grad: the last layer backward reaches
    # is a frozen one, when every gradient already exists
    hf = _setup("EleutherAI/pythia-1.4b", micro_batch=8, seq_len=4096, trainable_layers=2)
    above, layer, _g = _end(hf)
    assert above == pytest.approx(layer)
