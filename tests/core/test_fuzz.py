"""Property-based: mutated real corpus files never make an exception escape."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.check import CheckOptions, run_check
from advisor.sources.read import read_document
from tests.conftest import CORPUS

SAMPLES = (
    sorted(
        p
        for folder in ("accelerate", "deepspeed", "training_args", "axolotl", "launch")
        for p in (CORPUS / folder).glob("*")
    )[::7]
    if CORPUS.is_dir()
    else []
)

JUNK = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        '"',
        "'",
        "\t",
        "\n",
        "- ",
        "&a ",
        "*a",
        "#",
        "\\",
        "\x00",
        "$(",
        "${X:-",
        "`",
        "é",
        "\ufeff",
        "!!python/object",
        "---\n",
        "...",
    ]
)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    path = draw(st.sampled_from(SAMPLES))
    text = path.read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "delete", "duplicate_line", "truncate"]))
        pos = draw(st.integers(0, max(len(text) - 1, 0)))
        if op == "insert":
            text = text[:pos] + draw(JUNK) + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 40)) :]
        elif op == "duplicate_line":
            lines = text.splitlines(keepends=True)
            if lines:
                i = draw(st.integers(0, len(lines) - 1))
                lines.insert(i, lines[i])
                text = "".join(lines)
        else:
            text = text[:pos]
    return path.suffix or ".sh", text


@pytest.mark.skipif(not SAMPLES, reason="../shared/corpus is absent")
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_corpus_files_never_raise(case: tuple[str, str]) -> None:
    suffix, text = case
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"config{suffix}"
        p.write_bytes(text.encode("utf-8", "surrogatepass"))
        read_document(p)
        result = run_check([p], CheckOptions(hardware="4xH100-NVL"))
        assert not result.errors, result.errors
