"""Issue 18 item 7, issue 20 item 8: a run names its model through its training script, a flag, a
dataclass field, its settings entry or `estimate --model`, through the real CLI.

Before: a plain `HfArgumentParser(TrainingArguments)` script had no way to name its model. Its literal
`AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")` was not read, nor a `--base_model` flag or a
`model_args.model_path` field flowing into from_pretrained; the note ("no model is named
(model_name_or_path / base_model / model)") suggested model_name_or_path, which that script's parser
refuses (GA002 error); no [[runs]] `model` setting and no `estimate PATHS --model` existed. Such runs got
no memory estimate, so no GA401 / GA402 advice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO

TIMEOUT = 120
LAUNCH = (
    "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out --bf16 True "
    "--per_device_train_batch_size 4 --max_steps 100{extra}\n"
)
# the plain HF setup: TrainingArguments only, the model named in the script
PLAIN = """from transformers import AutoModelForCausalLM, AutoTokenizer, HfArgumentParser, Trainer
from transformers import TrainingArguments


def main():
    parser = HfArgumentParser(TrainingArguments)
    (training_args,) = parser.parse_args_into_dataclasses()
    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    model = AutoModelForCausalLM.from_pretrained("{model}")
    Trainer(model=model, args=training_args, tokenizer=tokenizer).train()


if __name__ == "__main__":
    main()
"""
LITERAL_LINE = 9
LITERAL_COL = PLAIN.splitlines()[LITERAL_LINE - 1].index('"{model}"') + 1
# no model anywhere in the script: the model is built by a project function
UNNAMED = """from transformers import HfArgumentParser, Trainer, TrainingArguments

from mylib import build_model

parser = HfArgumentParser(TrainingArguments)
(training_args,) = parser.parse_args_into_dataclasses()
Trainer(model=build_model(), args=training_args).train()
"""
ARGPARSE = """import argparse

from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--base_model", type=str, default="Qwen/Qwen2.5-0.5B")
p.add_argument("--per_device_train_batch_size", type=int, default=2)
args, _ = p.parse_known_args()
model = AutoModelForCausalLM.from_pretrained(args.base_model, torch_dtype="bfloat16")
"""
DATACLASS = """from dataclasses import dataclass, field

from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_path: str = field(default="Qwen/Qwen2.5-0.5B", metadata={"help": "the base model"})


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
    path = model_args.model_path
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype="auto")
    Trainer(model=model, args=training_args).train()


main()
"""
# alpaca-lora's finetune.py form: fire hands the flags to the function's parameters
FIRE = """import fire
from transformers import LlamaForCausalLM


def train(base_model: str = "", per_device_train_batch_size: int = 4):
    model = LlamaForCausalLM.from_pretrained(base_model, load_in_8bit=False)


if __name__ == "__main__":
    fire.Fire(train)
