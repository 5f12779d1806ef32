"""advisor.report.text.wrap_words is textwrap.wrap with break_long_words=False and break_on_hyphens=False
(it exists so that a check does not import textwrap): the two agree on generated text."""

from __future__ import annotations

import random
import textwrap

import pytest

from advisor.report.text import wrap_words

# words, hyphens, every kind of whitespace textwrap turns into a space, and spaces it does not split at
# (U+00A0, U+2003: `.strip()` removes them, so they count as whitespace where a line starts or ends)
_PIECES = ["a", "bb", "word", "x" * 30, "-", "--opt", "a-b", " ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c"]
_PIECES += ["\xa0", "\u2003", "é", "configs/a_very_long/path/name.yaml"]


def _expected(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text,
        width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_textwrap(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(0, 40)))
        width = rng.choice([1, 2, 5, 10, 20, 40, 100])
        first = " " * rng.randrange(0, 12)
        rest = rng.choice(["", " " * 4, " " * 10, ">" * 25])
        assert wrap_words(text, width, first, rest) == _expected(text, width, first, rest), (text, width)


def test_a_message_wraps_as_before() -> None:
    message = (
        "FSDP FULL_SHARD over 2 GPUs whose slowest link is PCIe (about 28 GB/s): parameters are "
        "all-gathered twice per micro-batch, 1.5x DDP's traffic, and the GPUs wait on the link."
    )
    got = wrap_words(message, 100, " " * 24, " " * 10)
    assert got == _expected(message, 100, " " * 24, " " * 10)
    assert (
        len(got) == 3 and got[1].startswith(" " * 10 + "parameters") and got[2] == " " * 10 + "on the link."
    )


def test_refuses_a_width_below_one() -> None:
    with pytest.raises(ValueError, match="invalid width"):
        wrap_words("a b", 0)
