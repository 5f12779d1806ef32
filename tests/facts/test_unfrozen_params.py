"""axolotl unfrozen_parameters read from the patterns (advisor/facts/unfrozen_params.py): the layers and the
child modules a pattern names, against the catalog's shapes. Patterns as axolotl's examples write them
(examples/mistral/bigstral/bigstral-ds-zero3.yaml, examples/archived/dbrx/fft-ds-zero3.yaml) and as
utils/freeze.py's docstring does; "." is a literal dot unless followed by "+" (freeze.py:225)."""

from __future__ import annotations

import pytest

from advisor.estimate import resolve_model
from advisor.estimate.params import ParamCount
from advisor.facts.unfrozen_params import read_pattern


@pytest.fixture(scope="module")
def mixtral() -> ParamCount:
    return resolve_model("mistralai/Mixtral-8x22B-v0.1").count()


@pytest.fixture(scope="module")
def llama() -> ParamCount:
    return resolve_model("meta-llama/Meta-Llama-3-8B").count()


def _size(pc: ParamCount, names: tuple[str, ...]) -> int:
    return sum(lin.weight_params for lin in pc.linears if lin.name.startswith(names))


def test_moe_router_and_experts_of_some_layers(mixtral: ParamCount) -> None:
    per, extra, io, exact = read_pattern(mixtral, "model.layers.4[4-9]+.block_sparse_moe.gate")
    assert sorted(per) == list(range(44, 50)) and extra == 0 and not io and exact
    assert set(per.values()) == {_size(mixtral, ("router",))}
    per, _, _, exact = read_pattern(mixtral, "model.layers.5[0-5]+.block_sparse_moe.experts")
    assert sorted(per) == list(range(50, 56)) and exact
    assert set(per.values()) == {_size(mixtral, ("experts.",))}


def test_embedding_and_lm_head_are_outside_the_layers(mixtral: ParamCount) -> None:
    assert read_pattern(mixtral, "^lm_head.weight$") == ({}, mixtral.lm_head, True, True)
    assert read_pattern(mixtral, "^model.embed_tokens.weight$") == ({}, mixtral.embedding, True, True)
    # a slice still holds the whole gradient and optimizer state (the hook zeroes the rest: freeze.py:184-211)
    assert read_pattern(mixtral, "^model.embed_tokens.weight$[:32000]")[1] == mixtral.embedding


def test_whole_layers_and_the_prefix_reading(llama: ParamCount) -> None:
    per, _, _, exact = read_pattern(llama, "transformer.blocks.[0-7].")
    assert per == {i: llama.per_layer for i in range(8)} and exact
    # no dot after the index: re.match reads it as a prefix, so layers 2 and 20-29
    per, _, _, _ = read_pattern(llama, "model.layers.2")
    assert sorted(per) == [2, *range(20, 30)]


def test_one_linear_of_every_layer(llama: ParamCount) -> None:
    per, _, _, exact = read_pattern(llama, "model.layers.[0-9]+.mlp.gate_proj")
    assert sorted(per) == list(range(32)) and exact
    assert set(per.values()) == {_size(llama, ("gate_proj",))}
    per, _, _, exact = read_pattern(llama, "model.layers.3[01].self_attn")
    assert per == {30: llama.attn_per_layer, 31: llama.attn_per_layer} and exact


def test_what_cannot_be_read_is_a_bound(llama: ParamCount) -> None:
    # a child module the catalog cannot size: the whole layer
    per, _, _, exact = read_pattern(llama, "model.layers.31.my_adapter")
    assert per == {31: llama.per_layer} and not exact
    # no layer part this reading knows: every parameter
    per, extra, io, exact = read_pattern(llama, ".+attn.+")
    assert len(per) == 32 and extra == llama.total - 32 * llama.per_layer and io and not exact
