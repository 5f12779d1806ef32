"""Scaffold a new rule: the rule file and its failing and passing fixture projects.

    python3 tools/new_rule.py GA702 logging-steps-zero --severity warning [--key logging_steps]

writes rules/GA702-logging-steps-zero.yaml (every required field, `let`, a failing and a passing
example) and fixtures/rules/GA702/{fail,pass}-<name>/ (a TrainingArguments YAML and the expect.yaml
that tests/core/test_fixtures.py compares findings against). The generated rule is a working one: it
flags `<key>: 0` in a TrainingArguments file, so the suite passes at once and you edit from green.
A code or name that the catalogue already has is refused (exit 2).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEVERITIES = ("error", "warning", "info")

RULE_TEMPLATE = """\
code: {code}
name: {name}
severity: {severity}
summary: {key} is 0 in the TrainingArguments
# a rule reads only the facts the namespace classes declare (`gpu-advise facts` lists them)
let:
  value: training.{key}
when: value is not None and value == 0
at: training.{key}
message: "{key}={{training.{key}}}: say what is wrong and what to do in one or two sentences"
docs: |
  ## What it does
  Flags `{key}: 0` in a TrainingArguments file.

  ## Why it matters
  Say what goes wrong at run time, with the library's own words and where they come from.

  ## Fix
  Say what to set instead.

  ## References
  - the upstream file and line this judgement comes from
examples:
  - expect: fail
    at: args.yaml:2:{col}
    files:
      args.yaml: "output_dir: out\\n{key}: 0\\n"
  - expect: pass
    files:
      args.yaml: "output_dir: out\\n{key}: 10\\n"
"""

FIXTURE_FILE = "output_dir: out/sft\nper_device_train_batch_size: 4\n{key}: {value}\n"
FAIL_EXPECT = """\
# {key}: 0 is flagged at its value
findings:
  - {{rule: {code}, file: sft.yaml, line: 3, col: {col}}}
"""
PASS_EXPECT = """\
# a positive {key} is not flagged
findings: []
absent: [{code}]
"""


class ScaffoldError(Exception):
    """A code or name that cannot be used; the message names why."""


def _existing(rules_dir: Path) -> dict[str, Path]:
    """Codes and names of the rule files in rules_dir, read from the file names (CODE-name.yaml)."""
    taken: dict[str, Path] = {}
    for path in sorted(rules_dir.glob("*.yaml")):
        code, _, name = path.stem.partition("-")
        taken[code] = path
        if name:
            taken[name] = path
    return taken


def scaffold(root: Path, code: str, name: str, severity: str, key: str) -> list[Path]:
    """Write the rule file and its two fixture projects under root; return the paths written."""
    if not re.fullmatch(r"[A-Z]{2,5}\d{3}", code):
        raise ScaffoldError(f"rule code {code!r} must be letters then three digits, like GA702")
    if not re.fullmatch(r"[a-z][a-z0-9-]+", name):
        raise ScaffoldError(f"rule name {name!r} must be kebab-case, like logging-steps-zero")
    if severity not in SEVERITIES:
        raise ScaffoldError(f"severity {severity!r} must be one of {', '.join(SEVERITIES)}")
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", key):
        raise ScaffoldError(f"key {key!r} must be a TrainingArguments key, like logging_steps")
    rules_dir = root / "rules"
    fixtures_dir = root / "fixtures" / "rules" / code
    taken = _existing(rules_dir)
    for wanted in (code, name):
        if wanted in taken:
            raise ScaffoldError(f"{wanted} is already used by {taken[wanted]}")
    if fixtures_dir.exists():
        raise ScaffoldError(f"{fixtures_dir} exists already")
    # the column of the value in `key: 0` is len("key: ") + 1 (1-based)
    col = len(key) + 3
    fail = fixtures_dir / f"fail-{name}"
    passing = fixtures_dir / f"pass-{name}"
    outputs = {
        rules_dir / f"{code}-{name}.yaml": RULE_TEMPLATE.format(
            code=code, name=name, severity=severity, key=key, col=col
        ),
        fail / "sft.yaml": FIXTURE_FILE.format(key=key, value=0),
        fail / "expect.yaml": FAIL_EXPECT.format(key=key, code=code, col=col),
        passing / "sft.yaml": FIXTURE_FILE.format(key=key, value=10),
        passing / "expect.yaml": PASS_EXPECT.format(key=key, code=code),
    }
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(outputs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("code", help="the new rule code, e.g. GA702")
    parser.add_argument("name", help="the new rule name in kebab-case, e.g. logging-steps-zero")
    parser.add_argument("--severity", default="warning", choices=SEVERITIES)
    parser.add_argument("--key", default="logging_steps", help="the TrainingArguments key the template reads")
    parser.add_argument(
        "--root", type=Path, default=REPO, help="the checkout to write into (default: this one)"
    )
    args = parser.parse_args(argv)
    try:
        written = scaffold(args.root, args.code, args.name, args.severity, args.key)
    except ScaffoldError as exc:
        print(f"new_rule: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    print("next: edit the rule, then python3 tools/gen_rule_docs.py and the tests (CONTRIBUTING.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
