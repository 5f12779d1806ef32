"""LoRA adapters: which Linear layers a target list hits, and how many parameters the adapters add."""

from __future__ import annotations

from advisor.estimate.params import ParamCount

__all__ = ["PEFT_DEFAULT_TARGETS", "lora_params", "targeted"]

PEFT_DEFAULT_TARGETS = {
    "llama": ["q_proj", "v_proj"],
    "mistral": ["q_proj", "v_proj"],
    "mixtral": ["q_proj", "v_proj"],
    "qwen2": ["q_proj", "v_proj"],
    "qwen3": ["q_proj", "v_proj"],
    "gemma": ["q_proj", "v_proj"],
    "gemma2": ["q_proj", "v_proj"],
    "phi3": ["qkv_proj"],
    "phi": ["q_proj", "v_proj"],
    "gpt2": ["c_attn"],
    "bert": ["query", "value"],
    "opt": ["q_proj", "v_proj"],
    "gpt_neox": ["query_key_value"],
    "falcon": ["query_key_value"],
    "bloom": ["query_key_value"],
    # catalog families added in issue 10 (peft 0.21.2 utils/constants.py:67, the LoRA target mapping)
    "t5": ["q", "v"],
    "roberta": ["query", "value"],
    "gpt_bigcode": ["c_attn"],
    "gptj": ["q_proj", "v_proj"],
    "stablelm": ["q_proj", "v_proj"],
    "gemma3_text": ["q_proj", "v_proj"],
}


def targeted(model: ParamCount, targets: list[str]) -> set[str]:
    want = {t.strip().lower() for t in targets}
    if want & {"all-linear", "all_linear", "all"}:
        return {lin.name for lin in model.linears if lin.name != "router"}
    out = set()
    for lin in model.linears:
        names = {lin.name.lower(), lin.name.split(".")[-1].lower(), *(a.lower() for a in lin.aliases)}
        if names & want:
            out.add(lin.name)
    return out


def lora_params(model: ParamCount, r: int, targets: list[str]) -> int:
    """Adapter parameters: r * (d_in + d_out) per targeted Linear per layer (experts counted E times)."""
    names = targeted(model, targets)
    per_layer = sum(r * (lin.d_in + lin.d_out) * lin.count for lin in model.linears if lin.name in names)
    if model.moe_layers and model.moe_layers != model.layers:
        dense = sum(
            r * (lin.d_in + lin.d_out)
            for lin in model.linears
            if lin.name in names and lin.count == 1 and not lin.name.startswith("shared_expert")
        )
        return per_layer * model.moe_layers + dense * (model.layers - model.moe_layers)
    return per_layer * model.layers
