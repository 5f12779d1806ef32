"""A training config named by a script flag of the script's own: Firefly's `train.py --train_args_file
train_args/sft/full/bloom-1b1-sft-full.json` (yangjianxin1/Firefly @e22b406 train.py:45, :52:
`parser.add_argument("--train_args_file", ...)`, then `HfArgumentParser(...).parse_json_file(
json_file=train_args_file)`). Only a flag whose value is a .json/.yaml file is a candidate, never a flag
that names another kind of file (`--deepspeed`, `--deepspeed_config`, `--fsdp_config`, a data file); the
run takes it only when the file reads as a training config (discover.py checks the kind), and the key
judgement reads it through the script's own parser (facts/script_flags.py `positional`: its file
methods), so a data file with a .json suffix never passes for one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

_SUFFIXES = {".json", ".yaml", ".yml"}
_OTHER_FILES = frozenset({"deepspeed", "deepspeed_config", "deepscale_config", "fsdp_config", "config_file"})


def config_flag_words(command: Any) -> list[Any]:
    """The command's script flags whose values name a .json/.yaml file, in the order written."""
    out = []
    for flag, word in command.script_args.items():
        text = getattr(word, "text", None)
        if flag in _OTHER_FILES or not isinstance(text, str) or Path(text).suffix.lower() not in _SUFFIXES:
            continue
        out.append(word)
    return out
