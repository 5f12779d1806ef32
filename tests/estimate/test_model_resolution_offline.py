"""Model names resolved offline by what they say (issue 21, "Model resolution offline").

Date-suffixed siblings, dtype re-uploads, fine-tunes named after their base and quantized copies resolve,
with ``from_name=True``, to the catalog model of the same family and size, and ``assumption`` says which
and why; the base model a cached model card, adapter config or config.json names is honoured. Without a
written size nothing is matched on a family alone, and without ``from_name`` resolution is as before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.estimate.model_names import parse_name, stripped_name
from advisor.estimate.models import _family_index, resolve_model
from tests.conftest import REPO


@pytest.fixture(autouse=True)
def _empty_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


@pytest.mark.parametrize(
    ("name", "hub_id", "said"),
    [
        # date-suffixed siblings: the family and size of the listed model
        ("Qwen/Qwen2.5-7B-Instruct-2501", "Qwen/Qwen2.5-7B", "family qwen2.5 and size 7B"),
        ("Qwen/Qwen2.5-7B-Instruct-2501", "Qwen/Qwen2.5-7B", "the date tag '2501'"),
        # dtype re-uploads: the repo they copy
        ("microsoft/phi-4-bf16", "microsoft/phi-4", "'bf16' is the dtype it was saved in"),
        ("casperhansen/llama-3-70b-fp16", "meta-llama/Meta-Llama-3-70B", "family llama-3 and size 70B"),
        # fine-tunes named after their base
        ("org/Llama-3.1-8B-Instruct-my-sft", "meta-llama/Llama-3.1-8B", "family llama-3.1 and size 8B"),
        ("teknium/OpenHermes-2.5-Mistral-7B", "mistralai/Mistral-7B-v0.1", "family mistral and size 7B"),
        ("NousResearch/Hermes-3-Llama-3.1-8B", "meta-llama/Llama-3.1-8B", "family llama-3.1 and size 8B"),
        ("HuggingFaceH4/zephyr-7b-gemma-sft-v0.1", "google/gemma-7b", "family gemma and size 7B"),
        ("loubnabnl/smollm2-360M-sft", "HuggingFaceTB/SmolLM2-360M", "family smollm2 and size 360M"),
        # quantized copies: the quantization is said
        ("TheBloke/Llama-2-7B-GPTQ", "meta-llama/Llama-2-7b-hf", "GPTQ quantization"),
        ("Qwen/Qwen2.5-7B-Instruct-AWQ", "Qwen/Qwen2.5-7B", "AWQ quantization"),
        ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "Qwen/Qwen2.5-7B", "GPTQ quantization ('gptq-int4')"),
        ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "meta-llama/Llama-3.1-8B", "GGUF"),
        ("hugging-quants/Meta-Llama-3.1-405B-BNB-NF4-BF16", "meta-llama/Llama-3.1-405B", "bitsandbytes"),
        ("Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-32B", "FP8 quantization"),
        # a version written picks that version's entry
        ("TheBloke/Mistral-7B-v0.3-AWQ", "mistralai/Mistral-7B-v0.3", "family mistral and size 7B"),
    ],
)
def test_names_resolve_by_what_they_say(name: str, hub_id: str, said: str) -> None:
    info = resolve_model(name, from_name=True)
    assert info is not None and info.hub_id == hub_id and info.source == "catalog"
    assert info.assumption is not None and info.assumption.startswith(f"assumed {hub_id}'s shapes: ")
    assert said in info.assumption
    assert info.notes[0] == info.assumption


def test_without_from_name_nothing_changes() -> None:
    for name in ("Qwen/Qwen2.5-7B-Instruct-2501", "someone/Qwen2.5-7B-Instruct", "TheBloke/Llama-2-7B-GPTQ"):
        assert resolve_model(name) is None
    listed = resolve_model("Qwen/Qwen2.5-7B-Instruct", from_name=True)
    assert listed is not None and listed.assumption is None  # an alias: no assumption to state


@pytest.mark.parametrize(
    "name",
    [
        "someone/gpt2",  # no size written: never a family alone
        "someone/mistral-finetune",
        "facebook/opt-2.7b",  # a listed family at a size it does not list: no stand-in of another family
        "./checkpoints/llama-3.1-8b",  # a path that is not there is not a name
        "unsloth/not-a-model-bnb-4bit",
    ],
)
def test_what_the_name_cannot_say_stays_unknown(name: str) -> None:
    assert resolve_model(name, from_name=True) is None


def test_the_date_sibling_of_qwen1_is_not_qwen2_5() -> None:
    # "Qwen-7B" is Qwen 1's family; R1-Distill-Qwen-7B is built on Qwen2.5-Math-7B (deepseek-ai/DeepSeek-R1
    # README, "DeepSeek-R1-Distill Models"): listed, not guessed
    info = resolve_model("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B")
    assert info is not None and info.hub_id == "Qwen/Qwen2.5-7B" and info.assumption is None


def test_mistral_small_3_is_in_the_catalog() -> None:
    info = resolve_model("mistralai/Mistral-Small-24B-Instruct-2501")
    assert info is not None and info.hub_id == "mistralai/Mistral-Small-24B-Base-2501"
    assert info.count().total == 23_572_403_200  # the checkpoint's bf16 total_size / 2
    fine_tune = resolve_model("someone/Mistral-Small-24B-Instruct-2501-sft", from_name=True)
    assert fine_tune is not None and fine_tune.hub_id == "mistralai/Mistral-Small-24B-Base-2501"


def test_gpt_oss_is_counted_as_transformers_builds_it() -> None:
    # ../shared/corpus's axolotl gpt-oss recipes train openai/gpt-oss-20b; transformers 5.24
    # GptOssForCausalLM on the meta device holds 20,914,757,184 parameters: sinks and router biases included
    info = resolve_model("openai/gpt-oss-20b")
    assert info is not None and info.config["model_type"] == "gpt_oss"
    count = info.count()
    assert count.total == 20_914_757_184
    layer = {lin.name: lin for lin in count.linears}
    assert (
        layer["experts.gate_proj"].count == 32 and layer["experts.gate_proj"].bias
    )  # gate_up_proj, per expert


def test_name_parts() -> None:
    parts = parse_name("Qwen/Qwen3-30B-A3B-Instruct-2507")
    assert (parts.before, parts.size, parts.date) == (("qwen", "3"), "30b-a3b", "2507")
    assert parse_name("allenai/OLMo-2-1124-7B-SFT").date == "1124"  # MMYY
    assert parse_name("Qwen/Qwen-1_8B").size == "1.8b"
    assert stripped_name("Qwen/Qwen3-32B-FP8") == "Qwen/Qwen3-32B"
    assert stripped_name("unsloth/Llama-3.2-3B-Instruct-bnb-4bit") == "unsloth/Llama-3.2-3B-Instruct"
    assert stripped_name("Qwen/Qwen2.5-7B") is None
    # every sized catalog model is found again from its own name
    for (family, size), entries in _family_index().items():
        for _after, hub_id in entries:
            assert parse_name(hub_id).before == family and parse_name(hub_id).size == size


# ---- the local HF cache ---------------------------------------------------------------------------


def _cache_repo(cache: Path, repo_id: str, files: dict[str, str]) -> None:
    """A repo as huggingface_hub lays it out: refs/main holds the commit, snapshots/<commit>/ the files."""
    root = cache / f"models--{repo_id.replace('/', '--')}"
    commit = "0" * 40
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(commit)
    snapshot = root / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for name, text in files.items():
        (snapshot / name).write_text(text, encoding="utf-8")


def test_a_cached_model_card_names_the_base_model(_empty_hf_cache: Path) -> None:
    card = "---\nlicense: apache-2.0\nbase_model:\n- Qwen/Qwen2.5-7B\ntags:\n- trl\n---\n# my model\n"
    _cache_repo(_empty_hf_cache, "acme/chat-model", {"README.md": card})
    info = resolve_model("acme/chat-model", from_name=True)
    assert info is not None and info.hub_id == "Qwen/Qwen2.5-7B"
    assert info.assumption == (
        "assumed Qwen/Qwen2.5-7B's shapes: its cached model card names base_model Qwen/Qwen2.5-7B"
    )
    assert resolve_model("acme/chat-model") is None  # only with from_name


def test_a_cached_adapter_config_names_the_base_model(_empty_hf_cache: Path) -> None:
    adapter = json.dumps({"peft_type": "LORA", "base_model_name_or_path": "meta-llama/Llama-3.1-8B", "r": 16})
    _cache_repo(_empty_hf_cache, "acme/lora", {"adapter_config.json": adapter})
    info = resolve_model("acme/lora", from_name=True)
    assert info is not None and info.hub_id == "meta-llama/Llama-3.1-8B"
    assert "adapter_config.json names base_model_name_or_path meta-llama/Llama-3.1-8B" in str(info.assumption)


def test_a_cached_config_without_model_type_names_its_origin(_empty_hf_cache: Path) -> None:
    config = json.dumps({"_name_or_path": "mistralai/Mistral-7B-v0.1", "architectures": ["X"]})
    _cache_repo(_empty_hf_cache, "acme/export", {"config.json": config})
    info = resolve_model("acme/export", from_name=True)
    assert info is not None and info.hub_id == "mistralai/Mistral-7B-v0.1"
    assert "_name_or_path mistralai/Mistral-7B-v0.1" in str(info.assumption)


@pytest.mark.parametrize(
    ("name", "base"),
    [
        # the corpora's fine-tunes whose names carry no listed family (alignment-handbook's starchat2 DPO
        # recipe, open-instruct's DPO default): unknown from the name, known from their cached cards
        ("HuggingFaceH4/starchat2-15b-sft-v0.1", "bigcode/starcoder2-15b"),
        ("allenai/tulu-2-7b", "meta-llama/Llama-2-7b-hf"),
    ],
)
def test_a_fine_tune_without_a_family_in_its_name_is_resolved_by_its_cached_card(
    _empty_hf_cache: Path, name: str, base: str
) -> None:
    # no table of fine-tune names: from the name alone, only a stand-in of its size (estimate.size_match)
    by_size = resolve_model(name, from_name=True)
    assert by_size is not None and by_size.shapes_from == "size"
    _cache_repo(_empty_hf_cache, name, {"README.md": f"---\nbase_model: {base}\n---\n"})
    info = resolve_model(name, from_name=True)
    assert info is not None and info.hub_id == base and info.source == "catalog"
    assert info.assumption == f"assumed {base}'s shapes: its cached model card names base_model {base}"
    assert info.shapes_from == "name"


def test_cards_naming_each_other_are_followed_twice_at_most(_empty_hf_cache: Path) -> None:
    _cache_repo(_empty_hf_cache, "acme/a", {"README.md": "---\nbase_model: acme/b\n---\n"})
    _cache_repo(_empty_hf_cache, "acme/b", {"README.md": "---\nbase_model: acme/a\n---\n"})
    assert resolve_model("acme/a", from_name=True) is None


# ---- the estimate says it -------------------------------------------------------------------------


def test_estimate_states_the_assumption(tmp_path: Path, _empty_hf_cache: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO), "HF_HUB_CACHE": str(_empty_hf_cache)}
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "estimate", "Qwen/Qwen2.5-7B-Instruct-2501"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "assumed Qwen/Qwen2.5-7B's shapes: the name has family qwen2.5 and size 7B" in proc.stdout


def test_a_name_no_repo_can_have_is_unknown_not_a_crash() -> None:
    # a path component over NAME_MAX made the cache lookup raise ENAMETOOLONG
    name = "acme/" + "7b-" * 2000
    assert resolve_model(name) is None
    assert resolve_model(name, from_name=True) is None
