"""Did-you-mean: the closest known names to a mistyped one.

difflib is imported on the first mistake, not at start-up (with heapq it is ~1 ms of every
pre-commit run, and a clean run never needs it)."""

from __future__ import annotations

from collections.abc import Iterable


def close_matches(word: str, choices: Iterable[str], *, n: int = 1, cutoff: float = 0.6) -> list[str]:
    """Up to n of `choices` most like `word` (difflib's ratio >= cutoff), best first."""
    import difflib

    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)
