"""The built-in model catalog: every entry counts, carries a source, and matches its published total.

Published totals and sources live in advisor/data/models/sources.json (keras-hub preset metadata at a
commit, the project's memory-model.md 8.2 table); the meta-device comparison instantiates the smallest
catalog entry of each family with transformers (tied weights counted once, like ``named_parameters()``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.estimate import _meta, count_params, models, resolve_model
from advisor.estimate.params import formula_model_types

DATA = Path(models.CATALOG_PATH).parent
CATALOG = json.loads(models.CATALOG_PATH.read_text(encoding="utf-8"))
SOURCES = json.loads((DATA / "sources.json").read_text(encoding="utf-8"))["sources"]
MODEL_IDS = sorted(CATALOG["models"])
ALIASES = sorted(CATALOG["aliases"].items())
PUBLISHED = sorted((hub, s["published"]) for hub, s in SOURCES.items() if "published" in s)


@pytest.mark.parametrize("hub_id", MODEL_IDS)
def test_every_entry_counts_by_formula_and_has_a_source(hub_id: str) -> None:
    info = resolve_model(hub_id)
    assert info is not None and info.source == "catalog" and info.hub_id == hub_id
    pc = info.count()
    assert pc.source == "formula" and pc.model_type in formula_model_types()
    assert pc.total > 0 and pc.layers > 0 and pc.per_layer > 0
    assert (
        pc.layers_total
        == pc.total - pc.embedding - pc.lm_head - pc.position_embedding - pc.final_norm - pc.other
    )
    assert pc.layer_linear_weights < pc.total
    src = SOURCES.get(hub_id)
    assert src and src.get("repo") and src.get("path"), f"{hub_id}: no source"
    assert src.get("commit") or src["repo"] == "(project notes)", f"{hub_id}: source without a commit"


def test_catalog_is_compact_and_big_enough() -> None:
    assert len(MODEL_IDS) >= 180
    assert len(MODEL_IDS) + len(ALIASES) >= 300
    # only the keys the counter (and the dtype/probe facts) read
    allowed = {
        "model_type",
        "architectures",
        "dtype",
        "torch_dtype",
        "max_position_embeddings",
        "n_positions",
    }
    read_by_counter = _keys_read_by_counter()
    for hub_id, cfg in CATALOG["models"].items():
        extra = set(cfg) - allowed - read_by_counter
        assert not extra, f"{hub_id}: keys the estimator never reads: {sorted(extra)}"
    assert models.CATALOG_PATH.stat().st_size < 80_000


def _keys_read_by_counter() -> set[str]:
    from advisor.estimate import params
    from advisor.estimate.params import counter, families, families_2025

    # params/__init__.py reads text_config (a multimodal config's text decoder, Llama 4)
    text = "".join(Path(m.__file__).read_text() for m in (params, counter, families, families_2025))
    keys = set()
    for cfg in CATALOG["models"].values():
        keys |= {k for k in cfg if f'"{k}"' in text}
    return keys


@pytest.mark.parametrize(("hub_id", "published"), PUBLISHED, ids=[h for h, _ in PUBLISHED])
def test_published_totals(hub_id: str, published: dict[str, Any]) -> None:
    info = resolve_model(hub_id)
    assert info is not None, hub_id
    pc = info.count()
    total = pc.total
    if published.get("includes_untied_lm_head"):
        # the source counts T5 v1.1 / Flan-T5's separate lm_head, which transformers 5 ties (see families.py)
        assert pc.tied and info.config.get("tie_word_embeddings") is False
        total += pc.vocab * pc.hidden
    assert published["exact"], "only exact published counts are listed"
    assert total == published["total"], (
        f"{hub_id}: {total:,} != {published['total']:,} ({published['source']})"
    )


def test_published_totals_cover_the_main_families() -> None:
    types = {resolve_model(hub).count().model_type for hub, _ in PUBLISHED}
    assert {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "gemma",
        "gemma2",
    } <= types
    assert {"gemma3_text", "phi", "phi3", "gpt2", "bert", "t5"} <= types


@pytest.mark.parametrize(("alias", "target"), ALIASES, ids=[a for a, _ in ALIASES])
def test_every_alias_resolves_to_its_entry(alias: str, target: str) -> None:
    assert target in CATALOG["models"], f"alias {alias} -> missing {target}"
    info = resolve_model(alias)
    assert info is not None and info.source == "catalog" and info.hub_id == target


@pytest.mark.parametrize(
    ("name", "hub_id", "total"),
    [
        # the five ids of issue 10 that had no estimate in CI
        ("microsoft/phi-1_5", "microsoft/phi-1_5", 1_418_270_720),
        ("01-ai/Yi-34B", "01-ai/Yi-34B", 34_388_917_248),
        ("mistral-community/Mistral-7B-v0.2", "mistral-community/Mistral-7B-v0.2", 7_241_732_096),
        ("mistralai/Ministral-8B-Instruct-2410", "mistralai/Ministral-8B-Instruct-2410", 8_019_808_256),
        ("Qwen/Qwen-7B-Chat", "Qwen/Qwen-7B", 7_721_324_544),
    ],
)
def test_issue_ids_resolve_offline(name: str, hub_id: str, total: int) -> None:
    info = resolve_model(name)
    assert info is not None and info.source == "catalog" and info.hub_id == hub_id
    assert info.count().total == total


def test_qwen1_remote_code_shape_by_hand() -> None:
    # modeling_qwen.py (Qwen/Qwen-7B): wte V*h; per block c_attn h->3h with bias, c_proj h->h without,
    # MLP w1/w2 h->intermediate/2 and c_proj back, ln_1/ln_2 RMSNorm; ln_f; untied lm_head
    h, V, L, ff = 4096, 151936, 32, 22016 // 2
    block = (h * 3 * h + 3 * h) + h * h + 3 * h * ff + 2 * h
    pc = resolve_model("Qwen/Qwen-7B").count()
    assert pc.total == 2 * V * h + L * block + h
    assert {lin.name for lin in pc.linears} == {"c_attn", "c_proj", "w1", "w2", "mlp.c_proj"}


def test_chatglm_remote_code_shape_by_hand() -> None:
    # modeling_chatglm.py (THUDM/chatglm3-6b): embedding and output_layer on padded_vocab_size, untied; per
    # block query_key_value h -> heads*kv_channels + 2*groups*kv_channels with bias (add_qkv_bias), dense
    # without, dense_h_to_4h h -> 2*ffn (swiglu), dense_4h_to_h back, two RMSNorms; final_layernorm
    h, V, L, ff, qkv = 4096, 65024, 28, 13696, 32 * 128 + 2 * 2 * 128
    block = (h * qkv + qkv) + h * h + h * 2 * ff + ff * h + 2 * h
    pc = resolve_model("THUDM/chatglm3-6b").count()
    assert pc.total == 2 * V * h + L * block + h  # 6,243,584,000: THUDM's "6B" (6.24 B)
    assert {lin.name for lin in pc.linears} == {"query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"}


def test_baichuan2_13b_shape_by_hand() -> None:
    # modeling_baichuan.py (Baichuan2-13B): W_pack h -> 3h, o_proj, gate/up/down on 13696, NormHead V x h
    h, V, L, ff = 5120, 125696, 40, 13696
    block = h * 3 * h + h * h + 3 * h * ff + 2 * h
    assert resolve_model("baichuan-inc/Baichuan2-13B-Chat").count().total == 2 * V * h + L * block + h


def test_opt_350m_shape_by_hand() -> None:
    # modeling_opt.py (transformers 5.24): OPT-350m's word_embed_proj_dim 512 makes embed_tokens V x 512 and
    # the tied lm_head 512 wide, with project_in 512 -> h and project_out h -> 512 (no bias); it is post-norm
    # (do_layer_norm_before false), so OPTDecoder has no final_layer_norm; positions keep 2 offset rows
    h, V, L, ff, wp = 1024, 50272, 24, 4096, 512
    block = 4 * (h * h + h) + (h * ff + ff) + (ff * h + h) + 2 * 2 * h
    pc = resolve_model("facebook/opt-350m").count()
    assert pc.embedding == V * wp and pc.lm_head == 0 and pc.final_norm == 0
    assert pc.other == 2 * h * wp
    assert pc.total == V * wp + (2048 + 2) * h + 2 * h * wp + L * block == 331_196_416


def test_starcoder2_ties_the_small_sizes_only() -> None:
    # bigcode-project/starcoder2 issue #18: the 3B and 7B checkpoints hold no lm_head.weight (tied)
    h15, V = 6144, 49152
    small = [resolve_model(f"bigcode/starcoder2-{size}").count() for size in ("3b", "7b")]
    big = resolve_model("bigcode/starcoder2-15b").count()
    assert all(pc.tied and pc.lm_head == 0 for pc in small)
    assert not big.tied and big.lm_head == V * h15  # modeling_starcoder2.py:403 lm_head bias=False


def test_fine_tune_named_after_a_listed_fine_tune_resolves_to_its_base() -> None:
    # no listed model is called zephyr; the alias HuggingFaceH4/zephyr-7b-beta (Mistral-7B-v0.1's shapes) is
    info = resolve_model("OpenBuddy/openbuddy-zephyr-7b-v14.1", from_name=True)
    assert info is not None and info.hub_id == "mistralai/Mistral-7B-v0.1"
    assert info.assumption is not None and "zephyr-7b-beta" in info.assumption


@pytest.mark.parametrize(
    ("name", "hub_id", "prequantized"),
    [
        ("unsloth/Qwen2.5-7B-Instruct-bnb-4bit", "Qwen/Qwen2.5-7B", "bnb-4bit"),
        ("unsloth/Meta-Llama-3.1-8B-bnb-4bit", "meta-llama/Llama-3.1-8B", "bnb-4bit"),
        ("unsloth/Qwen3-8B-unsloth-bnb-4bit", "Qwen/Qwen3-8B", "bnb-4bit"),
        ("unsloth/llama-3-8b-bnb-4bit", "meta-llama/Meta-Llama-3-8B", "bnb-4bit"),
        ("unsloth/gemma-2-9b-it", "google/gemma-2-9b", None),
        ("NousResearch/Llama-2-7b-hf", "meta-llama/Llama-2-7b-hf", None),
        ("NousResearch/Meta-Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B", None),
        ("meta-llama/Llama-2-13b-chat-hf", "meta-llama/Llama-2-13b-hf", None),
        ("Qwen/Qwen3-8B-Base", "Qwen/Qwen3-8B", None),
        ("google/gemma-2-2b-it", "google/gemma-2-2b", None),
    ],
)
def test_mirrors_and_variants(name: str, hub_id: str, prequantized: str | None) -> None:
    info = resolve_model(name)
    assert info is not None and info.hub_id == hub_id and info.source == "catalog"
    assert info.prequantized == prequantized


@pytest.mark.parametrize(
    "name",
    ["someone/gpt2", "someone/Qwen2.5-7B-Instruct", "unsloth/not-a-model-bnb-4bit", "Qwen/Qwen2.5-7B-Foo"],
)
def test_unlisted_ids_stay_unknown(name: str) -> None:
    assert resolve_model(name) is None


def test_unknown_id_order_cache_then_online_then_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))

    def hub_without_answer(repo: str) -> Path | None:
        calls.append(repo)
        return None

    monkeypatch.setattr(models, "_from_hub", hub_without_answer)
    assert resolve_model("acme/unknown-7b") is None and calls == []  # offline: no hub call
    assert resolve_model("acme/unknown-7b", online=True) is None and calls == ["acme/unknown-7b"]
    # a catalog id is answered offline even with --online (no hub call)
    assert resolve_model("01-ai/Yi-34B", online=True).source == "catalog" and calls == ["acme/unknown-7b"]
    # the HF cache comes first, before the hub
    cfg = dict(CATALOG["models"]["HuggingFaceTB/SmolLM2-135M"])
    snap = tmp_path / "empty-cache" / "models--acme--unknown-7b" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("0" * 40)
    (snap / "config.json").write_text(json.dumps(cfg))
    info = resolve_model("acme/unknown-7b", online=True)
    assert info.source == "hf-cache" and calls == ["acme/unknown-7b"]


def _smallest_per_family() -> Iterator[tuple[str, dict[str, Any]]]:
    best: dict[str, tuple[int, str]] = {}
    for hub_id, cfg in CATALOG["models"].items():
        mt = cfg["model_type"]
        total = count_params(cfg).total
        if mt not in best or total < best[mt][0]:
            best[mt] = (total, hub_id)
    for mt in sorted(best):
        yield best[mt][1], CATALOG["models"][best[mt][1]]


# remote-code families transformers 5.24 does not ship (checked by hand above / in test_estimate_params.py)
REMOTE_CODE = {"qwen", "internlm2", "baichuan", "chatglm"}
META_SAMPLE = [(h, c) for h, c in _smallest_per_family() if c["model_type"] not in REMOTE_CODE]


@pytest.fixture(scope="module")
def transformers_on_meta() -> Any:
    if not _meta.available():
        pytest.skip("transformers/torch not installed")
    import torch
    import transformers

    transformers.logging.set_verbosity_error()

    def count(config: dict[str, Any]) -> int:
        cfg = dict(config)
        cfg.pop("architectures", None)
        if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
            # a multimodal config: the counter counts its text decoder (and says the vision tower is not)
            cfg = {**cfg["text_config"], "torch_dtype": cfg.get("torch_dtype")}
        model_type = cfg.pop("model_type")
        conf = transformers.AutoConfig.for_model(model_type, **cfg)
        with torch.device("meta"):
            if model_type in {"bert", "roberta"}:
                model = transformers.AutoModel.from_config(conf)  # BertModel + pooler, as the formula counts
            elif model_type in {"t5", "mt5"}:  # encoder-decoder
                model = transformers.AutoModelForSeq2SeqLM.from_config(conf)
            else:
                model = transformers.AutoModelForCausalLM.from_config(conf)
        return sum(p.numel() for p in model.parameters())  # parameters() yields tied tensors once

    return count


@pytest.mark.parametrize(("hub_id", "config"), META_SAMPLE, ids=[h for h, _ in META_SAMPLE])
def test_family_matches_transformers_on_meta_device(
    hub_id: str, config: dict[str, Any], transformers_on_meta
) -> None:
    assert count_params(config).total == transformers_on_meta(config), hub_id


def test_meta_sample_covers_every_family_transformers_has() -> None:
    families = {c["model_type"] for c in CATALOG["models"].values()}
    assert {c["model_type"] for _, c in META_SAMPLE} == families - REMOTE_CODE
