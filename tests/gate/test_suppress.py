"""Inline suppressions in YAML and shell, settings ignores for JSON, GA900, --no-inline-ignores."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.rule_engine import load_catalog, select_rules
from advisor.engine.selectors import matches
from advisor.engine.suppress import parse_directives, path_matches
from advisor.pipeline.check import CheckOptions, run_check
from tests.conftest import write_files
from tests.gate.conftest import cli

BAD = "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2{tail}\n"


def _check(root: Path, monkeypatch: pytest.MonkeyPatch, **options) -> list[tuple[str, str, int]]:
    monkeypatch.chdir(root)
    result = run_check([Path(".")], CheckOptions(select=["GA203", "GA900"], **options))
    assert not result.errors, result.errors
    return sorted((f.rule, f.location.file.as_posix(), f.location.line) for f in result.findings)


def test_directive_on_the_line_of_the_key(tmp_path: Path, monkeypatch) -> None:
    write_files(
        tmp_path, {"args.yaml": BAD.format(tail="  # gpu-advise: ignore[GA203] kept for the next box")}
    )
    assert _check(tmp_path, monkeypatch) == []


def test_directive_on_the_line_above(tmp_path: Path, monkeypatch) -> None:
    text = (
        "dataloader_num_workers: 0\n# gpu-advise: ignore[GA203]\n# an ordinary comment\n"
        "dataloader_prefetch_factor: 2\n"
    )
    write_files(tmp_path, {"args.yaml": text})
    assert _check(tmp_path, monkeypatch) == []


def test_directive_two_lines_above_with_a_blank_line_does_not_apply(tmp_path: Path, monkeypatch) -> None:
    text = "dataloader_num_workers: 0\n# gpu-advise: ignore[GA203]\n\ndataloader_prefetch_factor: 2\n"
    write_files(tmp_path, {"args.yaml": text})
    assert _check(tmp_path, monkeypatch) == [("GA203", "args.yaml", 4), ("GA900", "args.yaml", 2)]


def test_prefix_name_and_file_directive(tmp_path: Path, monkeypatch) -> None:
    write_files(
        tmp_path,
        {
            "a.yaml": BAD.format(tail="  # gpu-advise: ignore[GA2]"),
            "b.yaml": BAD.format(tail="  # gpu-advise: ignore[prefetch-without-workers]"),
            "c.yaml": "# gpu-advise: ignore-file[GA203] legacy file\n" + BAD.format(tail=""),
        },
    )
    assert _check(tmp_path, monkeypatch) == []


def test_unused_and_unknown_codes_are_ga900(tmp_path: Path, monkeypatch) -> None:
    text = (
        "output_dir: out  # gpu-advise: ignore[GA203]\n"
        "# gpu-advise: ignore-file[GA9999]\n"
        "per_device_train_batch_size: 2  # gpu-advise: ignore\n"
        "dataloader_num_workers: 0\n"
        "dataloader_prefetch_factor: 2  # gpu-advise: ignore[GA203, GA101]\n"
    )
    write_files(tmp_path, {"args.yaml": text})
    monkeypatch.chdir(tmp_path)
    result = run_check([Path(".")], CheckOptions(select=["GA203", "GA900"]))
    got = sorted((f.rule, f.location.line, f.location.col) for f in result.findings)
    # line 1: unused; line 2: names no rule; line 3: no codes; line 5: GA101 was not selected: silent
    assert got == [("GA900", 1, 18), ("GA900", 2, 1), ("GA900", 3, 33)]
    messages = {f.location.line: f.message for f in result.findings}
    assert "names no rule" in messages[2] and "needs rule codes" in messages[3]
    assert len(result.suppressed) == 1 and result.suppressed[0].by == "inline"


def test_no_inline_ignores(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, {"args.yaml": BAD.format(tail="  # gpu-advise: ignore[GA203]")})
    assert _check(tmp_path, monkeypatch, inline_ignores=False) == [("GA203", "args.yaml", 2)]
    assert cli(["check", ".", "--select", "GA203"], tmp_path, monkeypatch).exit_code == 0
    assert (
        cli(["check", ".", "--select", "GA203", "--no-inline-ignores"], tmp_path, monkeypatch).exit_code == 1
    )


def test_ga900_can_be_ignored_and_reseverised(tmp_path: Path, monkeypatch) -> None:
    write_files(tmp_path, {"args.yaml": "output_dir: out  # gpu-advise: ignore[GA203]\n"})
    assert cli(["check", "."], tmp_path, monkeypatch).exit_code == 1
    assert cli(["check", ".", "--ignore", "GA900"], tmp_path, monkeypatch).exit_code == 0
    (tmp_path / ".gpu-advise.toml").write_text('[severity]\nGA900 = "info"\n', encoding="utf-8")
    assert cli(["check", "."], tmp_path, monkeypatch).exit_code == 0


LAUNCH = """#!/bin/bash
# gpu-advise: ignore[GA101] the bigger batch is deliberate here
accelerate launch \\
    --num_processes 4 \\
    train.py train.yaml
