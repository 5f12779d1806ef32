"""README code blocks as launch sources: advisor/sources/readme_launch.py (reading),
advisor/plan/readme_runs.py (which become runs), advisor/pipeline/documented.py (at most warnings).
Forms from princeton-nlp/SimPO @1b3e8f3 README.md:186-205, yangjianxin1/Firefly @e22b406 README.md:276-304
and tatsu-lab/stanford_alpaca @761dc5b README.md:132-153."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor.pipeline.check import CheckOptions, run_check
from advisor.plan.discover import discover
from advisor.sources.markdown_files import project_markdown
from advisor.sources.read import read_document
from advisor.sources.readme_launch import read_markdown_launch

SIMPO = (
    "# SimPO\n\n* Llama3-Instruct:\n```shell\n"
    "ACCELERATE_LOG_LEVEL=info accelerate launch --config_file accelerate_configs/deepspeed_zero3.yaml "
    "scripts/run_simpo.py training_configs/llama.yaml\n```\n"
)
ZERO3 = (
    "compute_environment: LOCAL_MACHINE\ndeepspeed_config:\n  zero_stage: 3\n  zero3_init_flag: true\n"
    "distributed_type: DEEPSPEED\nmixed_precision: bf16\nnum_machines: 1\nnum_processes: 4\n"
)
TRAIN_PY = "from transformers import Trainer, HfArgumentParser\n\nHfArgumentParser(()).parse_yaml_file('x')\n"


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def commands(text: str) -> list:
    return read_markdown_launch(Path("README.md"), text).data.commands


def test_command_positioned_in_the_readme() -> None:
    (c,) = commands(SIMPO)
    assert c.launcher == "accelerate" and (c.span.line, c.span.col) == (5, 1)
    assert c.launcher_args["config_file"].text == "accelerate_configs/deepspeed_zero3.yaml"
    assert c.env["ACCELERATE_LOG_LEVEL"].text == "info"
    assert [w.text for w in c.positional] == ["training_configs/llama.yaml"]


def test_only_shell_blocks_that_start_a_launcher() -> None:
    text = (
        "```python\nimport os\nos.system('torchrun t.py')\n```\n"
        "```text\ndeepspeed t.py\n```\n"
        "```bash\npip install -r requirements.txt\n```\n"
        "```\ntorchrun --nproc_per_node 2 t.py\n```\n"
    )
    (c,) = commands(text)
    assert c.launcher == "torchrun" and c.span.line == 12


def test_console_prompts_stripped_and_output_dropped() -> None:
    text = "```console\n$ torchrun --nproc_per_node=2 \\\n>   train.py --bf16 True\nStarting...\n$ ls\n```\n"
    (c,) = commands(text)
    assert (c.span.line, c.span.col) == (2, 3)
    assert c.script.text == "train.py" and (c.script.span.line, c.script.span.col) == (3, 5)
    assert c.script_args["bf16"].text == "True"


def test_continuations_inside_a_list_item_keep_columns() -> None:
    text = "1. Train:\n\n   ```bash\n   torchrun --nproc_per_node=4 train.py \\\n       --tf32 True\n   ```\n"
    (c,) = commands(text)
    assert (c.span.line, c.span.col) == (4, 4)
    assert (c.script_args["tf32"].span.line, c.script_args["tf32"].span.col) == (5, 15)


@pytest.mark.parametrize(
    "value",
    ["<your_output_dir>", "/path/to/model", "path/to/ckpt", "{num_gpus}", "your_model_path", "${MODEL}"],
)
def test_placeholders_are_unknown(value: str) -> None:
    (c,) = commands(
        f"```bash\ntorchrun --nproc_per_node=4 train.py --model_name_or_path {value} --bf16 True\n```\n"
    )
    word = c.script_args["model_name_or_path"]
    assert word.text is None and word.unknown
    assert c.script_args["bf16"].text == "True"  # the placeholder took no word after it
    if value.startswith("<"):
        assert word.raw == value and "placeholder" in word.unknown


def test_a_quote_left_open_does_not_swallow_the_next_block() -> None:
    text = "```bash\necho 'oops\n```\n\n```bash\ndeepspeed --num_gpus 2 train.py\n```\n"
    (c,) = commands(text)
    assert c.launcher == "deepspeed" and c.span.line == 6


def test_commands_of_several_blocks_keep_their_own_spans() -> None:
    text = "```bash\ntorchrun a.py --bf16 True\n```\n```bash\ntorchrun b.py --fp16 True\n```\n"
    doc = read_markdown_launch(Path("README.md"), text)
    assert doc.value_spans[("commands", 0, "script_args", "bf16")].line == 2
    assert doc.value_spans[("commands", 1, "script_args", "fp16")].line == 5


def test_which_markdown_files_are_read(tmp_path: Path) -> None:
    top = tmp_path
    assert project_markdown(top / "README.md", top)
    assert project_markdown(top / "README_zh.md", top)
    assert project_markdown(top / "v1" / "readme.md", top)
    assert project_markdown(top / "docs" / "training.md", top)
    assert not project_markdown(top / "CHANGELOG.md", top)
    assert not project_markdown(top / "a" / "b" / "README.md", top)
    assert not project_markdown(top / "docs" / "deep" / "x.md", top)
    assert not project_markdown(top / "README.txt", top)


def test_the_readme_connects_the_configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "README.md": SIMPO,
        "accelerate_configs/deepspeed_zero3.yaml": ZERO3,
        "training_configs/llama.yaml": "model_name_or_path: meta-llama/Meta-Llama-3-8B\nbf16: true\n",
        "scripts/run_simpo.py": TRAIN_PY,
    }
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    runs, _ = discover([Path(".")])
    (run,) = runs
    assert run.name == "README.md:5"
    assert run.accelerate is not None and run.training is not None and run.script is not None


def test_a_launch_script_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "README.md": "```bash\ntorchrun --nproc_per_node=4 train.py --bf16 True\n```\n",
        "scripts/run.sh": "torchrun --nproc_per_node=8 train.py --fp16 True\n",
        "train.py": TRAIN_PY,
    }
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    runs, _ = discover([Path(".")])
    assert [r.name for r in runs] == ["scripts/run.sh"]


def test_no_run_for_what_does_not_train(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "README.md": "```bash\npython generate.py --model x\npython -m pip install .\nvllm serve m\n```\n",
        "generate.py": "from transformers import pipeline\npipeline('text-generation')\n",
    }
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    assert discover([Path(".")])[0] == []


def test_a_translation_is_one_run_other_flags_are_two(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = "```bash\ntorchrun --nproc_per_node=4 train.py --bf16 True\n```\n"
    files = {
        "README.md": block + "```bash\ntorchrun --nproc_per_node=2 train.py --bf16 True\n```\n",
        "README_zh.md": "# 中文\n\n" + block,
        "train.py": TRAIN_PY,
    }
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    assert [r.name for r in discover([Path(".")])[0]] == ["README.md:2", "README.md:5"]


def test_readme_findings_are_at_most_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a missing config named in a launch script is GA004 at error level; in a README, a warning
    files = {
        "README.md": "```bash\naccelerate launch --config_file missing.yaml train.py\n```\n",
        "train.py": TRAIN_PY,
    }
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    found = [
        (f.rule, f.severity, f.location.line, f.fix) for f in run_check([Path(".")], CheckOptions()).findings
    ]
    assert ("GA004", "warning", 2, None) in found
    assert all(sev != "error" for _, sev, _, _ in found)
    os.rename("README.md", "launch.sh")
    (tmp_path / "launch.sh").write_text(
        "accelerate launch --config_file missing.yaml train.py\n", encoding="utf-8"
    )
    assert ("GA004", "error") in [
        (f.rule, f.severity) for f in run_check([Path(".")], CheckOptions()).findings
    ]


def test_a_config_flag_of_the_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Firefly train.py:45,52: --train_args_file names the TrainingArguments JSON read by parse_json_file
    files = {
        "run.sh": "deepspeed --num_gpus 2 train.py --train_args_file args/sft.json\n",
        "args/sft.json": '{"output_dir": "o", "per_device_train_batch_size": 1, "learning_rate": 1e-5}\n',
        "train.py": TRAIN_PY,
    }
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    (run,) = discover([Path(".")])[0]
    assert run.training is not None and run.training.path.name == "sft.json"


def test_read_document_dispatches_markdown(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(SIMPO, encoding="utf-8")
    doc = read_document(tmp_path / "README.md")
    assert doc.kind == "launch" and doc.data.documented and len(doc.data.commands) == 1


def test_plan_shows_the_readme_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from typer.testing import CliRunner

    from advisor.cli import app

    files = {
        "README.md": SIMPO,
        "accelerate_configs/deepspeed_zero3.yaml": ZERO3,
        "training_configs/llama.yaml": "model_name_or_path: meta-llama/Meta-Llama-3-8B\nbf16: true\n",
        "scripts/run_simpo.py": TRAIN_PY,
        "run.sh": "python scripts/other.py training_configs/other.yaml\n",
        "training_configs/other.yaml": "model_name_or_path: meta-llama/Meta-Llama-3-8B\nfp16: true\n",
        "scripts/other.py": TRAIN_PY,
    }
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    text = runner.invoke(app, ["plan", "."]).stdout
    source = "  source: README.md:5, a command in a README code block (documentation)\n"
    assert f"run README.md:5\n{source}" in text
    shown = json.loads(runner.invoke(app, ["plan", "--format", "json", "."]).stdout)
    assert {r["name"]: r["source"] for r in shown} == {"README.md:5": "readme", "run.sh": "script"}


def test_a_superseded_readme_command_says_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # lm-sys/FastChat @0e6d3e4: README.md:326 and scripts/train_vicuna_7b.sh both run train_mem.py with
    # --evaluation_strategy; the script's GA005 stands, the README's copy of the command says nothing
    files = {
        "README.md": "```bash\ntorchrun --nproc_per_node=4 train.py --evaluation_strategy no\n```\n",
        "scripts/run.sh": "torchrun --nproc_per_node=4 train.py --evaluation_strategy steps\n",
        "train.py": "from transformers import HfArgumentParser, TrainingArguments\n\n"
        "(args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n",
        "requirements.txt": "transformers==4.51.0\n",
    }
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    found = {(f.rule, f.location.file.name) for f in run_check([Path(".")], CheckOptions()).findings}
    assert ("GA005", "run.sh") in found and ("GA005", "README.md") not in found


def test_a_config_given_alone_finds_the_readme_that_launches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "README.md": SIMPO,
        "accelerate_configs/deepspeed_zero3.yaml": ZERO3,
        "training_configs/llama.yaml": "model_name_or_path: meta-llama/Meta-Llama-3-8B\nbf16: true\n",
        "scripts/run_simpo.py": TRAIN_PY,
        "pyproject.toml": "[project]\nname = 'x'\n",
    }
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    (run,) = discover([Path("training_configs/llama.yaml")])[0]
    assert run.name == "README.md:5" and run.accelerate is not None


def test_a_missing_readme_config_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"README.md": "```bash\npython train.py configs/gone.yaml\n```\n", "train.py": TRAIN_PY}
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    found = [(f.rule, f.severity, f.location.line) for f in run_check([Path(".")], CheckOptions()).findings]
    assert ("GA004", "warning", 2) in found


def test_a_readme_holds_no_suppression_directive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a README whose text shows the directive (a `# gpu-advise: ignore-file[GA004]` line, a Markdown heading)
    # neither suppresses the README's own finding nor is reported as an unused directive (GA900)
    readme = (
        "# gpu-advise: ignore-file[GA004] silences a file\n\n"
        "```bash\naccelerate launch --config_file missing.yaml train.py\n```\n"
    )
    write(tmp_path, {"README.md": readme, "train.py": TRAIN_PY})
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions())
    assert ("GA004", 4) in [(f.rule, f.location.line) for f in result.findings]
    assert "GA900" not in {f.rule for f in result.findings}


def test_what_is_no_placeholder() -> None:
    # a here-document and a redirection keep their meaning; a name holding 'xxx' inside a word is a name
    text = (
        "```bash\ncat <<EOF > ds.json\n{}\nEOF\n"
        "torchrun --nproc_per_node=2 train.py --deepspeed ds.json --model_name_or_path org/roberta-xxxlarge"
        " < input.txt > out.log\n```\n"
    )
    doc = read_markdown_launch(Path("README.md"), text)
    (c,) = doc.data.commands
    assert c.script_args["model_name_or_path"].text == "org/roberta-xxxlarge"
    assert c.script_args["deepspeed"].text == "ds.json"
    assert [w.path for w in doc.data.written] == ["ds.json", "out.log"]


def test_an_indented_prompt() -> None:
    (c,) = commands("```console\n  $ deepspeed --num_gpus 2 train.py\n  done.\n```\n")
    assert c.launcher == "deepspeed" and (c.span.line, c.span.col) == (2, 5)
