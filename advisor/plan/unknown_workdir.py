"""Why the folder a run's process works in is not known to be this repository, in words: then a relative
path the consumer opens from that folder (the training script torchrun starts, TrainingArguments'
`deepspeed:`, which accelerate opens as given: accelerate 1.15.0 utils/deepspeed.py:141-142
`os.path.exists(config_file_or_dict)`) and is not here has an unknown absence, not a missing file (GA004
stays quiet; run.unknown_references keeps it with the reason, and `plan` shows it).

Used by advisor/plan/discover.py only when none of the command's relative files is found from the folders it
may run in (the script's folder and its parents up to the project root, moved by its `cd`); a found file
says where the command runs, and a missing one there is missing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from advisor.sources.boundary import ProjectBoundary

# Configs that only an installed tool reads, from the folder it is started in: LLaMA-Factory
# (`llamafactory-cli train examples/train_lora/llama3_lora_sft.yaml` run from its checkout, whose YAMLs name
# its examples/deepspeed/ds_z2_config.json) and axolotl (its examples name deepspeed_configs/zero2.json of
# its checkout).
INSTALLED_TOOL_DIALECTS = {"llamafactory": "LLaMA-Factory", "llamafactory_v1": "LLaMA-Factory"}


def launch_elsewhere(
    script: str, workdir: Any, boundary: ProjectBoundary | None, outside_word: tuple[str, int] | None
) -> str | None:
    """Why a launch command of the script named `script` runs in a folder not known to be the project: its
    `cd` goes to a folder not known statically (`cd $LLAMA_FACTORY_DIR`) or out of the project, or it names
    a config by an absolute path outside the project (`outside_word`: the text and its line; OpenBMB/MiniCPM
    finetune/llama_factory_example/single_node.sh:16 runs `src/train.py /root/ld/ld_project/LLaMA-Factory/
    examples/minicpm/minicpm_sft.yaml` from a LLaMA-Factory checkout, its README.md:8-10 and 98-100). None
    when the launch is taken to start in the script's folder or a parent up to the project root."""
    path = getattr(workdir, "path", None)
    if workdir is not None and path is None:
        return f"{workdir.reason} ({script}:{workdir.span.line})"
    if (
        path is not None
        and os.path.isabs(path)
        and boundary is not None
        and not boundary.contains(Path(path))
    ):
        return f"the launch runs in {path} ({script}:{workdir.span.line}), outside the project"
    if outside_word is not None:
        text, line = outside_word
        return (
            f"the command names {text} outside the project ({script}:{line}): it is written for a checkout "
            "elsewhere, whose folder it runs in"
        )
    return None


def installed_tool_config(kind: str, dialect: str | None) -> str | None:
    """Why a config that no launch of the project runs has no known working folder: an installed tool
    (LLaMA-Factory, axolotl) reads it from wherever that tool is started; None for other configs, whose
    relative paths are looked for beside them and up to the project root."""
    tool = "axolotl" if kind == "axolotl" else INSTALLED_TOOL_DIALECTS.get(dialect or "")
    if tool is None:
        return None
    return (
        f"{tool} opens it from the folder it is started in, and no launch script of the project runs this "
        f"config (its own examples run from {tool}'s checkout)"
    )
