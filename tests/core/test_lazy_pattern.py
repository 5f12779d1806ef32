"""advisor/core/lazy_pattern.py: a module's pattern compiled on first use answers as re.Pattern does."""

from __future__ import annotations

import re

from advisor.core.lazy_pattern import LazyPattern


def test_it_compiles_on_first_use_and_answers_as_the_compiled_pattern() -> None:
    lazy = LazyPattern(r"(\d+)-(\w+)", re.IGNORECASE)
    real = re.compile(r"(\d+)-(\w+)", re.IGNORECASE)
    assert lazy._compiled is None and lazy.pattern == real.pattern
    text = "a 12-ab, 3-C and 45-dd"
    assert lazy.search(text).group(0) == real.search(text).group(0)  # type: ignore[union-attr]
    assert lazy._compiled is not None
    assert lazy.match(text) is None and real.match(text) is None
    assert lazy.match(text, 2).span() == real.match(text, 2).span()  # type: ignore[union-attr]
    assert lazy.fullmatch("3-c").groups() == ("3", "c")  # type: ignore[union-attr]
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.findall(text, 0, 10) == real.findall(text, 0, 10)
    assert lazy.split(text, 1) == real.split(text, 1)
    assert lazy.sub("<>", text, 2) == real.sub("<>", text, 2)
    assert lazy.subn(lambda m: m.group(2), text) == real.subn(lambda m: m.group(2), text)
