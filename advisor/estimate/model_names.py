"""What a model's repo name says about it: its family, size, quantization, dtype and date tags.

Names on the Hub follow their base model's: a fine-tune keeps the base's family and size
(``OpenHermes-2.5-Mistral-7B``, ``org/Llama-3.1-8B-Instruct-my-sft``), a re-upload adds a dtype
(``phi-4-bf16``), a quantized copy its method (``-GPTQ-Int4``, ``-AWQ``, ``-bnb-4bit``, ``-GGUF``,
``-FP8``), a later release a date (``-2501``: YYMM; OLMo's ``-1124``: MMYY). advisor.estimate.models uses
this to find the catalog entry a name is built on, and says so in the estimate; a name is never matched
on a family alone: the size must be written too.
"""

from __future__ import annotations

import re

from advisor.core.records import record

# how a re-upload says it is quantized, and what the estimate calls it
_QUANTIZATIONS: tuple[tuple[str, str], ...] = (
    (r"gguf", "GGUF (llama.cpp)"),
    (r"gptq(?:-int[348])?", "GPTQ"),
    (r"awq", "AWQ"),
    (r"(?:unsloth-)?bnb(?:-(?:nf4|4bit|8bit))*", "bitsandbytes"),
    (r"nf4", "bitsandbytes"),
    (r"fp8(?:-dynamic)?", "FP8"),
    (r"exl2", "EXL2"),
    (r"int[48]", "integer"),
    (r"[48]-?bit", "bitsandbytes"),
)
_QUANT_RE = [(re.compile(rf"(?:^|-)({pattern})(?=-|$)"), label) for pattern, label in _QUANTIZATIONS]
_DTYPE_RE = re.compile(r"(?:^|-)(bf16|fp16|fp32|bfloat16|float16|float32)(?=-|$)")
# 7b, 0.5b, 135m, 8x7b, 30b-a3b (MoE: total and active), 17b-16e (Llama 4: experts)
_SIZE_RE = re.compile(r"(?:^|-)(\d+x\d+(?:\.\d+)?b|\d+(?:\.\d+)?[bm](?:-a\d+(?:\.\d+)?b|-\d+e)?)(?=-|$)")
# tokens that say what was done to a model, not which model it is
ROLE_TOKENS = frozenset(
    {"instruct", "chat", "it", "base", "hf", "pt", "sft", "dpo", "kto", "orpo", "grpo", "ppo", "rlhf"}
)


@record(frozen=True, slots=True)
class NameParts:
    before: tuple[str, ...]  # the tokens before the size (the family: "qwen", "2.5")
    size: str | None  # "7b", "8x7b", "30b-a3b"
    after: tuple[str, ...]  # the tokens after it ("instruct", "v0.3", "my", "sft")
    quantization: str | None = None  # "GPTQ", "AWQ", ...
    quant_tag: str | None = None  # as written: "gptq-int4"
    dtype: str | None = None  # "bf16"
    date: str | None = None  # "2501"

    @property
    def tokens(self) -> tuple[str, ...]:
        return (*self.before, *self.after)


def _is_date(token: str) -> bool:
    if not re.fullmatch(r"\d{4}", token):
        return False
    a, b = int(token[:2]), int(token[2:])
    return (20 <= a <= 29 and 1 <= b <= 12) or (1 <= a <= 12 and 20 <= b <= 29)  # YYMM or MMYY


def _split(text: str) -> list[str]:
    """'qwen2.5-coder' -> qwen, 2.5, coder; 'v0.3' and '3.1' stay whole; 'llama3' -> llama, 3."""
    out: list[str] = []
    for word in text.split("-"):
        if not word:
            continue
        if re.fullmatch(r"v\d+(?:\.\d+)*", word):
            out.append(word)
            continue
        out.extend(re.findall(r"[a-z]+|\d+(?:\.\d+)*", word))
    return out


def parse_name(name: str) -> NameParts:
    """The parts of a repo name (the org is not part of it: ``meta-llama/`` names no family)."""
    repo = name.strip().split("/")[-1].lower()
    repo = re.sub(r"(?<=\d)_(?=\d)", ".", repo)  # Qwen-1_8B, internlm2_5: 1.8, 2.5
    repo = re.sub(r"[_\s]+", "-", repo)  # open_llama_3b
    repo = re.sub(r"\.(?!\d)|(?<!\d)\.", "-", repo)  # a dot between digits is a version's (2.5, v0.1)
    quantization = quant_tag = dtype = None
    for pattern, label in _QUANT_RE:
        m = pattern.search(repo)
        if m:
            quantization = quantization or label
            quant_tag = quant_tag or m.group(1)
            repo = repo[: m.start(1)] + repo[m.end(1) :]
    m = _DTYPE_RE.search(repo)
    if m:
        dtype = m.group(1)
        repo = repo[: m.start(1)] + repo[m.end(1) :]
    if repo.startswith("meta-"):
        repo = repo[len("meta-") :]
    size_m = _SIZE_RE.search(repo)
    head, size, tail = (
        (repo, None, "")
        if size_m is None
        else (
            repo[: size_m.start(1)],
            size_m.group(1),
            repo[size_m.end(1) :],
        )
    )
    before, after = _split(head), _split(tail)
    date = next((t for t in (*before, *after) if _is_date(t)), None)
    if date is not None:
        before = [t for t in before if t != date]
        after = [t for t in after if t != date]
    return NameParts(tuple(before), size, tuple(after), quantization, quant_tag, dtype, date)


_TAGS_RE = re.compile(
    r"[-_.](?:"
    + "|".join([*(p for p, _ in _QUANTIZATIONS), _DTYPE_RE.pattern.split("(", 2)[2].split(")")[0]])
    + r")(?=$|[-_.])",
    re.IGNORECASE,
)


def stripped_name(name: str) -> str | None:
    """The name without its quantization and dtype tags (``Qwen/Qwen3-32B-FP8`` -> ``Qwen/Qwen3-32B``), or
    None when it carries none: the repo a re-upload copies."""
    org, _, repo = name.strip().rpartition("/")
    out = repo
    while True:
        shorter = _TAGS_RE.sub("", out)
        if shorter == out:
            break
        out = shorter
    if out == repo or not out:
        return None
    return f"{org}/{out}" if org else out


def quantization_note(parts: NameParts) -> str | None:
    if parts.quantization is None:
        return None
    return f"the name says {parts.quantization} quantization ('{parts.quant_tag}')"
