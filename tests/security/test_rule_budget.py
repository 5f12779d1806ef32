"""Issue 17, item 4: rule expressions stay within their budget.

A rule file can come from the pull request being checked, so its expressions are hostile input. Before,
a 100-byte message template built 2.9 GB in 11 s (text was built before its size was checked), one `==`
of two lists repeating one long list was a single 7-21 s step, and with the clock read every 1,024 steps
a comprehension of such steps ran 45 s. Each attack of benchmarks/rule_budget.py is run here through the
CLI, in a process of its own with `--rules DIR`: it must be that rule's error (exit 2, "stopped: ..."),
stopped by a size or work budget rather than the 2 s clock, within a few hundred MB and seconds of CPU.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.expr import BudgetError, Limits, parse
from advisor.core.rule_helpers import show_text, text_of
from advisor.engine.evaluator import Evaluator
from advisor.engine.rule_engine import HELPERS
from tests.conftest import REPO


def _benchmark() -> Any:
    spec = importlib.util.spec_from_file_location("rule_budget", REPO / "benchmarks" / "rule_budget.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("rule_budget", module)
    spec.loader.exec_module(module)
    return module


BENCH = _benchmark()


@pytest.mark.parametrize("case", sorted(BENCH.CASES))
def test_each_attack_is_stopped_by_its_budget_through_the_cli(case: str) -> None:
    # the child's address space is capped at 2 GB: before, the message attacks reached the cap
    row = BENCH.run_case(case, REPO, timeout=60.0, memory_gb=2.0)
    assert row["exit"] == 2, row
    if case != "fix-value":  # --format json carries no rule errors: the exit code says it
        assert "rule XB001 (XB001.yaml) failed" in row["says"] and "stopped:" in row["says"], row
        assert "took more than" not in row["says"], row  # a size or work budget, not the clock
        assert "out of memory" not in row["says"], row
    assert "Traceback" not in row["says"]
    assert row["peak_rss_mb"] < 300, row
    assert row["cpu_seconds"] < 6, row  # start-up and the budget; before: 3.6 to 40 s


# --------------------------------------------------------------------------------------------------
# The clock is read on every expensive step, whatever the work budget allows


def test_the_clock_stops_a_comprehension_of_expensive_steps() -> None:
    # a work budget too large to stop it: only the clock can, and it must not wait 1,024 steps
    ev = Evaluator({}, HELPERS, Limits(work=10**15, seconds=0.3))
    for name, source in (("a", "[[0] * 99999] * 300"), ("b", "[[0] * 99999] * 300")):
        ev.bind(name, ev.evaluate(parse(source, HELPERS)))
    ev.reset()
    bomb = parse("len([a == b for c in 'a' * 999])", HELPERS)
    start = time.process_time()
    with pytest.raises(BudgetError, match="took more than"):
        ev.evaluate(bomb)
    assert time.process_time() - start < 2.0  # each step is 0.1 s: before, 1,024 of them ran first


def test_the_work_budget_is_charged_before_the_comparison_runs() -> None:
    ev = Evaluator({}, HELPERS, Limits(work=1_000_000))
    start = time.process_time()
    with pytest.raises(BudgetError, match="compared, hashed, sorted"):
        ev.evaluate(parse("[[0] * 99999] * 99999 == [[0] * 99999] * 99999", HELPERS))
    assert time.process_time() - start < 0.5


def test_a_repetition_is_charged_before_it_is_built() -> None:
    ev = Evaluator({}, HELPERS, Limits(allocation=1_000))
    with pytest.raises(BudgetError, match="produced more than"):
        ev.evaluate(parse("len('a' * 5000)", HELPERS))
    assert ev._alloc == 5000  # the string was never made: the charge came first


# --------------------------------------------------------------------------------------------------
# Ordinary expressions keep working, with the same results


ORDINARY = [
    ("len(sorted([str(i) for i in [5, 3, 1] * 3000])) == 9000", True),
    ("[0] * 50000 == [0] * 50000", True),
    ("'x' * 60000 in 'y' + 'x' * 60000", True),
    ("len({(i, 'k'): i for i in [1, 2, 3] * 1000})", 3),
    ("str([1, 'a', (2,), {'k': None}, 1.5, True])", "[1, 'a', (2,), {'k': None}, 1.5, True]"),
    ("show([1, 2.5, None, [True, 'x']])", "1,2.5,None,True,x"),
    ("join(['a' * 30000, 'b' * 30000], '-') == 'a' * 30000 + '-' + 'b' * 30000", True),
    ("plural(3, 'process')", "3 processes"),
    ("max([[1, 2], [1, 3]] * 1000)", [1, 3]),
    ("10 ** 300 // 7 ** 100 > 0", True),
]


@pytest.mark.parametrize(("source", "expected"), ORDINARY, ids=[s for s, _ in ORDINARY])
def test_ordinary_expressions_are_within_the_budget(source: str, expected: Any) -> None:
    assert Evaluator({}, HELPERS).evaluate(parse(source, HELPERS)) == expected


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_KEYS = st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner) | st.lists(inner).map(tuple) | st.dictionaries(_KEYS, inner),
    max_leaves=30,
)


def _show(value: Any) -> str:
    """How message templates showed values before the text was bounded (advisor/core/rule_helpers.py)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ",".join(_show(v) for v in value)
    return str(value)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_bounded_text_is_exactly_pythons(value: Any) -> None:
    assert text_of(value) == str(value)
    assert show_text(value) == _show(value)


def test_bounded_text_stops_at_its_limit() -> None:
    with pytest.raises(BudgetError):
        text_of(["a" * 99_999] * 29_000)
    with pytest.raises(BudgetError):
        show_text([[]] * 99_999, limit=1_000)
    assert text_of(["é\x00"], limit=20) == "['é\\x00']"
