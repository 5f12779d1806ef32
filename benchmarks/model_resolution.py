"""How many real model names resolve offline to a config (issue 21, "Model resolution offline").

Each name below is written in a public training config or script: the corpora beside the checkout
(../shared/corpus, tests/corpus2: `where` names the file) or a public repository's recipe (its repo).
They are resolved by advisor.estimate.models.resolve_model with an empty Hugging Face cache and no network,
so only the built-in catalog and the name rules answer. A name counts as resolved when a config comes back;
where the base model is known (`base`), the answer must have that model's shapes, else it counts as wrong.
Measured as written (what resolve_model gave before the name rules) and with ``from_name=True``.

    HF_HUB_OFFLINE=1 python3 benchmarks/model_resolution.py [--names]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp(prefix="model-resolution-empty-cache-")

C1 = "../shared/corpus"
C2 = "tests/corpus2"

# (name, where it is written, the base model whose shapes it has, or None when not checked)
NAMES: list[tuple[str, str, str | None]] = [
    # the corpora
    ("EleutherAI/pythia-12b", C1, "EleutherAI/pythia-12b"),
    ("EleutherAI/pythia-14m", C1, "EleutherAI/pythia-14m"),
    ("HuggingFaceH4/starchat2-15b-sft-v0.1", C2, None),
    ("HuggingFaceH4/zephyr-7b-gemma-sft-v0.1", C2, "google/gemma-7b"),
    ("HuggingFaceTB/SmolLM-360M", C1, "HuggingFaceTB/SmolLM-360M"),
    ("HuggingFaceTB/SmolLM2-1.7B", C1, "HuggingFaceTB/SmolLM2-1.7B"),
    ("HuggingFaceTB/SmolLM2-360M", C1, "HuggingFaceTB/SmolLM2-360M"),
    ("HuggingFaceTB/SmolLM3-3B-Base", C2, "HuggingFaceTB/SmolLM3-3B"),
    ("NousResearch/Llama-2-7b-hf", C1, "meta-llama/Llama-2-7b-hf"),
    ("NousResearch/Llama-3.2-1B", C1, "meta-llama/Llama-3.2-1B"),
    ("NousResearch/Meta-Llama-3.1-8B", C1, "meta-llama/Llama-3.1-8B"),
    ("OpenRLHF/Llama-3-8b-sft-mixture", C2, "meta-llama/Meta-Llama-3-8B"),
    ("Qwen/Qwen2.5-1.5B-Instruct", C2, "Qwen/Qwen2.5-1.5B"),
    ("Qwen/Qwen2.5-Coder-32B-Instruct", C2, "Qwen/Qwen2.5-Coder-32B-Instruct"),
    ("Qwen/Qwen2.5-Coder-7B-Instruct", C2, "Qwen/Qwen2.5-Coder-7B-Instruct"),
    ("Qwen/Qwen3-0.6B", C2, "Qwen/Qwen3-0.6B"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", C2, "Qwen/Qwen3-30B-A3B"),
    ("Qwen/Qwen3-4B-Instruct-2507", C2, "Qwen/Qwen3-4B"),
    ("alignment-handbook/mistral-7b-sft-constitutional-ai", C2, "mistralai/Mistral-7B-v0.1"),
    ("alignment-handbook/zephyr-7b-sft-full", C2, "mistralai/Mistral-7B-v0.1"),
    ("alignment-handbook/zephyr-7b-sft-qlora", C2, "mistralai/Mistral-7B-v0.1"),
    ("allenai/OLMo-2-1124-13B", C2, "allenai/OLMo-2-1124-13B"),
    ("allenai/OLMo-2-1124-7B", C2, "allenai/OLMo-2-1124-7B"),
    ("allenai/OLMo-2-1124-7B-SFT", C2, "allenai/OLMo-2-1124-7B"),
    ("allenai/tulu-2-7b", C2, "meta-llama/Llama-2-7b-hf"),
    ("bigcode/starcoder2-15b", C1, "bigcode/starcoder2-15b"),
    ("casperhansen/llama-3-70b-fp16", C1, "meta-llama/Meta-Llama-3-70B"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", C2, "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"),
    ("facebook/opt-1.3b", C1, "facebook/opt-1.3b"),
    ("facebook/opt-13b", C1, "facebook/opt-13b"),
    ("facebook/opt-350m", C1, "facebook/opt-350m"),
    ("google/gemma-7b", C2, "google/gemma-7b"),
    ("hugging-quants/Meta-Llama-3.1-405B-BNB-NF4-BF16", C1, "meta-llama/Llama-3.1-405B"),
    ("hugging-quants/Meta-Llama-3.1-8B-Instruct-GPTQ-INT4", C1, "meta-llama/Llama-3.1-8B"),
    ("huggyllama/llama-7b", C1, "huggyllama/llama-7b"),
    ("liuhaotian/llava-v1.5-13b", C1, None),
    ("lmsys/vicuna-13b-v1.5", C1, "meta-llama/Llama-2-13b-hf"),
    ("lmsys/vicuna-7b-v1.5", C1, "meta-llama/Llama-2-7b-hf"),
    ("loubnabnl/smollm2-1.7B-sft", C2, "HuggingFaceTB/SmolLM2-1.7B"),
    ("loubnabnl/smollm2-360M-sft", C2, "HuggingFaceTB/SmolLM2-360M"),
    ("meta-llama/Llama-2-13b", C1, "meta-llama/Llama-2-13b-hf"),
    ("meta-llama/Llama-2-7b", C1, "meta-llama/Llama-2-7b-hf"),
    ("meta-llama/Llama-3.1-8B", C1, "meta-llama/Llama-3.1-8B"),
    ("meta-llama/Meta-Llama-3-8B-Instruct", C1, "meta-llama/Meta-Llama-3-8B"),
    ("microsoft/Phi-3-mini-4k-instruct", C1, "microsoft/Phi-3-mini-4k-instruct"),
    ("mistral-community/Mixtral-8x22B-v0.1", C1, "mistralai/Mixtral-8x22B-v0.1"),
    ("mistralai/Mixtral-8x7B-v0.1", C1, "mistralai/Mixtral-8x7B-v0.1"),
    ("open-r1/Qwen2.5-Math-7B-RoPE-300k", C2, None),
    ("openai/gpt-oss-20b", C1, None),
    ("openlm-research/open_llama_3b_v2", C1, "openlm-research/open_llama_3b"),
    ("teknium/OpenHermes-2.5-Mistral-7B", C1, "mistralai/Mistral-7B-v0.1"),
    ("HuggingFaceH4/openhermes-2.5-mistral-7b-dpo", C2, "mistralai/Mistral-7B-v0.1"),
    ("HuggingFaceTB/SmolLM3-3B-checkpoints", C1, None),
    ("LnL-AI/dbrx-base-converted-v2", C1, None),
    ("ai21labs/Jamba-v0.1", C1, None),
    ("axolotl-ai-co/gpt-oss-120b-dequantized", C1, None),
    ("facebook/opt-66b", C1, "facebook/opt-66b"),
    ("huggyllama/llama-13b", C2, "huggyllama/llama-13b"),
    ("huggyllama/llama-30b", C2, "huggyllama/llama-30b"),
    ("huggyllama/llama-65b", C2, "huggyllama/llama-65b"),
    ("lmsys/vicuna-13b-v1.3", C2, "huggyllama/llama-13b"),
    ("open-r1/OlympicCoder-7B", C1, None),
    ("open-r1/Qwen2.5-Coder-7B-Instruct-Codeforces-GRPO", C1, "Qwen/Qwen2.5-Coder-7B-Instruct"),
    # public recipes and model cards that train these (repository named)
    ("unsloth/Llama-3.2-3B-Instruct-bnb-4bit", "unslothai/notebooks", "meta-llama/Llama-3.2-3B"),
    ("unsloth/Qwen2.5-7B-Instruct-bnb-4bit", "unslothai/notebooks", "Qwen/Qwen2.5-7B"),
    ("unsloth/mistral-7b-v0.3-bnb-4bit", "unslothai/notebooks", "mistralai/Mistral-7B-v0.3"),
    ("TheBloke/Llama-2-7B-GPTQ", "AutoGPTQ/AutoGPTQ examples", "meta-llama/Llama-2-7b-hf"),
    ("TheBloke/Mistral-7B-Instruct-v0.2-AWQ", "casper-hansen/AutoAWQ examples", "mistralai/Mistral-7B-v0.1"),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "QwenLM/Qwen2.5 docs", "Qwen/Qwen2.5-7B"),
    ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "QwenLM/Qwen2.5 docs", "Qwen/Qwen2.5-7B"),
    ("Qwen/Qwen2.5-7B-Instruct", "huggingface/trl docs", "Qwen/Qwen2.5-7B"),
    ("Qwen/Qwen2.5-72B-Instruct", "hiyouga/LLaMA-Factory examples", "Qwen/Qwen2.5-72B"),
    ("Qwen/Qwen2.5-Math-7B", "huggingface/open-r1 recipes", None),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "huggingface/open-r1 recipes", "Qwen/Qwen2.5-7B"),
    ("meta-llama/Llama-3.3-70B-Instruct", "axolotl-ai-cloud/axolotl examples", "meta-llama/Llama-3.1-70B"),
    ("meta-llama/Llama-3.1-8B-Instruct", "allenai/open-instruct configs", "meta-llama/Llama-3.1-8B"),
    ("mistralai/Mistral-Small-24B-Instruct-2501", "axolotl-ai-cloud/axolotl examples", None),
    ("mistralai/Mistral-Small-24B-Base-2501", "axolotl-ai-cloud/axolotl examples", None),
    (
        "mistralai/Magistral-Small-2506",
        "axolotl-ai-cloud/axolotl examples",
        "mistralai/Mistral-Small-24B-Base-2501",
    ),
    ("google/gemma-3-27b-pt", "google-gemini/gemma-cookbook", "google/gemma-3-27b-it"),
    ("google/gemma-2-9b-it", "hiyouga/LLaMA-Factory examples", "google/gemma-2-9b"),
    ("NousResearch/Hermes-3-Llama-3.1-8B", "NousResearch model card", "meta-llama/Llama-3.1-8B"),
    ("HuggingFaceH4/zephyr-7b-beta", "huggingface/alignment-handbook", "mistralai/Mistral-7B-v0.1"),
    ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "ggml-org/llama.cpp docs", "meta-llama/Llama-3.1-8B"),
    ("unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit", "unslothai/notebooks", "meta-llama/Llama-3.1-8B"),
    ("Qwen/Qwen3-8B-Base", "huggingface/trl examples", "Qwen/Qwen3-8B"),
    ("Qwen/Qwen3-32B-FP8", "QwenLM/Qwen3 docs", "Qwen/Qwen3-32B"),
    ("microsoft/phi-4-bf16", "issue 21's form (dtype re-upload)", "microsoft/phi-4"),
    ("Qwen/Qwen2.5-7B-Instruct-2501", "issue 21's form (date suffix)", "Qwen/Qwen2.5-7B"),
    ("my-org/Llama-3.1-8B-Instruct-my-sft", "issue 21's form (fine-tune)", "meta-llama/Llama-3.1-8B"),
    (
        "mistralai/Magistral-Small-2507",
        "oumi-ai/oumi configs/recipes/mistral_magistral",
        "mistralai/Mistral-Small-24B-Base-2501",
    ),
    (
        "mistralai/Mistral-Nemo-Base-2407",
        "kevinstephano/thunder_model_blocks",
        "mistralai/Mistral-Nemo-Base-2407",
    ),
    ("bigcode/starcoder2-3b", "hiyouga/LLaMA-Factory model registry", "bigcode/starcoder2-3b"),
    ("google/gemma-3-270m-it", "guynich/gemma3_270m", None),
    # 2025 families (issue 21): Granite 3.x, GLM-4-0414, InternLM3, Llama 4
    (
        "ibm-granite/granite-3.1-2b-instruct",
        "hiyouga/LLaMA-Factory model registry",
        "ibm-granite/granite-3.1-2b-base",
    ),
    (
        "ibm-granite/granite-3.0-8b-instruct",
        "hiyouga/LLaMA-Factory model registry",
        "ibm-granite/granite-3.0-8b-base",
    ),
    ("ibm-granite/granite-3.3-8b-instruct", "hiyouga/LLaMA-Factory model registry", None),
    ("zai-org/GLM-4-9B-0414", "hiyouga/LLaMA-Factory model registry", None),
    ("THUDM/GLM-4-32B-0414", "axolotl-ai-cloud/axolotl examples/glm4/qlora-32b.yaml", None),
    ("internlm/internlm3-8b-instruct", "hiyouga/LLaMA-Factory model registry", None),
    (
        "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "axolotl-ai-cloud/axolotl docs/multimodal.qmd",
        "meta-llama/Llama-4-Scout-17B-16E",
    ),
    (
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        "hiyouga/LLaMA-Factory model registry",
        "meta-llama/Llama-4-Maverick-17B-128E",
    ),
    (
        "axolotl-quants/Llama-4-Scout-17B-16E-Linearized-bnb-nf4-bf16",
        "axolotl-ai-cloud/axolotl examples/llama-4",
        None,
    ),
    # the models of the fresh referee set (benchmarks/data/fresh: axolotl example READMEs, PEFT's README)
    (
        "mistralai/Devstral-Small-2505",
        "axolotl-ai-cloud/axolotl examples/devstral",
        "mistralai/Mistral-Small-24B-Base-2501",
    ),
    (
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        "axolotl-ai-cloud/axolotl examples/mistral-small",
        None,
    ),
    (
        "swiss-ai/Apertus-8B-Instruct-2509",
        "axolotl-ai-cloud/axolotl examples/apertus",
        "swiss-ai/Apertus-8B-Instruct-2509",
    ),
    ("arcee-ai/AFM-4.5B", "axolotl-ai-cloud/axolotl examples/arcee", None),
    ("ibm-granite/granite-4.0-tiny-preview", "axolotl-ai-cloud/axolotl examples/granite4", None),
    ("tencent/Hunyuan-0.5B-Instruct", "axolotl-ai-cloud/axolotl examples/hunyuan", None),
    ("XiaomiMiMo/MiMo-7B-RL", "axolotl-ai-cloud/axolotl examples/mimo", None),
    ("allenai/Olmo-3-7B-Instruct-SFT", "axolotl-ai-cloud/axolotl examples/olmo3", None),
    ("katanemo/Plano-Orchestrator-4B", "axolotl-ai-cloud/axolotl examples/plano", None),
    (
        "ByteDance-Seed/Seed-OSS-36B-Instruct",
        "axolotl-ai-cloud/axolotl examples/seed-oss",
        "ByteDance-Seed/Seed-OSS-36B-Instruct",
    ),
    (
        "arcee-ai/Trinity-Nano-Preview",
        "axolotl-ai-cloud/axolotl examples/trinity",
        "arcee-ai/Trinity-Nano-Preview",
    ),
    ("mistralai/Ministral-3-3B-Reasoning-2512", "axolotl-ai-cloud/axolotl examples/ministral3", None),
    ("LiquidAI/LFM2-350M", "axolotl-ai-cloud/axolotl examples/LiquidAI", "LiquidAI/LFM2-350M"),
    # forms of the 2025 families above a recipe writes (issue 21's forms): a base, a mirror, a re-upload
    (
        "swiss-ai/Apertus-8B-2509",
        "issue 21's form (the Instruct's base)",
        "swiss-ai/Apertus-8B-Instruct-2509",
    ),
    ("ByteDance-Seed/Seed-OSS-36B-Base", "issue 21's form (base)", "ByteDance-Seed/Seed-OSS-36B-Instruct"),
    ("unsloth/LFM2-350M", "issue 21's form (mirror)", "LiquidAI/LFM2-350M"),
    ("my-org/LFM2-350M-sft-v1", "issue 21's form (fine-tune)", "LiquidAI/LFM2-350M"),
    (
        "ByteDance-Seed/Seed-OSS-36B-Instruct-FP8",
        "issue 21's form (quantized)",
        "ByteDance-Seed/Seed-OSS-36B-Instruct",
    ),
    ("ibm-granite/granite-4.0-h-350m", "lablup/mlxcel src/models/granitemoehybrid_tests.rs", None),
    ("bigscience/T0_3B", "huggingface/peft README", None),
    ("bigscience/mt0-xxl", "huggingface/peft README", None),
    ("bigscience/bloomz-7b1", "huggingface/peft README", "bigscience/bloom-7b1"),
]


def _same_shapes(a: dict[str, object], b: dict[str, object]) -> bool:
    keys = ("hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads", "model_type")
    return all(a.get(k) == b.get(k) for k in keys)


def measure(from_name: bool, show: bool = False) -> tuple[int, int, int, int]:
    """(names, resolved, checked, wrong), with or without the name rules (resolve_model's from_name)."""
    from advisor.estimate.models import _catalog, resolve_model

    models = _catalog()[0]
    resolved = checked = wrong = 0
    for name, _where, base in NAMES:
        info = resolve_model(name, from_name=from_name)
        verdict = "unresolved"
        if info is not None:
            resolved += 1
            verdict = f"-> {info.hub_id}"
            if base is not None and base in models:
                checked += 1
                if not _same_shapes(info.config, models[base]):
                    wrong += 1
                    verdict += f"  WRONG (expected {base})"
            if info.notes:
                verdict += f"  [{info.notes[0]}]"
        if show:
            print(f"{name:55s} {verdict}")
    return len(NAMES), resolved, checked, wrong


def main() -> int:
    for from_name in (False, True):
        how = (
            "with the name rules (from_name=True)" if from_name else "as written (catalog, aliases, mirrors)"
        )
        total, resolved, checked, wrong = measure(from_name, show="--names" in sys.argv and from_name)
        print(
            f"{how}: {resolved}/{total} names resolve offline, "
            f"{checked} checked against their base: {wrong} wrong"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
