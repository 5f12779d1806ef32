"""The rename fix of GA005 / GA007 (issue 18 item 9c): `warmup_ratio` -> `warmup_steps` and the other
value-preserving renames of advisor/facts/key_renames.py, through the CLI, with the file's bytes after.

Safe in GA007 (the release still reads the old key and copies it into the new one), unsafe in GA005 (the
file fails to parse today: the fix changes what runs). No fix where the rename would change the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.core.findings import Edit
from advisor.engine.fix import FixError, load_source, plan_edit
from tests.conftest import write_files
from tests.gate.conftest import cli

TRAIN = "# warm-up\noutput_dir: out\nwarmup_ratio: 0.03  # 3% of the steps\nper_device_train_batch_size: 4\n"
RENAMED = TRAIN.replace("warmup_ratio: 0.03", "warmup_steps: 0.03")


def _json(args: list[str], root: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    result = cli(["check", ".", "--format", "json", *args], root, monkeypatch)
    return json.loads(result.stdout)["findings"]


def test_deprecated_warmup_ratio_is_renamed_by_a_safe_fix(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, {"requirements.txt": "transformers==5.6.2\n", "train.yaml": TRAIN})
    args = ["--select", "GA007", "--fail-on", "info"]
    (finding,) = _json(args, tmp_path, monkeypatch)
    assert (finding["rule"], finding["line"], finding["fix"]["safety"]) == ("GA007", 3, "safe")
    assert finding["fix"]["edits"] == [
        {"file": "train.yaml", "key": "/warmup_ratio", "line": None, "column": None, "delete": False}
        | {"rename": "warmup_steps"}
    ]

    diff = cli(["check", ".", *args, "--diff"], tmp_path, monkeypatch)
    assert "-warmup_ratio: 0.03  # 3% of the steps\n+warmup_steps: 0.03  # 3% of the steps\n" in diff.stdout
    assert (tmp_path / "train.yaml").read_text() == TRAIN  # --diff writes nothing

    fixed = cli(["check", ".", *args, "--fix"], tmp_path, monkeypatch)
    assert fixed.exit_code == 0, fixed.output  # the re-check finds nothing left
    assert (tmp_path / "train.yaml").read_text() == RENAMED  # comments, order and the value kept
    again = cli(["check", ".", *args, "--fix"], tmp_path, monkeypatch)
    assert again.exit_code == 0 and (tmp_path / "train.yaml").read_text() == RENAMED


def test_removed_warmup_ratio_needs_unsafe_fixes(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, {"requirements.txt": "transformers==5.24.0\n", "train.yaml": TRAIN})
    args = ["--select", "GA005"]
    (finding,) = _json(args, tmp_path, monkeypatch)
    assert finding["fix"]["safety"] == "unsafe" and finding["fix"]["edits"][0]["rename"] == "warmup_steps"

    alone = cli(["check", ".", *args, "--fix"], tmp_path, monkeypatch)
    assert alone.exit_code == 1 and (tmp_path / "train.yaml").read_text() == TRAIN
    fixed = cli(["check", ".", *args, "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert fixed.exit_code == 0, fixed.output
    assert (tmp_path / "train.yaml").read_text() == RENAMED


@pytest.mark.parametrize(
    ("pin", "train", "why"),
    [
        # 1.5 is not a ratio: warmup_steps reads it as one step (5.24.0 training_args.py:2158-2159)
        ("transformers==5.24.0", "output_dir: out\nwarmup_ratio: 1.5\n", "not a ratio in [0, 1)"),
        # both set: in 5.0-5.14 the ratio overrides warmup_steps (5.14.1 training_args.py:1487-1489)
        ("transformers==5.6.2", "output_dir: out\nwarmup_ratio: 0.1\nwarmup_steps: 10\n", "conflict"),
        ("transformers==5.24.0", "output_dir: out\nwarmup_ratio: 0.1\nwarmup_steps: 0\n", "conflict"),
        # a replacement with another meaning is named, never written
        ("transformers==5.24.0", "output_dir: out\nper_gpu_train_batch_size: 4\n", ""),
    ],
    ids=["ratio-above-1", "both-deprecated", "both-removed", "other-meaning"],
)
def test_no_rename_where_it_would_change_the_run(
    pin: str, train: str, why: str, tmp_path: Path, monkeypatch
) -> None:
    write_files(tmp_path, {"requirements.txt": pin + "\n", "train.yaml": train})
    args = ["--select", "GA005,GA007", "--fail-on", "info"]
    (finding,) = _json(args, tmp_path, monkeypatch)
    assert finding["fix"] is None
    assert why in finding["message"]
    cli(["check", ".", *args, "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert (tmp_path / "train.yaml").read_text() == train


def test_no_finding_and_no_fix_at_a_4x_pin(tmp_path: Path, monkeypatch) -> None:
    """transformers 4.57 reads warmup_ratio, and its warmup_steps is an int (4.57.1 training_args.py:942)."""
    write_files(tmp_path, {"requirements.txt": "transformers==4.57.1\n", "train.yaml": TRAIN})
    result = cli(["check", ".", "--select", "GA005,GA007", "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert result.exit_code == 0 and (tmp_path / "train.yaml").read_text() == TRAIN


def test_other_verified_renames_and_json_and_quoted_keys(tmp_path: Path, monkeypatch) -> None:
    json_text = '{\n  "output_dir": "out",\n  "evaluation_strategy": "steps",\n  "no_cuda": true\n}\n'
    yaml_text = "output_dir: out\n'evaluation_strategy': steps\n"
    write_files(
        tmp_path,
        {"requirements.txt": "transformers==4.45.2\n", "args.json": json_text, "train.yaml": yaml_text},
    )
    args = ["--select", "GA007", "--fail-on", "info", "--fix"]
    assert cli(["check", ".", *args], tmp_path, monkeypatch).exit_code == 0
    after = (tmp_path / "args.json").read_text()
    renamed = json_text.replace('"evaluation_strategy"', '"eval_strategy"')
    assert after == renamed.replace('"no_cuda"', '"use_cpu"')
    assert json.loads(after) == {"output_dir": "out", "eval_strategy": "steps", "use_cpu": True}
    assert (tmp_path / "train.yaml").read_text() == "output_dir: out\n'eval_strategy': steps\n"


def test_trl_max_seq_length(tmp_path: Path, monkeypatch) -> None:
    sft = (
        "model_name_or_path: Qwen/Qwen2-0.5B\ndataset_name: trl-lib/Capybara\noutput_dir: out\n"
        "max_seq_length: 2048\npacking: true\n"
    )
    write_files(tmp_path, {"requirements.txt": "trl==0.19.1\ntransformers==4.53.3\n", "sft.yaml": sft})
    args = ["--select", "GA007", "--fail-on", "info", "--fix"]
    assert cli(["check", ".", *args], tmp_path, monkeypatch).exit_code == 0
    assert (tmp_path / "sft.yaml").read_text() == sft.replace("max_seq_length", "max_length")


def test_rename_refuses_what_would_change_more_than_the_key(tmp_path: Path) -> None:
    cases = {
        "both.yaml": "a: 1\nwarmup_ratio: 0.1\nwarmup_steps: 3\n",  # the new key is there already
        # the new key may come through the merge key
        "merge.yaml": "base: &b {warmup_steps: 3}\nrun:\n  <<: *b\n  warmup_ratio: 0.1\n",
        "twice.yaml": "warmup_ratio: 0.1\nwarmup_ratio: 0.2\n",
        "both.json": '{"warmup_ratio": 0.1, "warmup_steps": 3}',
    }
    write_files(tmp_path, cases)
    for name in cases:
        key = "/run/warmup_ratio" if name == "merge.yaml" else "/warmup_ratio"
        path = tmp_path / name
        with pytest.raises(FixError):
            plan_edit(Edit(path, key, None, rename="warmup_steps"), load_source(path))


def test_a_rule_file_with_a_bad_rename_is_refused_at_load(tmp_path: Path, monkeypatch) -> None:
    rule = (
        "code: ORG001\nname: bad-rename\nseverity: warning\nsummary: s\nscope: document\n"
        "for_each: document.removed_keys\nat: item\nmessage: m\n"
        "fix:\n  rename: {item: 'warmup steps!'}\ndocs: d\n"
    )
    write_files(tmp_path, {"policy/ORG001-bad-rename.yaml": rule, "train.yaml": TRAIN})
    result = cli(["check", ".", "--rules", "policy"], tmp_path, monkeypatch)
    assert result.exit_code == 2
    assert "ORG001-bad-rename.yaml:10" in result.output and "fix.rename.item" in result.output
    assert "Traceback" not in result.output
