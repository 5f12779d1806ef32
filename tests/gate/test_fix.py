"""--fix, --unsafe-fixes and --diff: position edits on real corpus files (copied to tmp_path).

After a fix the finding is gone, every line the fix did not touch is byte-identical, JSON stays
valid JSON, a second --fix changes nothing, and a file that changed since it was read is left alone.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml

from advisor.core.document import Location
from advisor.core.findings import DELETE, Edit, Finding, Fix
from advisor.engine.fix import FixError, apply_fixes, load_source, plan_edit
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files
from tests.gate.conftest import cli

SEED_FILES = [
    # (corpus file, per-device, accumulation): configs tuned with accumulation, launched on 4 GPUs
    ("training_args/allenai__open-instruct__configs__train_configs__sft__default.yaml", 2, 8),
    ("training_args/huggingface__open-r1__recipes__OpenR1-Distill-7B__sft__config_distill.yaml", 2, 8),
    ("training_args/hiyouga__LLaMA-Factory__examples__train_lora__qwen3_lora_sft.yaml", 1, 8),
    ("training_args/huggingface__alignment-handbook__recipes__zephyr-7b-gemma__sft__config_full.yaml", 4, 4),
]


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(a) == len(b), "a set must not add or remove lines"
    return [(x, y) for x, y in zip(a, b, strict=True) if x != y]


@pytest.mark.parametrize(
    ("name", "per_device", "accum"), SEED_FILES, ids=[s[0].split("__")[-1] for s in SEED_FILES]
)
def test_unsafe_fix_of_the_seed_scenario_on_corpus_yaml(
    name: str, per_device: int, accum: int, corpus: Path, tmp_path: Path, monkeypatch
) -> None:
    original = (corpus / name).read_text(encoding="utf-8")
    config = tmp_path / Path(name).name
    config.write_text(original, encoding="utf-8")
    baseline = per_device * accum  # tuned on one card
    write_files(
        tmp_path,
        {
            "launch.sh": f"#!/bin/bash\naccelerate launch --num_processes 4 train.py {config.name}\n",
            "train.py": "print('train')\n",
            ".gpu-advise.toml": f'[[runs]]\npath = "launch.sh"\neffective-batch = {baseline}\n',
        },
    )
    before = cli(["check", ".", "--select", "GA101"], tmp_path, monkeypatch)
    assert before.exit_code == 1 and "GA101" in before.stdout
    # --fix alone leaves an unsafe fix alone
    assert cli(["check", ".", "--select", "GA101", "--fix"], tmp_path, monkeypatch).exit_code == 1
    assert config.read_text(encoding="utf-8") == original

    fixed = cli(["check", ".", "--select", "GA101", "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert fixed.exit_code == 0, fixed.output  # the re-check reports what remains: nothing
    after = config.read_text(encoding="utf-8")
    changed = _changed_lines(original, after)
    assert len(changed) == 1
    old, new = changed[0]
    assert old.startswith("gradient_accumulation_steps:") and new.startswith("gradient_accumulation_steps:")
    assert new == old.replace(f": {accum}", f": {accum // 4}", 1)
    assert yaml.safe_load(after)["gradient_accumulation_steps"] == accum // 4

    # idempotent: a second run changes nothing
    again = cli(["check", ".", "--select", "GA101", "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert again.exit_code == 0
    assert config.read_text(encoding="utf-8") == after


def test_fix_of_launch_script_words(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    """FastChat passes the batch as flags: the fix replaces the word `16`, and a policy fix
    rewrites `--nproc_per_node=4` in its `--flag=value` form."""
    original = (corpus / "launch/lm-sys__FastChat__scripts__train_vicuna_7b.sh").read_text(encoding="utf-8")
    script = tmp_path / "train.sh"
    script.write_text(original, encoding="utf-8")
    script.chmod(0o755)
    rule = (
        "code: ORG100\nname: at-most-two-gpus\nseverity: error\nsummary: policy\n"
        "when: launch.nproc_per_node is not None and launch.nproc_per_node > 2\nat: launch.nproc_per_node\n"
        "message: at most 2 GPUs per job\nfix: {set: {launch.nproc_per_node: 2}, safety: safe}\ndocs: d\n"
    )
    write_files(
        tmp_path,
        {
            "policy/ORG100.yaml": rule,
            ".gpu-advise.toml": '[[runs]]\npath = "train.sh"\neffective-batch = 32\n',
        },
    )
    result = cli(["check", "train.sh", "--select", "GA101", "--fix", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    after = script.read_text(encoding="utf-8")
    changed = _changed_lines(original, after)
    assert changed == [
        ("    --gradient_accumulation_steps 16 \\\n", "    --gradient_accumulation_steps 4 \\\n")
    ]
    assert stat.S_IMODE(script.stat().st_mode) == 0o755  # the atomic write keeps the mode

    policy = cli(
        ["check", "train.sh", "--rules", "policy", "--select", "ORG", "--fix"], tmp_path, monkeypatch
    )
    assert policy.exit_code == 0, policy.output
    final = script.read_text(encoding="utf-8")
    assert _changed_lines(after, final) == [
        (
            "torchrun --nproc_per_node=4 --master_port=20001 fastchat/train/train_mem.py \\\n",
            "torchrun --nproc_per_node=2 --master_port=20001 fastchat/train/train_mem.py \\\n",
        )
    ]


def test_json_set_and_delete_on_every_corpus_deepspeed_file(
    corpus: Path, tmp_path: Path, monkeypatch
) -> None:
    rules = {
        "ORG201.yaml": (
            "code: ORG201\nname: steps-per-print\nseverity: warning\nsummary: s\n"
            "when: deepspeed.steps_per_print is not None and deepspeed.steps_per_print != 7\n"
            "at: deepspeed.steps_per_print\nmessage: m\nfix: {set: {deepspeed.steps_per_print: 7}}\ndocs: d\n"
        ),
        "ORG202.yaml": (
            "code: ORG202\nname: no-wall-clock\nseverity: warning\nsummary: s\n"
            "when: deepspeed.wall_clock_breakdown is not None\n"
            "at: deepspeed.wall_clock_breakdown\nmessage: m\n"
            "fix: {delete: [deepspeed.wall_clock_breakdown]}\ndocs: d\n"
        ),
    }
    write_files(tmp_path / "policy", rules)
    exercised = 0
    for src in sorted((corpus / "deepspeed").iterdir()):
        work = tmp_path / "p" / src.name
        work.parent.mkdir(exist_ok=True)
        for old in work.parent.iterdir():
            old.unlink()
        original = src.read_text(encoding="utf-8")
        work.write_text(original, encoding="utf-8")
        result = cli(
            ["check", src.name, "--rules", "../policy", "--select", "ORG", "--fix", "--format", "json"],
            work.parent,
            monkeypatch,
        )
        assert result.exit_code in (0, 1), result.output
        after = work.read_text(encoding="utf-8")
        remaining = {f["rule"] for f in json.loads(result.stdout)["findings"]}
        assert not remaining, (src.name, remaining)
        if after == original:
            continue
        exercised += 1
        strict_before = _strict(original)
        if strict_before is not None:
            data = json.loads(after)  # still strict JSON
            expected = dict(strict_before)
            expected.pop("wall_clock_breakdown", None)
            if "steps_per_print" in expected:
                expected["steps_per_print"] = 7
            assert data == expected, src.name
        kept = [
            line
            for line in original.splitlines(keepends=True)
            if "wall_clock_breakdown" not in line and "steps_per_print" not in line
        ]
        now = [line for line in after.splitlines(keepends=True) if "steps_per_print" not in line]
        # every untouched line is byte-identical (a line that lost its trailing comma is the exception)
        assert [x.rstrip(",\n") for x in kept] == [x.rstrip(",\n") for x in now], src.name
        assert sum(1 for x, y in zip(kept, now, strict=True) if x != y) <= 1, src.name
    assert exercised >= 10


def _strict(text: str) -> dict | None:
    try:
        return json.loads(text)
    except ValueError:
        return None


def test_yaml_delete_keeps_comments_quoting_and_order(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    rule = (
        "code: ORG300\nname: no-downcast\nseverity: warning\nsummary: s\n"
        "when: accelerate.downcast_bf16 is not None\nat: accelerate.downcast_bf16\nmessage: m\n"
        "fix: {delete: [accelerate.downcast_bf16]}\ndocs: d\n"
    )
    write_files(tmp_path / "policy", {"ORG300.yaml": rule})
    exercised = 0
    for src in sorted((corpus / "accelerate").iterdir()):
        original = src.read_text(encoding="utf-8")
        if "downcast_bf16" not in original:
            continue
        work = tmp_path / "p" / src.name
        work.parent.mkdir(exist_ok=True)
        work.write_text(original, encoding="utf-8")
        result = cli(
            ["check", src.name, "--rules", "../policy", "--select", "ORG", "--fix"], work.parent, monkeypatch
        )
        assert result.exit_code == 0, (src.name, result.output)
        after = work.read_text(encoding="utf-8")
        expected = [
            line for line in original.splitlines(keepends=True) if not line.startswith("downcast_bf16:")
        ]
        assert after.splitlines(keepends=True) == expected, src.name
        data = yaml.safe_load(original)
        data.pop("downcast_bf16")
        assert yaml.safe_load(after) == data
        work.unlink()
        exercised += 1
    assert exercised >= 10


def test_insert_a_missing_key_with_the_file_indentation(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    name = "training_args/huggingface__alignment-handbook__recipes__zephyr-7b-beta__sft__config_full.yaml"
    original = (corpus / name).read_text(encoding="utf-8")
    assert "dataloader_num_workers" not in original
    rule = (
        "code: ORG400\nname: set-workers\nseverity: warning\nsummary: s\n"
        "when: training.dataloader_num_workers == 0\nat: training.per_device_train_batch_size\nmessage: m\n"
        "fix: {set: {training.dataloader_num_workers: 2}}\ndocs: d\n"
    )
    write_files(tmp_path, {"policy/ORG400.yaml": rule, "config.yaml": original})
    result = cli(
        ["check", "config.yaml", "--rules", "policy", "--select", "ORG", "--fix"], tmp_path, monkeypatch
    )
    assert result.exit_code == 0, result.output
    after = (tmp_path / "config.yaml").read_text(encoding="utf-8")
    assert after.startswith(original if original.endswith("\n") else original + "\n")
    assert after[len(original) :].strip() == "dataloader_num_workers: 2"
    assert yaml.safe_load(after)["dataloader_num_workers"] == 2


def test_ga203_safe_fix_keeps_everything_else(tmp_path: Path, monkeypatch) -> None:
    text = (
        "# tuned on one box\n"
        "output_dir: 'out'   # quoted, with a comment\n"
        "dataloader_num_workers: 0\n"
        "dataloader_prefetch_factor: 2  # prefetch\n"
        'lr_scheduler_type: "cosine"\n'
        "optim_args:\n"
        "    betas: [0.9, 0.95]\n"
    )
    write_files(tmp_path, {"args.yaml": text})
    diff = cli(["check", ".", "--select", "GA203", "--diff"], tmp_path, monkeypatch)
    assert diff.exit_code == 1
    assert "-dataloader_prefetch_factor: 2  # prefetch\n" in diff.stdout
    assert (tmp_path / "args.yaml").read_text(encoding="utf-8") == text
    fixed = cli(["check", ".", "--select", "GA203", "--fix"], tmp_path, monkeypatch)
    assert fixed.exit_code == 0
    assert (tmp_path / "args.yaml").read_text(encoding="utf-8") == text.replace(
        "dataloader_prefetch_factor: 2  # prefetch\n", ""
    )


def test_crlf_and_bom_survive(tmp_path: Path, monkeypatch) -> None:
    text = "\ufeffdataloader_num_workers: 0\r\ndataloader_prefetch_factor: 2\r\noutput_dir: out\r\n"
    (tmp_path / "args.yaml").write_bytes(text.encode("utf-8"))
    assert cli(["check", ".", "--select", "GA203", "--fix"], tmp_path, monkeypatch).exit_code == 0
    assert (
        tmp_path / "args.yaml"
    ).read_bytes() == "\ufeffdataloader_num_workers: 0\r\noutput_dir: out\r\n".encode()


def test_file_changed_since_the_check_is_not_written(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, {"args.yaml": "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"})
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(select=["GA203"]))
    (tmp_path / "args.yaml").write_text(
        "dataloader_num_workers: 0\ndataloader_prefetch_factor: 3\n", encoding="utf-8"
    )
    texts = {d.path: d.text for d in result.documents}
    outcome = apply_fixes(result.findings, checked_texts=texts)
    assert not outcome.written and outcome.skipped
    assert "changed since it was checked" in outcome.skipped[0][1]
    assert (tmp_path / "args.yaml").read_text(encoding="utf-8").endswith("factor: 3\n")


def test_file_changed_while_planning_is_not_overwritten(tmp_path: Path, monkeypatch) -> None:
    import advisor.engine.fix as fixmod

    write_files(tmp_path, {"args.yaml": "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"})
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(select=["GA203"]))
    real = fixmod.plan_fixes

    def plan_then_edit(*args, **kwargs):
        outcome = real(*args, **kwargs)
        (tmp_path / "args.yaml").write_text("# someone else\n", encoding="utf-8")
        return outcome

    monkeypatch.setattr(fixmod, "plan_fixes", plan_then_edit)
    outcome = apply_fixes(result.findings)
    assert outcome.refused and not outcome.written and not outcome.applied
    assert (tmp_path / "args.yaml").read_text(encoding="utf-8") == "# someone else\n"


def _finding(path: Path, *edits: Edit, safety: str = "safe") -> Finding:
    return Finding("T001", "t", "warning", "m", Location(path, 1, 1), fix=Fix("d", safety, tuple(edits)))  # type: ignore[arg-type]


def test_overlapping_fixes_apply_once(tmp_path: Path) -> None:
    p = tmp_path / "a.yaml"
    p.write_text("a: 1\nb: 2\n", encoding="utf-8")
    first = _finding(p, Edit(p, "/a", 5))
    second = _finding(p, Edit(p, "/a", 6))
    outcome = apply_fixes([first, second])
    assert outcome.applied == [first] and outcome.skipped[0][0] is second
    assert p.read_text(encoding="utf-8") == "a: 5\nb: 2\n"
    display = _finding(p, Edit(p, "/b", 9), safety="display")
    assert not apply_fixes([display], unsafe=True).applied


@pytest.mark.parametrize(
    ("text", "key", "value", "expected"),
    [
        ('{\n  "a": 1,\n  "b": 2\n}\n', "/b", DELETE, '{\n  "a": 1\n}\n'),
        ('{\n  "a": 1,\n  "b": 2\n}\n', "/a", DELETE, '{\n  "b": 2\n}\n'),
        ('{"a": 1, "b": {"c": 2, "d": 3}}', "/b/c", DELETE, '{"a": 1, "b": {"d": 3}}'),
        ('{"a": 1, "b": {"c": 2, "d": 3}}', "/b/d", DELETE, '{"a": 1, "b": {"c": 2}}'),
        ('{\n  "a": 1\n}\n', "/a", DELETE, "{\n}\n"),
        ('{\n  "a": 1,\n  "z": {"k": "v"}\n}\n', "/z/k", "auto", '{\n  "a": 1,\n  "z": {"k": "auto"}\n}\n'),
        ('{\n  "a": 1,\n  "b": 2\n}\n', "/c", "auto", '{\n  "a": 1,\n  "b": 2,\n  "c": "auto"\n}\n'),
        ('{"a": {}}', "/a/x", 1, '{"a": {"x": 1}}'),
        (
            '{\n  // hjson comment\n  "a": [1, 2],\n  "b": true\n}\n',
            "/a",
            DELETE,
            '{\n  // hjson comment\n  "b": true\n}\n',
        ),
    ],
)
def test_json_edits(text: str, key: str, value: object, expected: str, tmp_path: Path) -> None:
    p = tmp_path / "ds.json"
    p.write_text(text, encoding="utf-8")
    outcome = apply_fixes([_finding(p, Edit(p, key, value))])
    assert outcome.applied, outcome.skipped
    assert p.read_text(encoding="utf-8") == expected


@pytest.mark.parametrize(
    ("text", "key", "value", "expected"),
    [
        ("a: 1\nb:\n  c: 2\n  d: 3\n", "/b/c", DELETE, "a: 1\nb:\n  d: 3\n"),
        ("a: 1\nb:\n  c: 2\n  d: 3\ne: 4\n", "/b/e", 1, "a: 1\nb:\n  c: 2\n  d: 3\n  e: 1\ne: 4\n"),
        ("a: 1\nb:\n  c:\n    - x\n    - y\nd: 3\n", "/b", DELETE, "a: 1\nd: 3\n"),
        ("lr: 1.0e-4\n", "/lr", 2e-05, "lr: 2.0e-05\n"),
        ("name: 'x'  # c\n", "/name", "y", "name: 'y'  # c\n"),
        ("flag: yes\nother: 1\n", "/flag", False, "flag: false\nother: 1\n"),
        ("s: plain\n", "/s", "needs: quoting", 's: "needs: quoting"\n'),
        ("empty:\nnext: 1\n", "/empty", 3, "empty: 3\nnext: 1\n"),
    ],
)
def test_yaml_edits(text: str, key: str, value: object, expected: str, tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text(text, encoding="utf-8")
    outcome = apply_fixes([_finding(p, Edit(p, key, value))])
    assert outcome.applied, outcome.skipped
    assert p.read_text(encoding="utf-8") == expected
    assert yaml.safe_load(expected) is not None


def test_refused_edits(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("only: 1\nflow: {a: 1, b: 2}\nblock: |\n  text\n", encoding="utf-8")
    src = load_source(p)
    for key, value in (("/flow/a", DELETE), ("/block", "x"), ("/missing/x", 1), ("/flow", 3)):
        with pytest.raises(FixError):
            plan_edit(Edit(p, key, value), src)
    one = _write(tmp_path / "one.yaml", "x: 1\n")
    assert plan_edit(Edit(one, "/x", 2), load_source(one)).text == "2"
    with pytest.raises(FixError):  # deleting the only key would leave an empty document
        plan_edit(Edit(one, "/x", DELETE), load_source(one))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    p = tmp_path / "a.yaml"
    p.write_text("a: 1\nb: 2\n", encoding="utf-8")
    os.chmod(p, 0o640)
    apply_fixes([_finding(p, Edit(p, "/a", 3))])
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.yaml"]
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    shutil.rmtree(tmp_path / "nothing", ignore_errors=True)


def test_yaml_anchors_and_aliases(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.yaml", "base: &lr 0.1\nother: *lr\nlast: 1\n")
    # setting an aliased anchor would change `other` too: not a safe fix, whatever the rule says
    outcome = apply_fixes([_finding(p, Edit(p, "/base", 0.2))])
    assert not outcome.applied and "&lr" in outcome.skipped[0][1] and "unsafe" in outcome.skipped[0][1]
    assert p.read_text(encoding="utf-8") == "base: &lr 0.1\nother: *lr\nlast: 1\n"
    # with unsafe fixes it applies, the anchor stays, and the wider change is reported
    outcome = apply_fixes([_finding(p, Edit(p, "/base", 0.2))], unsafe=True)
    assert outcome.applied and "*lr" in outcome.widened[0][1]
    assert p.read_text(encoding="utf-8") == "base: &lr 0.2\nother: *lr\nlast: 1\n"
    # an anchor nothing aliases is just a value
    q = _write(tmp_path / "b.yaml", "base: &lr 0.1\nlast: 1\n")
    assert apply_fixes([_finding(q, Edit(q, "/base", 0.2))]).applied
    assert q.read_text(encoding="utf-8") == "base: &lr 0.2\nlast: 1\n"
    # an alias is not edited in place (that would change the anchor's value)
    outcome = apply_fixes([_finding(p, Edit(p, "/other", 0.3))])
    assert not outcome.applied and "alias" in outcome.skipped[0][1]
    # deleting the anchor's key would break the alias: refused, file untouched
    outcome = apply_fixes([_finding(p, Edit(p, "/base", DELETE))])
    assert not outcome.applied and "would not parse" in outcome.skipped[0][1]
    assert p.read_text(encoding="utf-8") == "base: &lr 0.2\nother: *lr\nlast: 1\n"


def test_safe_fix_of_an_aliased_value_is_refused_through_the_cli(tmp_path: Path, monkeypatch) -> None:
    # issue 17 item 13: `dataloader_drop_last: *off` read the anchored false; the safe GA204 fix of
    # dataloader_pin_memory flipped it to true unannounced
    text = "dataloader_pin_memory: &off false\ndataloader_drop_last: *off\n"
    write_files(tmp_path, {"pyproject.toml": "", "args.yaml": text})
    result = cli(["check", "args.yaml", "--select", "GA204", "--fix"], tmp_path, monkeypatch)
    assert (tmp_path / "args.yaml").read_text(encoding="utf-8") == text
    assert "not fixed: args.yaml:1:24 GA204" in result.stderr and "(*off)" in result.stderr
    assert "--unsafe-fixes" in result.stderr
    # a merge key reads the anchored mapping: editing inside it is just as wide
    merged = "base: &b\n  dataloader_pin_memory: false\nrun:\n  <<: *b\n"
    p = _write(tmp_path / "m.yaml", merged)
    outcome = apply_fixes([_finding(p, Edit(p, "/base/dataloader_pin_memory", True))])
    assert not outcome.applied and "enclosing mapping is anchored (&b)" in outcome.skipped[0][1]


def test_diff_of_a_file_with_unicode_line_separators_applies_with_git(tmp_path: Path) -> None:
    # issue 17 item 14: U+2028, NEL and a lone CR split lines for str.splitlines but not for git
    import subprocess

    text = (
        'per_device_train_batch_size: 4\nrun_name: "a\u2028b\u0085c"\nlearning_rate: 0.0001\r\n'
        "dataloader_pin_memory: false\n# x\rwarmup_steps: 1\n"
    )
    write_files(tmp_path, {"pyproject.toml": ""})
    (tmp_path / "args.yaml").write_bytes(text.encode("utf-8"))
    diff = subprocess.run(
        ["gpu-advise", "check", "args.yaml", "--select", "GA204", "--diff", "--output", "p.diff"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert b"+dataloader_pin_memory: true\n" in (tmp_path / "p.diff").read_bytes(), diff.stderr
    applied = subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert (tmp_path / "args.yaml").read_bytes() == text.replace("false", "true").encode("utf-8")


def _only_unsafe(tmp_path: Path) -> Path:
    """One run whose one finding (GA101: accumulation tuned on 1 GPU, launched on 4) has an unsafe fix."""
    write_files(
        tmp_path,
        {
            "launch.sh": "#!/bin/bash\naccelerate launch --num_processes 4 train.py a.yaml\n",
            "train.py": "print('train')\n",
            "a.yaml": "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n",
            ".gpu-advise.toml": '[[runs]]\npath = "launch.sh"\neffective-batch = 16\n',
        },
    )
    return tmp_path / "a.yaml"


def test_fix_and_diff_name_the_unsafe_fixes_they_leave(tmp_path: Path, monkeypatch) -> None:
    """Issue 18 item 9: with only unsafe fixes, --fix and --diff said "0 fixes in 0 files" and nothing
    about the one --unsafe-fixes would apply (ruff: "1 hidden fix can be enabled with --unsafe-fixes")."""
    config = _only_unsafe(tmp_path)
    original = config.read_bytes()
    fixed = cli(["check", ".", "--select", "GA101", "--fix"], tmp_path, monkeypatch)
    assert fixed.exit_code == 1 and config.read_bytes() == original
    assert (
        "gpu-advise: applied 0 fixes in 0 files; 1 unsafe fix available: --unsafe-fixes --fix applies it"
        in fixed.stderr
    )
    diff = cli(["check", ".", "--select", "GA101", "--diff"], tmp_path, monkeypatch)
    assert diff.exit_code == 1 and diff.stdout == "" and config.read_bytes() == original
    assert (
        "would apply 0 fixes in 0 files; 1 unsafe fix available: --unsafe-fixes --diff shows it"
        in diff.stderr
    )
    # with them enabled nothing is hidden, so nothing is said about hidden fixes
    shown = cli(["check", ".", "--select", "GA101", "--diff", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert "+gradient_accumulation_steps: 2" in shown.stdout
    assert "would apply 1 fix in 1 file\n" in shown.stderr and "available" not in shown.stderr


def test_unsafe_fixes_alone_enables_them_and_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    """Issue 18 item 9: `--unsafe-fixes` alone wrote the file; as ruff's, it only enables the unsafe
    fixes for --fix and --diff. Alone the report shows the fix as available and the file is untouched."""
    config = _only_unsafe(tmp_path)
    original = config.read_bytes()
    alone = cli(["check", ".", "--select", "GA101", "--unsafe-fixes"], tmp_path, monkeypatch)
    assert alone.exit_code == 1, alone.output
    assert config.read_bytes() == original
    assert "GA101" in alone.stdout and "fix (unsafe): set gradient_accumulation_steps to 2" in alone.stdout
    assert "1 fix available (1 unsafe), nothing written: --unsafe-fixes --fix applies it" in alone.stderr
    applied = cli(["check", ".", "--select", "GA101", "--unsafe-fixes", "--fix"], tmp_path, monkeypatch)
    assert applied.exit_code == 0, applied.output
    assert yaml.safe_load(config.read_text(encoding="utf-8"))["gradient_accumulation_steps"] == 2
