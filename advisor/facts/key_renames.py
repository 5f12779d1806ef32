"""Removed or deprecated keys whose replacement reads the same value the same way: a fix may rename them.

Only renames verified in the consumer's own source are listed (the file and line of each release read
are cited). A replacement whose meaning differs (`per_gpu_train_batch_size` -> the per-device batch,
`adafactor: true` -> `optim: adafactor`, `include_inputs_for_metrics` -> a list) is not here: its
message names it, and the user writes it.
"""

from __future__ import annotations

from typing import Any

from advisor.core.records import record


@record(frozen=True, slots=True)
class SameMeaning:
    replacement: str
    since: tuple[int, ...]  # the first release at which writing the replacement instead is equivalent
    accepts: str  # which values keep their meaning: "ratio" (a number in [0, 1)), "bool", "str", "int"


# (package, key) -> how the rename keeps the value's meaning.
RENAMES: dict[tuple[str, str], SameMeaning] = {
    # transformers 5.0-5.14: TrainingArguments.__post_init__ copies the deprecated ratio into warmup_steps
    # (5.14.1 training_args.py:1487-1489), which is a float field (:777), and get_warmup_steps reads a value
    # below 1 as a ratio of the total steps (:2092-2093); 5.15+ keeps that meaning (5.24.0 :798, :2158-2159).
    # In 4.x warmup_steps is an int (4.57.1 :942): a float there is refused, so no rename before 5.0.
    # The copy overrides warmup_steps, so with both keys set the rename would change the run: none then.
    ("transformers", "warmup_ratio"): SameMeaning("warmup_steps", (5, 0), "ratio"),
    # 4.41-4.50: `self.eval_strategy = self.evaluation_strategy` (4.41.2 training_args.py:1478, 4.50.3 :1615),
    # the same IntervalStrategy field (4.41.2 :784); removed in 4.51, eval_strategy unchanged (4.51.3 :836).
    ("transformers", "evaluation_strategy"): SameMeaning("eval_strategy", (4, 41), "str"),
    # 4.41-4.57: `if self.no_cuda: ... self.use_cpu = self.no_cuda` (4.41.2 :1494, 4.51.3 :1600, 4.57.1
    # :1641), both bool fields; removed in 5.0, use_cpu unchanged (5.24.0 :1300).
    ("transformers", "no_cuda"): SameMeaning("use_cpu", (4, 41), "bool"),
    # TRL 0.16-0.19: SFTConfig.__post_init__ sets `self.max_length = self.max_seq_length` (trl 0.16.1
    # trainer/sft_config.py:193-198, 0.19.1 :256-261); removed in 0.20, where max_length is the same
    # truncation length (0.20.0 sft_config.py:176-183).
    ("trl", "max_seq_length"): SameMeaning("max_length", (0, 16), "int"),
    # TRL 0.26: ModelConfig copies `torch_dtype` into `dtype` when dtype is unset (trl 0.26.2
    # trainer/model_config.py:196-202); removed in 0.27, where dtype takes the same choices (0.27.2 :91-97).
    ("trl", "torch_dtype"): SameMeaning("dtype", (0, 27), "str"),
}

# The dialects whose top level is a TrainingArguments (or a TRL config that subclasses it): their keys
# go to the class unchanged. LLaMA-Factory and axolotl map keys through their own code first.
RENAMING_DIALECTS = frozenset({"training_args", "trl"})


def _release(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")[:3]
    return tuple(int(p) for p in parts) if all(p.isdigit() and len(p) < 10 for p in parts) else None


def _accepted(kind: str, value: Any) -> bool:
    if kind == "ratio":
        return type(value) in (int, float) and 0 <= value < 1
    if kind == "bool":
        return type(value) is bool
    if kind == "int":
        return type(value) is int
    return type(value) is str and bool(value)  # an empty one is not copied (trl 0.26.2 :196)


def rename_for(
    dialect: str,
    package: str | None,
    release: str | None,
    key: str,
    replacement: str | None,
    mapping: dict[str, Any],
) -> tuple[str | None, str]:
    """(the new name, "") when renaming ``key`` to ``replacement`` keeps what the judged release of
    ``package`` does with its value in ``mapping``; else (None, why not, or "" when no rename is known)."""
    same = RENAMES.get((package or "", key))
    if same is None or dialect not in RENAMING_DIALECTS or replacement != same.replacement:
        return None, ""
    judged = _release(release or "")
    if judged is None or judged < same.since:
        return None, ""
    if same.replacement in mapping:
        return None, f"{same.replacement} is set too, and the two conflict: no automatic fix"
    if not _accepted(same.accepts, mapping.get(key)):
        what = {"ratio": "a ratio in [0, 1)", "bool": "true or false", "int": "an integer", "str": "text"}
        return None, f"the value is not {what[same.accepts]}: no automatic fix"
    return same.replacement, ""
