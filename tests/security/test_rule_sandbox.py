"""Defect 1 of issue 9: rule expressions are sandboxed.

A rule file can come from the pull request being checked (`extend-rules` in its pyproject.toml), so its
expressions are hostile input. They may read fact values and call the engine's helpers, nothing else:
anything outside that language is refused when the rule loads (exit 2, one line naming the rule file
and line, no traceback), and an expression that tries to exhaust memory or time is stopped by its budget
and reported as that rule's error (exit 2), quickly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.core.document import Location
from advisor.core.expr import BudgetError, EvalError, ExprError, Limits, parse, references
from advisor.core.provenance import Namespace, Value
from advisor.engine.evaluator import Evaluator
from advisor.engine.rule_engine import HELPERS
from tests.conftest import REPO

runner = CliRunner()

ARGS = "output_dir: out\nper_device_train_batch_size: 8\n"
PASSWD = Path("/etc/passwd")

# The reproduction from the issue: the message reads the first line of /etc/passwd through a Path.
XS001 = """\
code: XS001
name: read-any-file
severity: warning
summary: x
when: "True"
at: training.per_device_train_batch_size
message: "{training.entry('per_device_train_batch_size').origin.file.joinpath('/etc/passwd')\
.read_text().splitlines()[0]}"
docs: x
"""
XS001_MESSAGE_LINE = 7


def _rule(**fields: Any) -> tuple[str, dict[str, int]]:
    """A rule file (one field per line, values as JSON, which YAML reads as is) and each field's line."""
    base: dict[str, Any] = {
        "code": "XS001",
        "name": "sandbox-probe",
        "severity": "warning",
        "summary": "x",
        "when": "True",
        "at": "training.per_device_train_batch_size",
        "message": "probe",
        "docs": "x",
    }
    base.update(fields)
    lines = {key: n for n, key in enumerate(base, 1)}
    return "".join(f"{k}: {json.dumps(v)}\n" for k, v in base.items()), lines


def _secret_lines() -> list[str]:
    if not PASSWD.is_file():
        return []
    return [line for line in PASSWD.read_text(errors="replace").splitlines() if len(line) > 8][:3]


def _assert_no_leak(output: str) -> None:
    assert "Traceback" not in output
    for line in _secret_lines():
        assert line not in output


