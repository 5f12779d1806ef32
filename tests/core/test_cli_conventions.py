"""What users of ruff and pre-commit expect from a command line: --version, -h, colour rules,
a concise format, fix counts that --fix keeps, refused flags instead of ignored ones."""

from __future__ import annotations

import json
import os
import pty
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from advisor.cli import app
from tests.conftest import write_files

runner = CliRunner()
ESC = "\x1b["

# GA203 (prefetch without workers, a safe fix) and GA101 (the effective batch against the declared
# 16, an unsafe fix that changes training) in one project
PROJECT = {
    ".gpu-advise.toml": '[[runs]]\npath = "launch.sh"\neffective-batch = 16\n',
    "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 4 train.py args.yaml\n",
    "train.py": "print('train')\n",
    "args.yaml": "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n"
    "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n",
}


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    if hasattr(group, "commands"):  # a group (typer vendors its own click)
        for name, command in group.commands.items():
            out += _commands(command, (*prefix, name))
    return out


def _cli(cwd: Path, *args: str, tty: bool = False, **env: str) -> tuple[int, str]:
    """The CLI in its own process, its stdout a pipe or a terminal (a pseudo-terminal)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "GITHUB_ACTIONS")}
    environ |= {"TERM": "xterm-256color", **env}
    cmd = [sys.executable, "-m", "advisor", *args]
    if not tty:
        proc = subprocess.run(cmd, cwd=cwd, env=environ, capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stdout + proc.stderr
    leader, follower = pty.openpty()
    import fcntl
    import termios

    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen(cmd, cwd=cwd, env=environ, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is done writing
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=120), b"".join(chunks).decode(errors="replace")


def test_version_on_the_app_and_every_command() -> None:
    for command in _commands(typer.main.get_command(app)):
        result = runner.invoke(app, [*command, "--version"])
        assert result.exit_code == 0, (command, result.output)
        assert re.fullmatch(r"gpu-advise \S+\n", result.stdout), (command, result.stdout)


def test_dash_h_and_help_on_the_app_and_every_command() -> None:
    commands = _commands(typer.main.get_command(app))
    assert ("check",) in commands and ("hardware", "detect") in commands and len(commands) > 10
    for command in commands:
        for flag in ("-h", "--help"):
            result = runner.invoke(app, [*command, flag])
            assert result.exit_code == 0, (command, flag, result.output)
            assert "Usage" in result.stdout, (command, flag)


@pytest.mark.parametrize(
    ("tty", "args", "env", "coloured"),
    [
        (False, [], {}, False),  # piped: plain
        (False, [], {"FORCE_COLOR": "1"}, True),
        (False, ["--color", "always"], {}, True),
        (True, [], {}, True),  # a terminal: colour
        (True, [], {"NO_COLOR": "1"}, False),
        (True, [], {"TERM": "dumb"}, False),
        (True, ["--color", "never"], {}, False),
        (True, ["--no-color"], {"FORCE_COLOR": "1"}, False),
        (True, ["--color", "always"], {"NO_COLOR": "1"}, True),  # the explicit option beats the variable
    ],
)
def test_colour_rules(
    tmp_path: Path, tty: bool, args: list[str], env: dict[str, str], coloured: bool
) -> None:
    write_files(tmp_path, PROJECT)
    code, out = _cli(tmp_path, "check", *args, ".", tty=tty, **env)
    assert code == 1, out
    assert "GA203" in out
    assert (ESC in out) is coloured, out


def test_concise_format_is_one_line_per_finding_with_the_first_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path, PROJECT)
    monkeypatch.chdir(tmp_path)
    full = json.loads(runner.invoke(app, ["check", "--format", "json", "."]).stdout)["findings"]
    assert {f["rule"] for f in full} >= {"GA101", "GA203"}
    result = runner.invoke(app, ["check", "--format", "concise", "."])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    finding_lines = lines[:-1]  # then one summary line, as ruff prints
    assert len(finding_lines) == len(full)
    for line, f in zip(finding_lines, full, strict=True):
        prefix = f"{f['file']}:{f['line']}:{f['column']}: {f['rule']} "
        assert line.startswith(prefix), (line, prefix)
        sentence = line.removeprefix(prefix)
        message = " ".join(f["message"].split())
        assert message.startswith(sentence) and sentence
        if f["rule"] == "GA101":  # several sentences: only the first is kept
            assert len(sentence) < len(message) and sentence.endswith(":") is False


def test_statistics_count_safe_and_unsafe_fixes_and_fix_applies_the_safe_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path, PROJECT)
    monkeypatch.chdir(tmp_path)
    rows = json.loads(runner.invoke(app, ["check", "--statistics", "--format", "json", "."]).stdout)
    by_code = {r["code"]: r for r in rows}
    assert by_code["GA203"]["safe_fixes"] == 1 and by_code["GA203"]["unsafe_fixes"] == 0
    assert by_code["GA101"]["safe_fixes"] == 0 and by_code["GA101"]["unsafe_fixes"] == 1
    safe = sum(r["safe_fixes"] for r in rows)
    text = runner.invoke(app, ["check", "--statistics", "."]).stdout
    assert re.search(r"GA203\s+\[\*\]", text) and re.search(r"GA101\s+\[-\]", text)

    before = {
        f["rule"]
        for f in json.loads(runner.invoke(app, ["check", "--format", "json", "."]).stdout)["findings"]
    }
    runner.invoke(app, ["check", "--fix", "."])
    after = json.loads(runner.invoke(app, ["check", "--format", "json", "."]).stdout)["findings"]
    fixed = before - {f["rule"] for f in after}
    assert len(fixed) == safe and "GA203" in fixed
    assert "GA101" in {f["rule"] for f in after}  # unsafe: left for --unsafe-fixes


def test_estimate_for_runs_refuses_the_flags_that_only_describe_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path, PROJECT)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["estimate", ".", "--gpus", "4", "--strategy", "ddp"])
    assert result.exit_code == 2
    assert "--gpus" in result.stderr and "--strategy" in result.stderr


def _safetensors(path: Path, tensors: dict[str, list[int]]) -> None:
    header: dict[str, object] = {}
    offset = 0
    for name, shape in tensors.items():
        size = 2
        for d in shape:
            size *= d
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def test_check_never_imports_torch_for_a_local_model_of_unknown_type(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 2 train.py args.yaml\n",
            "train.py": "print('train')\n",
            "args.yaml": "model_name_or_path: ./my-model\noutput_dir: out\nper_device_train_batch_size: 2\n",
            "my-model/config.json": json.dumps(
                {"model_type": "brand-new-arch", "hidden_size": 64, "num_hidden_layers": 2}
            ),
        },
    )
    _safetensors(tmp_path / "my-model" / "model.safetensors", {"w1": [64, 64], "w2": [64, 128]})
    code = (
        "import sys, json\n"
        "sys.argv = ['gpu-advise', 'check', '--format', 'json', '.']\n"
        "from advisor.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers'))\n"
        "print('\\nMODULES ' + json.dumps(heavy))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    report, _, modules = proc.stdout.rpartition("\nMODULES ")
    assert json.loads(modules) == [], proc.stderr
    runs = json.loads(report)["runs"]
    assert runs and runs[0]["peak_vram_gib"] is None  # not modelled on the check path
    note = " ".join(runs[0]["notes"])
    assert "brand-new-arch" in note and f"{64 * 64 + 64 * 128:,}" in note  # the safetensors count


def test_plan_shows_written_keys_hides_empty_rows_and_marks_the_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\n"
            "accelerate launch --config_file acc.yaml --num_processes 4 train.py sft.yaml\n",
            "acc.yaml": "distributed_type: MULTI_GPU\nnum_processes: 8\n",
            "train.py": "print('train')\n",
            "sft.yaml": "output_dir: out\nmax_length: 1024\nper_device_train_batch_size: 2\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plan", "launch.sh"])
    assert result.exit_code == 0, result.output
    rows = result.stdout.splitlines()
    keyed = {line.split()[0]: line for line in rows if line.startswith("    ") and line.split()}
    assert "max_length" in keyed and "sft.yaml:2:13" in keyed["max_length"]
    assert "training.max_seq_length" not in keyed  # the key as written, not the fact's name
    wins = [line for line in rows if "<- wins" in line]
    loses = [line for line in rows if "<- loses" in line]
    assert any("launch.sh:2:" in line and line.split()[1] == "4" for line in wins), wins
    assert any("acc.yaml:2:" in line and line.split()[0] == "8" for line in loses), loses

    everything = runner.invoke(app, ["plan", "--all", "launch.sh"]).stdout.splitlines()
    assert len(everything) > len(rows)
    empty = [line for line in everything if line.startswith("    ") and " None " in f"{line} "]
    assert empty and not [line for line in rows if line.startswith("    ") and " None " in f"{line} "]
    as_json = json.loads(runner.invoke(app, ["plan", "--format", "json", "launch.sh"]).stdout)
    assert as_json[0]["values"]["training.max_seq_length"]["written"] == "max_length"


def test_plan_shows_a_switch_under_its_own_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flag written without a value (`--bf16`) is its own key, not the word before it (OpenRLHF's
    `--pretrain meta-llama/Meta-Llama-3-8B --bf16` showed a row `meta-llama/Meta-Llama-3-8B True`); a
    negative number after a flag is still that flag's value."""
    write_files(
        tmp_path,
        {
            "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --model_name_or_path m/x --bf16"
            " --max_grad_norm -1\n",
            "train.py": "print('train')\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    rows = runner.invoke(app, ["plan", "run.sh"]).stdout.splitlines()
    keyed = {line.split()[0]: line.split()[1] for line in rows if line.startswith("    ") and line.split()}
    assert keyed.get("--bf16") == "True" and "m/x" not in keyed
    assert keyed.get("--max_grad_norm") == "-1"


def test_rule_estimate_and_plan_use_rich_on_a_terminal_and_plain_text_when_piped(tmp_path: Path) -> None:
    code, piped = _cli(tmp_path, "rule", "GA203")
    assert code == 0 and "## What it does" in piped and ESC not in piped  # the Markdown of docs/rules
    code, shown = _cli(tmp_path, "rule", "GA203", tty=True)
    assert code == 0 and ESC in shown and "## What it does" not in shown  # rendered by rich
    assert "What it does" in shown

    write_files(tmp_path, PROJECT)
    code, piped = _cli(tmp_path, "estimate", ".")
    assert code == 0 and ESC not in piped
    code, shown = _cli(tmp_path, "estimate", ".", tty=True)
    assert code == 0 and ESC in shown
    code, piped = _cli(tmp_path, "plan", ".")
    assert code == 0 and ESC not in piped and "args.yaml:" in piped
    code, shown = _cli(tmp_path, "plan", ".", tty=True)
    assert code == 0 and ESC in shown and "args.yaml:" in shown
