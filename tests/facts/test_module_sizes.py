"""Every module of advisor/facts/ stays small enough to have one job: at most 800 lines (issue 13)."""

from __future__ import annotations

from tests.conftest import REPO

MAX_LINES = 800


def test_no_facts_module_is_over_800_lines() -> None:
    sizes = {
        path.relative_to(REPO).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (REPO / "advisor" / "facts").rglob("*.py")
    }
    assert sizes, "no module found under advisor/facts"
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