def _project(root: Path, rule_text: str, folder: str = "rules") -> Path:
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "args.yaml").write_text(ARGS, encoding="utf-8")
    path = root / folder / "XS001.yaml"
    path.write_text(rule_text, encoding="utf-8")
    return path


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _check(root: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> tuple[int, str]:
    monkeypatch.chdir(root)
    result = runner.invoke(app, ["check", "args.yaml", "--rules", "rules", *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


# --------------------------------------------------------------------------------------------------
# The reproduction, through the real CLI


def test_xs001_from_the_rules_flag_is_refused_at_load(tmp_path: Path) -> None:
    rule = _project(tmp_path, XS001)
    proc = _cli(tmp_path, "check", "args.yaml", "--rules", "rules")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    _assert_no_leak(output)
    assert f"{rule.name}:{XS001_MESSAGE_LINE}:" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1  # one line, not a traceback


def test_xs001_from_extend_rules_in_the_checked_project_is_refused_at_load(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    rule = _project(tmp_path, XS001, folder="policies")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.gpu-advise]\nextend-rules = ["policies"]\n', encoding="utf-8"
    )
    proc = _cli(tmp_path, "check", "args.yaml")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    _assert_no_leak(output)
    assert f"{rule.name}:{XS001_MESSAGE_LINE}:" in proc.stderr


def test_a_rule_cannot_write_files_or_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "written.txt"
    message = (
        "{training.entry('per_device_train_batch_size').origin.file.with_name('written.txt')"
        ".write_text('pwned')}"
    )
    text, lines = _rule(message=message)
    rule = _project(tmp_path, text)
    code, output = _check(tmp_path, monkeypatch)
    assert code == 2
    assert f"{rule.name}:{lines['message']}:" in output
    assert not target.exists()


# --------------------------------------------------------------------------------------------------
# Escapes refused at load: exit 2, the rule file and the line of the field


def _deep_not(n: int) -> str:
    return "not " * n + "True"


LOAD_REFUSED: list[tuple[str, str, Any]] = [
    ("dunder-class", "when", "training.__class__ is not None"),
    ("subclasses", "when", "len(().__class__.__bases__[0].__subclasses__()) > 0"),
    ("globals", "message", "{show.__globals__}"),
    ("private-attribute", "when", "training._values is not None"),
    ("getattr", "when", "getattr(training, 'entry') is not None"),
    ("import", "when", "__import__('os') is not None"),
    ("open", "message", "{open('/etc/passwd')}"),
    ("namespace-method", "when", "training.entry('per_device_train_batch_size') is not None"),
    ("value-method", "message", "{training.output_dir.upper()}"),
    ("str-format", "message", "{'{0.__class__}'.format(training)}"),
    ("format-attribute-access", "message", "{'{0.entry.__globals__}'.format(training)}"),
    ("format-map", "message", "{'x'.format_map(training)}"),
    ("format-call", "message", "{'x'.format(training)}"),
    ("f-string", "when", "f'{training.output_dir}' != ''"),
    ("f-string-format-spec", "message", "{f'{training.output_dir:{training.output_dir}}'}"),
    ("template-conversion", "message", "{training.output_dir!r}"),
    ("lambda", "when", "(lambda: True)()"),
    ("lambda-argument", "when", "len(sorted([2, 1], key=lambda x: x)) == 2"),
    ("keyword-argument", "when", "sorted([2, 1], reverse=True) == [2, 1]"),
    ("walrus", "when", "(x := 1) == 1"),
    ("starred-call", "when", "max(*[1, 2]) == 2"),
    ("starred-list", "when", "[*training] == []"),
    ("mapping-unpack", "when", "{**{'a': 1}} == {}"),
    ("set-literal", "when", "{1, 2} != {3}"),
    ("comprehension-attribute-target", "when", "[1 for training.x in [1]] == [1]"),
    ("deep-not-from-the-issue", "when", _deep_not(5000)),
    ("deep-not", "when", _deep_not(150)),
    ("deep-parentheses", "when", "(" * 300 + "1" + ")" * 300 + " == 1"),
    ("deep-lists", "when", "[" * 150 + "]" * 150 + " != []"),
    ("too-many-parts", "when", " + ".join(["1"] * 1500) + " > 0"),
    ("for-each-method", "for_each", "training.items()"),
    ("at-private", "at", "item.__class__"),
    ("requires-private", "requires", ["training.__dict__"]),
    ("fix-target-private", "fix", {"set": {"training.__class__": 1}}),
    ("fix-value-method", "fix", {"set": {"training.output_dir": "{training.entry('output_dir')}"}}),
    ("fix-when-lambda", "fix", {"when": "(lambda: 1)()", "set": {"training.output_dir": "x"}}),
    ("fix-description", "fix", {"set": {"training.output_dir": "x"}, "description": "{show.__code__}"}),
]


@pytest.mark.parametrize(("field", "value"), [c[1:] for c in LOAD_REFUSED], ids=[c[0] for c in LOAD_REFUSED])
def test_escapes_are_refused_at_load(
    field: str, value: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, lines = _rule(**{field: value})
    rule = _project(tmp_path, text)
    start = time.monotonic()
    code, output = _check(tmp_path, monkeypatch)
    assert code == 2, output
    assert f"{rule.name}:{lines[field]}:" in output
    assert "Traceback" not in output
    assert time.monotonic() - start < 10


def test_a_refusal_in_a_block_scalar_names_the_line_of_the_expression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (
        "code: XS001\nname: sandbox-probe\nseverity: warning\nsummary: x\ndocs: x\n"
        "message: |\n  first {training.output_dir}\n  second {len(training.output_dir)}\n"
        "  third {training.output_dir.__class__}\n"
    )
    rule = _project(tmp_path, text)
    code, output = _check(tmp_path, monkeypatch)
    assert code == 2
    assert f"{rule.name}:9:" in output


def test_a_billion_laughs_rule_file_is_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a fix value may be any data, so nothing stops at its type: 9**9 values from a 1 KB file
    laughs = ["      - &a0 [" + ", ".join(["lol"] * 9) + "]"]
    laughs += [f"      - &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    text, _ = _rule()
    rule = _project(tmp_path, text + "fix:\n  set:\n    training.output_dir:\n" + "\n".join(laughs) + "\n")
    start = time.monotonic()
    code, output = _check(tmp_path, monkeypatch)
    assert code == 2 and rule.name in output and "Traceback" not in output
    assert time.monotonic() - start < 10


# --------------------------------------------------------------------------------------------------
# Bombs stopped while evaluating: the rule's error (exit 2), quickly, other rules still run

BUDGET: list[tuple[str, str, Any]] = [
    ("power-in-comprehension-from-the-issue", "when", "[9**3999999 for c in 'a'*9999]"),
    ("join-of-big-strings-from-the-issue", "when", "len(join(['a'*99999 for c in 'a'*9999],''))>0"),
    ("huge-power", "when", "2 ** 10 ** 9 > 0"),
    ("product-of-big-integers", "when", "10 ** 60000 * 10 ** 60000 > 0"),
    ("shift", "when", "1 << 10 ** 9 > 0"),
    ("string-multiplication", "when", "len('a' * 10 ** 9) > 0"),
    ("list-multiplication", "when", "len([0] * 10 ** 9) > 0"),
    ("string-concatenation", "when", "len('a' * 99999 + 'b' * 99999) > 0"),
    ("nested-comprehension", "when", "len([[c for c in 'a' * 9999] for d in 'a' * 9999]) > 0"),
    ("long-comprehension", "when", "len([1 for a in 'a' * 999 for b in 'a' * 999]) > 0"),
    ("printf-format", "message", "{'%999999999d' % 1}"),
    ("sum-of-lists", "when", "len(sum([[1]] * 1000, [])) > 0"),
    ("round-digits", "when", "round(1.5, 10 ** 9) > 0"),
    ("private-key", "when", "training['_values'] is not None"),
    ("namespace-to-a-helper", "when", "len(list(training)) > 0"),
    ("iterate-a-namespace", "when", "[k for k in training] == []"),
    ("message-size", "message", "{'a' * 99999}{'b' * 99999}"),
    ("for-each-items", "message", "{item * 99999}"),
]


@pytest.mark.parametrize(("field", "value"), [c[1:] for c in BUDGET], ids=[c[0] for c in BUDGET])
def test_bombs_are_stopped_by_the_budget(
    field: str, value: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = {"for_each": "['x' for c in 'a' * 999]", "at": "item"} if value == "{item * 99999}" else {}
    text, _ = _rule(**{field: value}, **extra)
    _project(tmp_path, text)
    start = time.monotonic()
    code, output = _check(tmp_path, monkeypatch)
    elapsed = time.monotonic() - start
    assert code == 2, output
    assert "rule XS001 (XS001.yaml) failed" in output and "Traceback" not in output
    assert elapsed < 15, f"{elapsed:.1f} s"


def test_a_budget_error_does_not_stop_the_other_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, _ = _rule(when="[9**3999999 for c in 'a'*9999]")
    _project(tmp_path, text)
    (tmp_path / "args.yaml").write_text("dataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["check", "args.yaml", "--rules", "rules", "--format", "json"])
    assert result.exit_code == 2
    assert "GA203" in {f["rule"] for f in json.loads(result.stdout)["findings"]}


def test_a_rule_that_runs_out_of_budget_is_not_run_again_on_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, _ = _rule(
        scope="document", at="document", when="len([[c for c in 'a' * 9999] for d in 'a' * 9999]) > 0"
    )
    _project(tmp_path, text)
    for n in range(6):
        (tmp_path / f"args{n}.yaml").write_text(ARGS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    start = time.monotonic()
    result = runner.invoke(app, ["check", ".", "--rules", "rules"])
    assert result.exit_code == 2
    assert result.output.count("rule XS001 (XS001.yaml) failed") == 1
    assert time.monotonic() - start < 15


# --------------------------------------------------------------------------------------------------
# What expressions see: fact namespaces and plain data, never Python objects


def test_namespace_methods_read_as_unset_facts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # env and launch take any entry name (advisor/facts/catalogue.py), so these pass the load-time check
    text, _ = _rule(when="env.entry is None and env.lookup is None and launch.set is None")
    _project(tmp_path, text)
    code, output = _check(tmp_path, monkeypatch, "--format", "json")
    assert code == 1, output
    assert "XS001" in {f["rule"] for f in json.loads(output)["findings"]}


def test_facts_reach_expressions_as_plain_data() -> None:
    where = Location(Path("/project/args.yaml"), 3, 5, "/lr")
    ns = Namespace(
        "t",
        {
            "where": Value(where),
            "path": Value(Path("/etc/passwd")),
            "items": Value([{"location": where, "kind": "x"}]),
            "unknown": Value(1, unknown="not static"),
        },
    )
    ev = Evaluator({"t": ns}, HELPERS)

    def run(source: str) -> Any:
        return ev.evaluate(parse(source, HELPERS))

    assert run("t.where") == {"file": "/project/args.yaml", "line": 3, "col": 5, "key": "/lr"}
    assert run("t.path") == "/etc/passwd"
    assert type(run("t.path")) is str
    assert run("t.items[0].kind") == "x"
    assert run("t.unknown") is None
    # the engine maps a converted item back to its fact, for the finding's position
    assert ev.raw_of(run("t.items")[0])["location"] is where


def test_a_fact_without_a_plain_form_is_refused() -> None:
    ns = Namespace("t", {"odd": Value(object())})
    ev = Evaluator({"t": ns}, HELPERS)
    with pytest.raises(EvalError):
        ev.evaluate(parse("t.odd", HELPERS))


def test_the_budget_is_per_reset() -> None:
    ev = Evaluator({}, HELPERS, Limits(operations=20_000))
    bomb = parse("len([[c for c in 'a' * 999] for d in 'a' * 999])", HELPERS)
    with pytest.raises(BudgetError):
        ev.evaluate(bomb)
    ev.reset()
    assert ev.evaluate(parse("len([c for c in 'a' * 999])", HELPERS)) == 999


def test_load_errors_carry_the_position_in_the_expression() -> None:
    with pytest.raises(ExprError) as exc:
        parse("(1 +\n  training.__class__)", HELPERS)
    assert (exc.value.line, exc.value.col) == (2, 3)


def test_a_method_call_is_refused_at_the_method_name() -> None:
    with pytest.raises(ExprError) as exc:
        parse("len(training.output_dir.upper()) > 0", HELPERS)
    assert (exc.value.line, exc.value.col) == (1, len("len(training.output_dir.") + 1)


def test_references_list_dotted_names_and_helper_calls() -> None:
    source = "batch.world_size > 1 and len([i.kind for i in placement.count_problems]) > 0"
    found = [(r.kind, r.path, r.line, r.col, r.bound) for r in references(parse(source, HELPERS))]

    def col(text: str) -> int:
        return source.index(text) + 1

    assert found == [
        ("name", ("batch", "world_size"), 1, 1, False),
        ("call", ("len",), 1, col("len("), False),
        ("name", ("i", "kind"), 1, col("i.kind"), True),
        ("name", ("placement", "count_problems"), 1, col("placement"), False),
    ]


def test_built_in_rules_read_only_fact_namespaces_and_their_items() -> None:
    """The hook a fact catalogue check plugs into: every name an expression reads, with its field."""
    from advisor.engine.rule_engine import builtin_rules_dir, load_rule_file
    from advisor.facts.registry import BUILD_ORDER

    namespaces = {"training", "accelerate", "deepspeed", "launch", "env", "model", "settings", "thresholds"}
    namespaces |= {"measured", "document", "suppressions", "policy", "item"}  # policy: scope policy rules
    namespaces |= {b.name for b in BUILD_ORDER}
    for path in sorted(builtin_rules_dir().glob("*.yaml")):
        rule = load_rule_file(path)
        for part, expr in rule.expressions():
            local = namespaces | set(rule.spec.let)  # let names are locals of the rule
            for ref in references(expr):
                if ref.kind == "call":
                    assert ref.path[0] in HELPERS
                elif not ref.bound:
                    assert ref.path[0] in local, f"{rule.where(part)}: {'.'.join(ref.path)}"


SEMANTICS = [
    ("1 < 2 < 3", True),
    ("1 < 3 < 2", False),
    ("0 or 'x'", "x"),
    ("'' and 1", ""),
    ("[i * 2 for i in [1, 2, 3] if i != 2]", [2, 6]),
    ("{k: v for k, v in [('a', 1), ('b', 2)]}", {"a": 1, "b": 2}),
    ("any(x > 2 for x in [1, 3])", True),
    ("'abcdef'[1:4]", "bcd"),
    ("[1, 2, 3][-1]", 3),
    ("{'a': {'b': 5}}.a.b", 5),  # attribute access reads mapping keys
    ("7 // 2 + 7 % 2 + 2 ** 3", 12),
    ("-(3) if not False else 0", -3),
    ("'bf16' in ('bf16', 'fp16')", True),
    ("'GA' + str(203)", "GA203"),
    ("join([1, 2], '+')", "1+2"),
    ("training.output_dir", "out"),
    ("'output_dir' in training and 'nope' not in training", True),
    ("training.nope is None", True),
    ("[k for k in [1, 2]] + [k for k in [3]]", [1, 2, 3]),
]


@pytest.mark.parametrize(("source", "expected"), SEMANTICS, ids=[s for s, _ in SEMANTICS])
def test_the_language_keeps_pythons_meaning(source: str, expected: Any) -> None:
    ns = Namespace("training", {"output_dir": Value("out")})
    assert Evaluator({"training": ns}, HELPERS).evaluate(parse(source, HELPERS)) == expected


# --------------------------------------------------------------------------------------------------
# Issue 17, item 9: a value PyYAML's constructors cannot build is the rule file's error (exit 2, its file
# and line), not an internal error (exit 3); so is a fix value that is not data a fix can write

BAD_TAGS = [
    ("timestamp-word", "!!timestamp x"),
    ("timestamp-month", "!!timestamp 2020-13-45"),
    ("bool-maybe", "!!bool maybe"),
    ("int-empty", "!!int ''"),
    ("float-empty", "!!float ''"),
    ("float-word", "!!float abc"),
    ("int-hex-empty", "!!int 0x"),
    ("int-5000-digits", "9" * 5000),
    ("nested", "{a: [1, !!bool maybe]}"),
    ("date", "2020-01-01"),
    ("binary", "!!binary aGVsbG8="),
    ("set", "!!set {a, b}"),
    ("date-in-a-list", "[out, 2020-01-01 10:00:00]"),
]


@pytest.mark.parametrize("value", [c[1] for c in BAD_TAGS], ids=[c[0] for c in BAD_TAGS])
def test_a_value_the_loader_cannot_build_names_the_rule_file_and_line(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, lines = _rule()
    rule = _project(tmp_path, text + f"fix:\n  set:\n    training.output_dir: {value}\n")
    code, output = _check(tmp_path, monkeypatch)
    assert code == 2, output
    assert f"{rule.name}:{len(lines) + 3}:" in output
    assert "internal error" not in output and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1


def test_a_bad_tag_in_a_top_level_field_names_its_line(tmp_path: Path) -> None:
    text, lines = _rule()
    rule = _project(tmp_path, text.replace('summary: "x"', "summary: !!bool maybe"))
    proc = _cli(tmp_path, "check", "args.yaml", "--rules", "rules")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{rule.name}:{lines['summary']}: rule file is not valid YAML: 'maybe' is not a valid bool" in (
        proc.stderr
    )
    assert "Traceback" not in proc.stderr
