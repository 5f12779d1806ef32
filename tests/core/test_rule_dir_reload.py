"""A user's rule folder is read by each check: a rule edited between two checks in one process (an
editor's language server, a test session) is judged as it now reads, not as it was first compiled."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.rule_engine import load_catalog

RULE = """code: TST901
name: learning-rate-limit
severity: warning
summary: "a learning rate above a limit"
when: is_number(training.learning_rate) and training.learning_rate > {limit}
at: training.learning_rate
message: "learning_rate={{training.learning_rate}} is above {limit}"
docs: |
  ## What it does
  A test rule whose limit the test edits.
"""


def _rule(rules: Path) -> str:
    [rule] = [r for r in load_catalog([rules]) if r.spec.code == "TST901"]
    return rule.spec.message


def test_an_edited_user_rule_is_read_again(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    path = rules / "TST901-learning-rate-limit.yaml"
    path.write_text(RULE.format(limit="0.001"), encoding="utf-8")
    assert _rule(rules).endswith("above 0.001")
    path.write_text(RULE.format(limit="0.01"), encoding="utf-8")
    assert _rule(rules).endswith("above 0.01")