"""


def test_shell_directive_covers_the_whole_continued_command() -> None:
    directives = parse_directives(Path("launch.sh"), LAUNCH, shell=True)
    assert len(directives) == 1
    assert directives[0].lines == frozenset({3, 4, 5})
    trailing = parse_directives(
        Path("l.sh"), "torchrun \\\n  --nproc_per_node 2 \\\n  t.py  # gpu-advise: ignore[GA2]\n", shell=True
    )
    assert trailing[0].lines == frozenset({1, 2, 3})


def test_shell_directive_in_a_real_run(tmp_path: Path, monkeypatch) -> None:
    settings = '[[runs]]\npath = "launch.sh"\neffective-batch = 16\n'
    files = {
        "launch.sh": LAUNCH,
        "train.yaml": "output_dir: out\nper_device_train_batch_size: 2\ngradient_accumulation_steps: 8\n",
        "train.py": "print('x')\n",
        ".gpu-advise.toml": settings,
    }
    write_files(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    # GA101 is located in train.yaml (the per-device value), not in launch.sh: the directive is unused
    result = run_check([Path(".")], CheckOptions(select=["GA101", "GA900"]))
    rules = sorted(f.rule for f in result.findings)
    assert rules == ["GA101", "GA900"]
    # at the finding's own line it works
    (tmp_path / "train.yaml").write_text(
        "output_dir: out\nper_device_train_batch_size: 2  # gpu-advise: ignore[GA101]\n"
        "gradient_accumulation_steps: 8\n",
        encoding="utf-8",
    )
    (tmp_path / "launch.sh").write_text(
        LAUNCH.replace("# gpu-advise: ignore[GA101] the bigger batch is deliberate here\n", ""),
        encoding="utf-8",
    )
    result = run_check([Path(".")], CheckOptions(select=["GA101", "GA900"]))
    assert result.findings == []


def test_json_is_suppressed_through_settings_only(tmp_path: Path, monkeypatch) -> None:
    ds = '{\n  "train_batch_size": 8,\n  "train_micro_batch_size_per_gpu": 4\n}\n'
    rule = (
        "code: ORG001\nname: no-written-batch\nseverity: error\nsummary: s\n"
        "when: deepspeed.train_batch_size is not None\nat: deepspeed.train_batch_size\nmessage: m\ndocs: d\n"
    )
    write_files(tmp_path, {"configs/ds.json": ds, "policy/ORG001.yaml": rule})
    base = 'extend-rules = ["policy"]\nselect = ["ORG", "GA900"]\n'

    def codes(settings: str) -> list[str]:
        (tmp_path / ".gpu-advise.toml").write_text(base + settings, encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        result = run_check([Path(".")], CheckOptions())
        assert not result.errors
        return [f.rule for f in result.findings]

    assert codes("") == ["ORG001"]
    assert codes('[per-file-ignores]\n"configs/*.json" = ["ORG"]\n') == []
    assert codes('[per-file-ignores]\n"ds.json" = ["ORG001"]\n') == []  # no slash: the file name
    assert codes('[per-file-ignores]\n"other/*.json" = ["ORG001"]\n') == ["ORG001"]
    assert codes('[key-ignores."configs/ds.json"]\n"/train_batch_size" = ["ORG001"]\n') == []
    assert codes('[key-ignores."**/ds.json"]\n"/train_micro_batch_size_per_gpu" = ["ORG001"]\n') == ["ORG001"]


def test_glob_and_code_matching(tmp_path: Path) -> None:
    root = tmp_path
    f = tmp_path / "configs" / "legacy" / "ds.json"
    assert path_matches("configs/legacy/*.json", f, root)
    assert path_matches("configs/**/*.json", f, root)
    assert path_matches("**/ds.json", f, root)
    assert path_matches("ds.json", f, root)
    assert not path_matches("configs/*.json", f, root)


@pytest.mark.parametrize(
    ("selector", "hit"),
    [
        ("GA3", True),
        ("ga301", True),
        ("GA30", True),
        ("GA", True),
        ("all", True),
        ("zero-mismatch", True),
        ("old-name", True),
        ("GA2", False),
        ("", False),
        ("GA3*", False),
        ("Zero-Mismatch", False),
    ],
)
def test_one_selector_meaning(selector: str, hit: bool) -> None:
    assert matches(selector, "GA301", "zero-mismatch", ("old-name",)) is hit


def test_select_and_inline_directives_name_the_same_rules(tmp_path: Path, monkeypatch) -> None:
    """--select and `ignore[...]` read a selector the same way (advisor/engine/selectors.py): a prefix, a name
    and ALL select exactly the rules they suppress."""
    catalog = load_catalog()
    for selector in ("GA2", "GA20", "prefetch-without-workers", "ALL"):
        chosen = {r.code for r in select_rules(catalog, [selector], [])}
        assert "GA203" in chosen
        write_files(tmp_path, {"args.yaml": BAD.format(tail=f"  # gpu-advise: ignore[{selector}]")})
        assert _check(tmp_path, monkeypatch) == [], selector
