"""Defects 5 and 6 of issue 9: values that crashed the tool, and `key:<TAB>value`.

Each reproduction from the issue runs the whole CLI in this process and must give a finding at the
value (GA001, or the rule's own) or a one-line error, never a traceback, and never exit 1 for what is
really a crash. An internal error, if one ever happens, exits 3 with one line asking for a report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import advisor.cli as cli
from advisor.cli import app

MODEL = "meta-llama/Llama-3.1-8B"  # in the shipped model catalog: the estimator runs offline


def _invoke(args: list[str], root: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GPU_ADVISE_DEBUG", raising=False)
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.exit_code != cli.EXIT_INTERNAL, result.output
    return result


def _findings(result: Any) -> set[tuple[str, str, int, int]]:
    report = json.loads(result.stdout)
    return {(f["rule"], f["file"], f["line"], f["column"]) for f in report["findings"]}


def _at(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first ``needle`` in ``text``."""
    i = text.index(needle)
    return text.count("\n", 0, i) + 1, i - (text.rfind("\n", 0, i) + 1) + 1


def _write(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    "value", ["!!float abc", "!!int 0b2", "!!timestamp 2001-99-99", "!!timestamp 2001-12-14x", "!!bool maybe"]
)
def test_yaml_tag_that_safe_load_cannot_construct(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = f"output_dir: out\nper_device_train_batch_size: 2\nlearning_rate: {value}\n"
    _write(tmp_path, {"args.yaml": text})
    result = _invoke(["check", "--format", "json", "args.yaml"], tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert _findings(result) == {("GA001", "args.yaml", *_at(text, value))}
    assert _invoke(["check", "--exit-zero", "args.yaml"], tmp_path, monkeypatch).exit_code == 0
    assert _invoke(["plan", "args.yaml"], tmp_path, monkeypatch).exit_code == 0


def test_5000_digit_integer_in_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    digits = "9" * 5000
    text = f"output_dir: out\nper_device_train_batch_size: {digits}\n"
    _write(tmp_path, {"args.yaml": text})
    result = _invoke(["check", "--format", "json", "args.yaml"], tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert _findings(result) == {("GA001", "args.yaml", *_at(text, digits))}


def test_5000_digit_integer_in_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    digits = "9" * 5000
    text = '{"train_micro_batch_size_per_gpu": 2, "train_batch_size": ' + digits + "}\n"
    _write(tmp_path, {"ds_config.json": text})
    result = _invoke(["check", "--format", "json", "ds_config.json"], tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert _findings(result) == {("GA001", "ds_config.json", *_at(text, digits))}


@pytest.mark.parametrize("value", ["99999999999999999999", ".inf", "-.inf", ".nan"])
def test_out_of_range_number_is_refused_where_it_is_written(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = f"output_dir: out\nper_device_train_batch_size: 2\nmax_steps: {value}\n"
    _write(tmp_path, {"args.yaml": text})
    result = _invoke(["check", "--format", "json", "args.yaml"], tmp_path, monkeypatch)
    assert ("GA001", "args.yaml", *_at(text, value)) in _findings(result)
    assert result.exit_code == 1


DS_MICRO_ZERO = '{"train_batch_size": 24, "train_micro_batch_size_per_gpu": 0}\n'


@pytest.mark.parametrize("command", ["check", "plan"])
def test_deepspeed_micro_batch_zero(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, {"ds_config.json": DS_MICRO_ZERO})
    if command == "plan":
        assert _invoke(["plan", "ds_config.json"], tmp_path, monkeypatch).exit_code == 0
        return
    result = _invoke(["check", "--format", "json", "ds_config.json"], tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert ("GA001", "ds_config.json", *_at(DS_MICRO_ZERO, "0}")) in _findings(result)


@pytest.mark.parametrize(
    ("key", "value"),
    [("train_batch_size", "-8"), ("gradient_accumulation_steps", "0")],
)
def test_deepspeed_batch_values_must_be_positive(
    key: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = '{"train_micro_batch_size_per_gpu": 2, "' + key + '": ' + value + "}\n"
    _write(tmp_path, {"ds_config.json": text})
    result = _invoke(["check", "--format", "json", "ds_config.json"], tmp_path, monkeypatch)
    assert ("GA001", "ds_config.json", *_at(text, value + "}")) in _findings(result)


def test_accelerate_gpu_ids_minus_one_on_a_real_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: -1\n"
    _write(tmp_path, {"accelerate.yaml": text})
    args = ["check", "--format", "json", "-H", "4xH100-NVL", "accelerate.yaml"]
    result = _invoke(args, tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert ("GA001", "accelerate.yaml", *_at(text, "-1")) in _findings(result)


@pytest.mark.parametrize("command", ["check", "plan", "estimate"])
def test_tensor_parallel_size_inf(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"
        "parallelism_config:\n  parallelism_config_tp_size: .inf\n"
    )
    _write(tmp_path, {"accelerate.yaml": text})
    if command != "check":
        result = _invoke([command, "-H", "4xH100-NVL", "accelerate.yaml"], tmp_path, monkeypatch)
        assert result.exit_code == 0
        return
    args = ["check", "--format", "json", "-H", "4xH100-NVL", "accelerate.yaml"]
    result = _invoke(args, tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert ("GA001", "accelerate.yaml", *_at(text, ".inf")) in _findings(result)


def test_300_character_deepspeed_path_is_a_missing_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = "d" * 300 + ".json"
    launch = f"#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out --deepspeed {long}\n"
    args_yaml = f"output_dir: out\ndeepspeed: {long}\n"
    _write(tmp_path, {"run.sh": launch, "train.py": "print('hi')\n", "args.yaml": args_yaml})
    result = _invoke(["check", "--format", "json", "run.sh"], tmp_path, monkeypatch)
    assert ("GA004", "run.sh", *_at(launch, long)) in _findings(result)
    assert result.exit_code == 1
    result = _invoke(["check", "--format", "json", "args.yaml"], tmp_path, monkeypatch)
    assert ("GA004", "args.yaml", *_at(args_yaml, long)) in _findings(result)


def test_10001_unguarded_makedirs_is_no_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "".join(f"os.makedirs('d{i}')\n" for i in range(10_001))
    launch = "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out\n"
    _write(tmp_path, {"train.py": "import os\n" + body, "run.sh": launch})
    result = _invoke(["check", "--format", "json", "run.sh"], tmp_path, monkeypatch)
    assert result.exit_code == 0  # directory creation on every rank is the usual idiom: GA601 skips it
    assert "internal error" not in result.output


def test_thousands_of_writes_under_declared_flags_are_decided_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each `if args.xN:` is decided from the flag's store_true default, or from the launch line: the
    # script's declarations are indexed once (a walk per `if` took this check 69 s)
    flags = "".join(f"parser.add_argument('--x{i}', action='store_true')\n" for i in range(2_500))
    body = "".join(f"if args.x{i}:\n    open('f{i}', 'w')\n" for i in range(2_500))
    head = "import argparse\nparser = argparse.ArgumentParser()\n"
    train = head + flags + "args = parser.parse_args()\n" + body
    launch = "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out --x7\n"
    _write(tmp_path, {"train.py": train, "run.sh": launch})
    result = _invoke(["check", "--format", "json", "run.sh"], tmp_path, monkeypatch)
    written = [(line, col) for rule, file, line, col in _findings(result) if rule == "GA601"]
    assert written == [(train.splitlines().index("    open('f7', 'w')") + 1, 5)]


def test_thousands_of_unguarded_writes_give_a_bounded_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "".join(f"open('f{i}', 'w')\n" for i in range(3_000))
    launch = "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out\n"
    _write(tmp_path, {"train.py": body, "run.sh": launch})
    result = _invoke(["check", "--format", "json", "run.sh"], tmp_path, monkeypatch)
    assert result.exit_code == 1
    ga601 = sorted((line, col) for rule, file, line, col in _findings(result) if rule == "GA601")
    assert ga601 == [(i, 1) for i in range(1, 21)]  # the first 20 sites; the last one counts the rest


# -- the estimator's cases (advisor/facts/estimates.py, advisor/estimate/*: engineer H3a) -------------


@pytest.mark.parametrize(
    ("name", "files"),
    [
        (
            "max_steps 1e400",
            {"args.yaml": f"model_name_or_path: {MODEL}\noutput_dir: out\nmax_steps: 1e400\n"},
        ),
        ("max_steps .nan", {"args.yaml": f"model_name_or_path: {MODEL}\noutput_dir: out\nmax_steps: .nan\n"}),
        (
            "max_steps 1e400 in JSON",
            {"args.json": '{"model_name_or_path": "' + MODEL + '", "output_dir": "o", "max_steps": 1e400}'},
        ),
        (
            "401-digit reduce_bucket_size",
            {
                "args.yaml": f"model_name_or_path: {MODEL}\noutput_dir: out\ndeepspeed: ds.json\n",
                "ds.json": '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, '
                '"reduce_bucket_size": ' + "9" * 401 + "}}",
            },
        ),
        (
            "DeepSpeed micro batch 0",
            {
                "args.yaml": f"model_name_or_path: {MODEL}\noutput_dir: out\ndeepspeed: ds.json\n",
                "ds.json": DS_MICRO_ZERO,
            },
        ),
    ],
)
@pytest.mark.parametrize("command", ["estimate", "check"])
def test_estimator_values(
    name: str, files: dict[str, str], command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, files)
    seed = next(iter(files))
    result = _invoke([command, "-H", "1xH100", seed], tmp_path, monkeypatch)
    assert result.exit_code in (0, 1, 2), name


# -- key:<TAB>value (defect 6) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "output_dir: out\nper_device_train_batch_size:\t2\n",
        "output_dir: out\nper_device_train_batch_size: 2\t# two\n",
        "output_dir: out\nreport_to: [wandb,\tnone]\n",
    ],
)
def test_tab_that_the_pure_python_loader_refuses(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, {"args.yaml": text})
    result = _invoke(["check", "--format", "json", "args.yaml"], tmp_path, monkeypatch)
    assert result.exit_code == 1
    assert _findings(result) == {("GA001", "args.yaml", *_at(text, "\t"))}


def test_tabs_the_pure_loader_accepts_are_no_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = 'output_dir: out\nrun_name: "a\tb"\n# a\tcomment\nper_device_train_batch_size: 2 # x\ty\n'
    _write(tmp_path, {"args.yaml": text})
    result = _invoke(["check", "--format", "json", "args.yaml"], tmp_path, monkeypatch)
    assert not {f for f in _findings(result) if f[0] == "GA001"}


# -- internal errors ------------------------------------------------------------------------------


def _boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError("a bug\nspread over lines")


def test_internal_error_is_one_line_and_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, {"args.yaml": "output_dir: out\n"})
    monkeypatch.setattr("advisor.pipeline.check.run_check", _boom)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPU_ADVISE_DEBUG", raising=False)
    result = CliRunner().invoke(app, ["check", "--exit-zero", "args.yaml"])
    assert result.exit_code == 3
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-advise: internal error: RuntimeError")
    assert cli.ISSUES_URL in lines[0]


def test_debug_environment_reraises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, {"args.yaml": "output_dir: out\n"})
    monkeypatch.setattr("advisor.pipeline.check.run_check", _boom)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPU_ADVISE_DEBUG", "1")
    result = CliRunner().invoke(app, ["check", "args.yaml"])
    assert isinstance(result.exception, RuntimeError)


def test_keyboard_interrupt_exits_130_with_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, {"args.yaml": "output_dir: out\n"})

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("advisor.pipeline.check.run_check", interrupted)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["check", "args.yaml"])
    assert result.exit_code == 130
    assert "interrupted" in result.stderr


def test_main_outside_a_command_is_still_one_line(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.setattr(cli, "app", _boom)
    monkeypatch.delenv("GPU_ADVISE_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 3
    assert capsys.readouterr().err.count("\n") == 1


def test_a_failing_builtin_rule_is_internal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    launch = "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out\n"
    _write(tmp_path, {"train.py": "open('f', 'w')\n", "run.sh": launch})
    # items without the keys GA601's message reads make the rule fail inside the engine
    monkeypatch.setattr(
        "advisor.facts.training_script._bounded_side_effects",
        lambda facts, path: ([{"kind": "open_write"}], 0),
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPU_ADVISE_DEBUG", raising=False)
    result = CliRunner().invoke(app, ["check", "run.sh"])
    assert result.exit_code == 3
    assert "Traceback" not in result.output


def test_a_failing_user_rule_stays_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rule = (
        "code: XU001\nname: divides-by-zero\nseverity: warning\nsummary: x\n"
        "when: training.per_device_train_batch_size / 0 > 1\nat: training.per_device_train_batch_size\n"
        "message: x\ndocs: x\n"
    )
    _write(tmp_path, {"args.yaml": "output_dir: out\nper_device_train_batch_size: 2\n"})
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "XU001.yaml").write_text(rule)
    result = _invoke(["check", "--rules", "policies", "args.yaml"], tmp_path, monkeypatch)
    assert result.exit_code == 2


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--learning_rate", "inf"), ("--max_steps", "1e400"), ("--per_device_train_batch_size", "9" * 25)],
)
def test_launch_flag_that_types_to_an_absurd_number(
    flag: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launch = f"#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir out {flag} {value}\n"
    _write(tmp_path, {"run.sh": launch, "train.py": "from transformers import TrainingArguments\n"})
    result = _invoke(["check", "--format", "json", "run.sh"], tmp_path, monkeypatch)
    line, col = _at(launch, f" {value}\n")
    assert ("GA001", "run.sh", line, col + 1) in _findings(result)  # the value, after the space
    assert _invoke(["estimate", "run.sh"], tmp_path, monkeypatch).exit_code in (0, 1, 2)