"""
BIG = "meta-llama/Meta-Llama-3-70B"  # 70B full fine-tune: GA401 on any one card
SMALL = "Qwen/Qwen2.5-0.5B"


def _run(args: list[str], cwd: Path, importtime: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    env.pop("GITHUB_ACTIONS", None)
    flags = ["-X", "importtime"] if importtime else []
    proc = subprocess.run(
        [sys.executable, *flags, "-m", "advisor.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    return proc


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _check(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    proc = _run(["check", "launch.sh", "-H", "2xH100-PCIe", "--format", "json", *args], root)
    return proc.returncode, json.loads(proc.stdout)


def _where(report: dict[str, Any], rule: str) -> list[tuple[str, int, int]]:
    return [(f["file"], f["line"], f["column"]) for f in report["findings"] if f["rule"] == rule]


def _notes(report: dict[str, Any]) -> str:
    return " ".join(report["runs"][0]["notes"])


def test_literal_from_pretrained_in_a_plain_trainingarguments_script(tmp_path: Path) -> None:
    root = _project(tmp_path, {"train.py": PLAIN.format(model=SMALL), "launch.sh": LAUNCH.format(extra="")})
    proc = _run(["check", "launch.sh", "-H", "2xH100-PCIe", "--format", "json"], root, importtime=True)
    report = json.loads(proc.stdout)
    run = report["runs"][0]
    assert run["peak_vram_gib"] is not None and 20 < run["peak_vram_gib"] < 60, run
    assert "train.py:9 AutoModelForCausalLM.from_pretrained()" in _notes(report)
    assert not _where(report, "GA002")  # nothing to add to the launch line
    # the check path never imports transformers or torch (-X importtime lists every import)
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in proc.stderr.splitlines()}
    assert not imported & {"transformers", "torch"}


def test_a_literal_that_does_not_fit_is_reported_at_the_literal(tmp_path: Path) -> None:
    root = _project(tmp_path, {"train.py": PLAIN.format(model=BIG), "launch.sh": LAUNCH.format(extra="")})
    code, report = _check(root)
    assert code == 1
    assert _where(report, "GA401") == [("train.py", LITERAL_LINE, LITERAL_COL)]


def test_a_base_model_flag_flows_into_from_pretrained(tmp_path: Path) -> None:
    files = {"train.py": ARGPARSE, "launch.sh": LAUNCH.format(extra=f" --base_model {BIG}")}
    root = _project(tmp_path, files)
    code, report = _check(root)
    assert code == 1
    line = files["launch.sh"].splitlines()[1]
    assert _where(report, "GA401") == [("launch.sh", 2, line.index(BIG) + 1)]  # the flag's value
    assert "model meta-llama/Meta-Llama-3-70B: --base_model into train.py:9" in _notes(report)


def test_without_the_flag_the_scripts_default_is_the_model(tmp_path: Path) -> None:
    root = _project(tmp_path, {"train.py": ARGPARSE, "launch.sh": LAUNCH.format(extra="")})
    proc = _run(["estimate", "launch.sh", "-H", "2xH100-PCIe", "--format", "json"], root)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["runs"][0]
    assert report["model"]["name"] == SMALL
    assert any("the default of train.py's --base_model" in a for a in report["assumptions"])


def test_a_dataclass_field_through_a_name_flows_into_from_pretrained(tmp_path: Path) -> None:
    files = {"train.py": DATACLASS, "launch.sh": LAUNCH.format(extra=" --model_path Qwen/Qwen2.5-1.5B")}
    root = _project(tmp_path, files)
    proc = _run(["estimate", "launch.sh", "-H", "2xH100-PCIe", "--format", "json"], root)
    report = json.loads(proc.stdout)["runs"][0]
    assert report["model"]["name"] == "Qwen/Qwen2.5-1.5B"
    _code, checked = _check(root)
    assert not _where(checked, "GA002")  # --model_path is a field of its ModelArguments


def test_fire_parameters_are_flags(tmp_path: Path) -> None:
    launch = (
        "#!/bin/bash\ntorchrun --nproc_per_node 2 finetune.py "
        f"--base_model {BIG} --per_device_train_batch_size 4\n"
    )
    root = _project(tmp_path, {"finetune.py": FIRE, "launch.sh": launch})
    code, report = _check(root)
    assert code == 1
    assert _where(report, "GA401") == [("launch.sh", 2, launch.splitlines()[1].index(BIG) + 1)]


def test_an_unresolvable_flag_says_so_and_how_to_name_the_model(tmp_path: Path) -> None:
    launch = LAUNCH.format(extra=' --model_path "$1"')
    root = _project(tmp_path, {"train.py": DATACLASS, "launch.sh": launch})
    code, report = _check(root)
    assert code == 0
    notes = _notes(report)
    assert "train.py:15 AutoModelForCausalLM.from_pretrained(path): --model_path cannot be resolved" in notes
    assert 'model = "ORG/NAME"' in notes


def test_the_note_suggests_what_the_scripts_parser_accepts_and_the_setting_works(tmp_path: Path) -> None:
    root = _project(tmp_path, {"train.py": UNNAMED, "launch.sh": LAUNCH.format(extra="")})
    code, report = _check(root)
    notes = _notes(report)
    assert "takes no --model_name_or_path" in notes
    assert "--model_name_or_path ORG" not in notes  # the script's parser would refuse it (GA002)
    assert '.gpu-advise.toml: [[runs]] path = "launch.sh", model = "ORG/NAME"' in notes
    assert "gpu-advise estimate launch.sh --model ORG/NAME" in notes
    # doing what the note says: the estimate is made, and the finding points at the setting
    settings = f'hardware = "2xH100-PCIe"\n\n[[runs]]\npath = "launch.sh"\nmodel = "{BIG}"\n'
    (root / ".gpu-advise.toml").write_text(settings, encoding="utf-8")
    code, report = _check(root)
    assert code == 1
    assert _where(report, "GA401") == [(".gpu-advise.toml", 5, 9)]
    assert not _where(report, "GA002")
    (root / ".gpu-advise.toml").write_text(settings.replace(BIG, SMALL), encoding="utf-8")
    code, report = _check(root)
    assert code == 0 and report["runs"][0]["peak_vram_gib"] is not None


def test_the_note_suggests_model_name_or_path_when_the_parser_takes_it(tmp_path: Path) -> None:
    # stanford_alpaca's train.py form: ModelArguments.model_name_or_path defaults to None
    script = DATACLASS.replace(
        'model_path: str = field(default="Qwen/Qwen2.5-0.5B", ',
        "model_name_or_path: str = field(default=None, ",
    )
    script = script.replace("model_args.model_path", "model_args.model_name_or_path")
    root = _project(tmp_path, {"train.py": script, "launch.sh": LAUNCH.format(extra="")})
    code, report = _check(root)
    assert (
        "the run sets no --model_name_or_path and the script gives it no literal default; "
        "pass --model_name_or_path ORG/NAME; or name it in .gpu-advise.toml" in _notes(report)
    )
    # doing what it says
    (root / "launch.sh").write_text(LAUNCH.format(extra=f" --model_name_or_path {SMALL}"))
    code, report = _check(root)
    assert code == 0 and not _where(report, "GA002") and report["runs"][0]["peak_vram_gib"] is not None


def test_the_setting_wins_over_the_files_and_says_so(tmp_path: Path) -> None:
    files = {"train.py": ARGPARSE, "launch.sh": LAUNCH.format(extra=f" --base_model {SMALL}")}
    root = _project(tmp_path, files)
    (root / "pyproject.toml").write_text(
        '[[tool.gpu-advise.runs]]\npath = "launch.sh"\nmodel = "Qwen/Qwen2.5-1.5B"\n', encoding="utf-8"
    )
    proc = _run(["estimate", "launch.sh", "-H", "2xH100-PCIe", "--format", "json"], root)
    report = json.loads(proc.stdout)["runs"][0]
    assert report["model"]["name"] == "Qwen/Qwen2.5-1.5B"


def test_an_empty_model_setting_is_refused_at_its_line(tmp_path: Path) -> None:
    root = _project(tmp_path, {"train.py": UNNAMED, "launch.sh": LAUNCH.format(extra="")})
    (root / ".gpu-advise.toml").write_text('[[runs]]\npath = "launch.sh"\nmodel = ""\n', encoding="utf-8")
    proc = _run(["check", "launch.sh"], root)
    assert proc.returncode == 2
    assert ".gpu-advise.toml:3: setting 'runs.0.model'" in proc.stderr


def test_estimate_paths_model(tmp_path: Path) -> None:
    root = _project(tmp_path, {"train.py": UNNAMED, "launch.sh": LAUNCH.format(extra="")})
    proc = _run(["estimate", "launch.sh", "-H", "2xH100-PCIe", "--format", "json"], root)
    assert json.loads(proc.stdout)["runs"][0]["unknown"].startswith("no model is named")
    proc = _run(["estimate", "launch.sh", "--model", SMALL, "-H", "2xH100-PCIe", "--format", "json"], root)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["runs"][0]
    assert report["model"]["name"] == SMALL and report["memory"]["peak_gib"] > 0
    # over what the files name, said in the assumptions
    (root / "launch.sh").write_text(LAUNCH.format(extra=" --model_name_or_path Qwen/Qwen2.5-1.5B"))
    proc = _run(["estimate", "launch.sh", "--model", SMALL, "--format", "json"], root)
    report = json.loads(proc.stdout)["runs"][0]
    assert report["model"]["name"] == SMALL
    assert any("from --model (the run's files name Qwen/Qwen2.5-1.5B)" in a for a in report["assumptions"])
    proc = _run(["estimate", SMALL, "--model", SMALL], root)
    assert proc.returncode == 2 and "--model: only for runs" in proc.stderr
