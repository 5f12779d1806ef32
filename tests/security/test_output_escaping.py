"""Defect 7 of issue 9: user strings (config keys, file names) cannot inject terminal escapes or
GitHub workflow commands into any report, and every JSON we print parses strictly.

The attacker controls a YAML key (`\\x1b]0;pwned\\x07` retitles a terminal, `\\x1b[2J` clears it,
`\\n::error file=README.md,line=1::x` would be a workflow command of its own) and a file name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.core.escape import escape_text, strict_json

TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
COMMAND = "\n::error file=README.md,line=1::x"
# accelerate refuses unknown keys, so each of these is a GA002 finding naming the key
ACCELERATE = (
    "compute_environment: LOCAL_MACHINE\n"
    "distributed_type: MULTI_GPU\n"
    "num_processes: 2\n"
    f"{json.dumps('lr' + TITLE + CLEAR)}: 3\n"
    f"{json.dumps('warmup' + COMMAND)}: 1\n"
    '"##[error]legacy": 2\n'  # the runner's legacy form, honoured anywhere in a line
)
NASTY_NAME = f"acc{CLEAR}\u202eevil{COMMAND.replace('/', '_')}.yaml"
COMMAND_NAME = "::error file=README.md,line=1::x.yaml"  # heads its group in the text report
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _run(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return CliRunner().invoke(app, args, catch_exceptions=False)


def _workflow_commands(output: str) -> list[str]:
    """Lines a GitHub runner would execute: `::` after leading whitespace, or `##[` anywhere."""
    return [line for line in output.splitlines() if line.lstrip().startswith("::") or "##[" in line]


@pytest.fixture(
    params=["acc.yaml", NASTY_NAME, COMMAND_NAME], ids=["key", "key-and-file-name", "command-file-name"]
)
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    (tmp_path / request.param).write_text(ACCELERATE, encoding="utf-8")
    return tmp_path


def _strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _strings(data: Any) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return []


def test_text_report_has_no_escape_byte(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for extra in ([], ["--statistics"]):
        result = _run(["check", ".", "--format", "text", *extra], project, monkeypatch)
        assert result.exit_code == 1, result.output
        assert "GA002" in result.stdout
        assert not UNSAFE.search(result.stdout.replace("\n", "")), repr(result.stdout)
        # each finding is one line: the injected newline did not split the report
        assert not _workflow_commands(result.stdout), result.stdout


def test_github_annotations_are_the_only_workflow_commands(project: Path, monkeypatch) -> None:
    result = _run(["check", ".", "--format", "github"], project, monkeypatch)
    assert result.exit_code == 1, result.output
    commands = _workflow_commands(result.stdout)
    assert len(commands) == 3  # one annotation per GA002 finding, nothing else
    for line in commands:
        command, properties = line.split("::")[1].split(" ", 1)
        assert command == "error"
        assert [p.split("=", 1)[0] for p in properties.split(",")] == ["file", "line", "col", "title"]
    assert not UNSAFE.search(result.stdout.replace("\n", ""))


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_json_and_sarif_parse_strictly_without_control_characters(
    fmt: str, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(["check", ".", "--format", fmt], project, monkeypatch)
    assert result.exit_code == 1, result.output
    assert not UNSAFE.search(result.stdout.replace("\n", ""))
    data = _strict(result.stdout)
    bad = [s for s in _strings(data) if UNSAFE.search(s) and not s.startswith("## ")]
    assert not [s for s in bad if "\n" not in s or UNSAFE.search(s.replace("\n", ""))], bad
    if fmt == "json":
        where = sorted((f["rule"], f["line"], f["column"]) for f in data["findings"])
        assert where == [("GA002", 4, 1), ("GA002", 5, 1), ("GA002", 6, 1)]
        messages = [f["message"] for f in data["findings"]]
        assert all("\n" not in m for m in messages)


def test_statistics_json_parses_strictly(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(["check", ".", "--format", "json", "--statistics"], project, monkeypatch)
    assert result.exit_code == 1, result.output
    rows = _strict(result.stdout)
    assert [r["code"] for r in rows] == ["GA002"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_plan_escapes_keys_and_prints_strict_json(fmt: str, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "train.yaml").write_text(
        "output_dir: out\nper_device_train_batch_size: 2\nmax_grad_norm: .nan\nwarmup_ratio: .inf\n"
        f"{json.dumps('lr' + TITLE + CLEAR + COMMAND)}: 3\n",
        encoding="utf-8",
    )
    result = _run(["plan", "train.yaml", "--format", fmt], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert not UNSAFE.search(result.stdout.replace("\n", "")), result.stdout
    assert not any(line.startswith("::") for line in result.stdout.splitlines())
    if fmt == "json":
        values = _strict(result.stdout)[0]["values"]
        for key in ("training.max_grad_norm", "training.warmup_ratio"):  # null, and it says why
            assert values[key]["value"] is None
            assert values[key]["note"] or values[key]["unknown"]


def test_escape_text_covers_c0_c1_del_and_bidi() -> None:
    for ch in [*map(chr, range(0x20)), "\x7f", *map(chr, range(0x80, 0xA0)), "\u202a", "\u202e", "\u2066"]:
        shown = escape_text(f"a{ch}b")
        assert not UNSAFE.search(shown) and shown.startswith("a") and shown.endswith("b"), repr(ch)
    assert escape_text("plain: 1,2 %") == "plain: 1,2 %"
    assert escape_text(escape_text("x\x1b")) == escape_text("x\x1b")  # idempotent
    assert "\n" in escape_text("a\nb", keep_newlines=True)


def test_strict_json_never_writes_nan_or_infinity() -> None:
    text = strict_json({"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5], "c": Path("p")})
    assert _strict(text) == {"a": None, "b": [None, None, 1.5], "c": "p"}


def test_plan_json_turns_a_non_finite_value_into_null_with_a_note(tmp_path: Path, monkeypatch) -> None:
    import advisor.report.plan_view as plan_view
    from advisor.core.provenance import Value

    (tmp_path / "train.yaml").write_text("output_dir: out\n", encoding="utf-8")
    derived = [("run.hours", Value(float("inf"), source="derived")), ("run.x", Value(float("nan")))]
    monkeypatch.setattr(plan_view, "_rows", lambda names: derived)
    result = _run(["plan", "train.yaml", "--format", "json"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    values = _strict(result.stdout)[0]["values"]
    assert [values[k]["value"] for k in ("run.hours", "run.x")] == [None, None]
    assert all(values[k]["note"] for k in ("run.hours", "run.x"))


def test_diff_in_github_actions_cannot_run_workflow_commands(tmp_path: Path, monkeypatch) -> None:
    text = "# ##[error]from the pull request\ndataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n"
    (tmp_path / "args.yaml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app, ["check", ".", "--select", "GA203", "--diff"], env={"GITHUB_ACTIONS": "true"}
    )
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    token = lines[0].removeprefix("::stop-commands::")
    assert lines[0] != token and lines[-1] == f"::{token}::"  # the runner pauses commands in between
    assert " # ##[error]from the pull request" in lines  # the patch itself is byte-exact
    assert sum(token in line for line in lines) == 2


# Issue 17 item 15: characters that print as nothing (or as a plain space) make a fake key print
# exactly like the real one: zero-width space and joiners, word joiner, bidi marks, Unicode tag
# characters, the BOM, a no-break space, the combining grapheme joiner.
INVISIBLE_KEYS = [
    "num_processes\u200b",
    "mixed\u2060_precision",
    "num_machines\U000e0041",
    "gpu_ids\u200f",
    "main\u00a0process_port",
    "rdzv\ufeff_backend",
    "same_network\u034f",
]
INVISIBLE_CONFIG = (
    "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"
    + "".join(f"{json.dumps(k, ensure_ascii=False)}: 1\n" for k in INVISIBLE_KEYS)
)
# ZERO WIDTH SPACE's file name as well, so the location is escaped too
INVISIBLE_NAME = "acc\u200belerate.yaml"


def _unprintable(text: str) -> list[str]:
    """Characters a reader cannot see, by Unicode's own tables: controls, format characters,
    separators other than the space, surrogates, and the default-ignorable ones outside them."""
    import unicodedata

    ignorable = {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, 0x2800}
    ignorable |= {*range(0x180B, 0x1810), *range(0xFE00, 0xFE10), *range(0xE0000, 0xE1000)}
    return [
        ch
        for ch in text
        if ch not in "\n "
        and (unicodedata.category(ch) in {"Cc", "Cf", "Zs", "Zl", "Zp", "Cs"} or ord(ch) in ignorable)
    ]


@pytest.mark.parametrize("fmt", ["text", "concise", "github", "json", "sarif"])
def test_invisible_characters_are_shown_in_every_format(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / INVISIBLE_NAME).write_text(INVISIBLE_CONFIG, encoding="utf-8")
    result = _run(["check", ".", "--format", fmt], tmp_path, monkeypatch)
    assert result.exit_code == 1, result.output
    assert not _unprintable(result.stdout), [hex(ord(c)) for c in _unprintable(result.stdout)]
    shown = result.stdout
    if fmt in ("json", "sarif"):
        data = _strict(result.stdout)  # still valid, strict JSON
        shown = "\n".join(_strings(data))
        assert not [s for s in _strings(data) if _unprintable(s.replace("\n", ""))]
    for visible in (
        "num_processes\\u200b",
        "mixed\\u2060_precision",
        "num_machines\\U000e0041",
        "gpu_ids\\u200f",
        "main\\xa0process_port",
        "rdzv\\ufeff_backend",
        "same_network\\u034f",
        "acc\\u200belerate.yaml",
    ):
        assert visible in shown, (visible, shown)


def test_escape_text_covers_every_invisible_character() -> None:
    """The ranges of advisor/core/escape.py against unicodedata, over the whole code space."""
    code_space = "".join(map(chr, range(0x110000)))
    missed = [ch for ch in _unprintable(code_space) if escape_text(ch) == ch]
    assert not missed, [hex(ord(ch)) for ch in missed[:20]]
    assert escape_text("a\U000e0041b") == "a\\U000e0041b" and escape_text("\udc80") == "\\udc80"
    for text in ("per_device_train_batch_size", "Qwen/Qwen2.5-7B", "é 中文 ✓ ≈ × — →", "a b"):
        assert escape_text(text) == text  # visible text, ASCII or not, stays as it is


# Issue 17 item 10: one-line errors (exit 2) printed settings keys and rule names as they were: a
# newline then `::error` or `::add-mask::` became a workflow command of its own in an Actions log, an
# ANSI sequence reached the terminal.
INJECT = "\n::add-mask::secret\x1b[2J\u200b"


@pytest.mark.parametrize(
    ("files", "args", "names"),
    [
        pytest.param(
            {".gpu-advise.toml": f"{json.dumps('bad' + INJECT)} = 1\n", "a.yaml": "output_dir: o\n"},
            ["check", "a.yaml"],
            ".gpu-advise.toml:1: unknown setting",
            id="settings-key",
        ),
        pytest.param(
            {
                "policy/bad.yaml": f"code: {json.dumps('X1' + INJECT)}\nname: {json.dumps('n' + INJECT)}\n",
                "a.yaml": "output_dir: o\n",
            },
            ["check", "a.yaml", "--rules", "policy"],
            "bad.yaml:1: invalid rule file",
            id="rule-file",
        ),
        pytest.param({}, ["rule", "X1" + INJECT], "no rule 'X1", id="rule-name"),
        pytest.param(
            {"a.yaml": "output_dir: o\n"}, ["check", "-H", "n" + INJECT], "unknown hardware", id="hw"
        ),
        pytest.param({}, ["check", "missing" + INJECT], "no such file or folder", id="path"),
        pytest.param({}, ["estimate", "org/model" + INJECT], "unknown model 'org/model", id="model"),
    ],
)
def test_one_line_errors_escape_what_the_user_wrote(
    files: dict[str, str], args: list[str], names: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = _run(args, tmp_path, monkeypatch)
    assert result.exit_code == 2, result.output
    err = result.stderr
    assert names in err, err
    assert len(err.splitlines()) == 1, err  # one line: the newline is shown as \n
    assert "\\n::add-mask::secret\\x1b[2J\\u200b" in err
    assert not _workflow_commands(err) and "\x1b" not in err and not _unprintable(err.strip())


def test_baseline_names_a_settings_path_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`baseline = "..."` in the settings is the pull request's text: the line saying where the
    baseline was written shows its newline and ESC as escapes."""
    name = "base\n::add-mask::x\x1b[2J.json"
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gpu-advise.toml").write_text(f"baseline = {json.dumps(name)}\n", encoding="utf-8")
    (tmp_path / "args.yaml").write_text(
        "dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n", encoding="utf-8"
    )
    result = _run(["baseline"], tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    assert (tmp_path / name).is_file()
    assert result.stderr == "gpu-advise: wrote 1 finding to base\\n::add-mask::x\\x1b[2J.json\n"
