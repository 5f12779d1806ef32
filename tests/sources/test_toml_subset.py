"""advisor.sources.toml_subset: whatever it reads, tomllib reads the same; what it cannot be sure of, it
leaves to tomllib (None)."""

from __future__ import annotations

import random
import tomllib
from pathlib import Path

import pytest

from advisor.sources import settings as settings_module
from advisor.sources import toml_subset
from advisor.sources.toml_subset import loads

REPO = Path(__file__).resolve().parents[2]


def _tomllib(text: str) -> object:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return "error"


def _agrees(text: str) -> bool:
    ours = loads(text)
    return ours is None or ours == _tomllib(text)


def test_the_repository_toml_files_read_as_tomllib_reads_them() -> None:
    files = [p for p in REPO.rglob("*.toml") if ".git" not in p.parts]
    read = [p for p in files if loads(p.read_text(errors="replace")) is not None]
    assert [p for p in files if not _agrees(p.read_text(errors="replace"))] == []
    # the subset is the common case, or it buys nothing: the bundled example's settings among them
    assert REPO / "fixtures" / "example" / ".gpu-advise.toml" in read
    assert len(read) > len(files) // 2


@pytest.mark.parametrize(
    "text",
    [
        "",
        "# only a comment",
        'hardware = "4xH100-NVL"\n',
        "a=1\nb = -2\nc = +3\nd = 0.25\ne = -0.0\nf = true\ng = false",
        "a = 1 # trailing\n\n\n[thresholds]\nx = 1.5\n",
        'select = [\n  "GA1",  # why\n  "GA2",\n]\nignore = []\n',
        "x = [[1, 2], ['a'], [], [true, 1.5]]",
        "[[runs]]\npath = 'a.sh'\n[[runs]]\npath = 'b.sh'\n",
        "name = \"tab\there and ünïcode\"\nlit = 'C:\\path'\n",
        "  indented = 1\n\t[t]\n  k = 2",
        "a = 1#c\nb = [1#c\n,2]",
        "true = 1\n0 = 2\n-_ = 3",
    ],
)
def test_plain_documents_are_read_as_tomllib_reads_them(text: str) -> None:
    assert loads(text) == tomllib.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        "a.b = 1",  # dotted key
        '"a" = 1',  # quoted key
        "a = 1\na = 2",  # repeated key (tomllib: an error)
        "[t]\n[t]",  # repeated table (an error)
        "a = 1\n[a]",  # a table over a value (an error)
        "[[a]]\n[a]",
        "[a]\n[[a]]",
        "a = []\n[[a]]",
        "[a.b]\nx = 1",  # dotted header
        "[ a ]",
        "[a]]",
        "[[a]",
        "a = { b = 1 }",  # inline table
        'a = "x\\ty"',  # an escape
        'a = """x"""',
        "a = '''x'''",
        "a = 1979-05-27",
        "a = 1e5",
        "a = 1.5e3",
        "a = 1_000",
        "a = 0x1F",
        "a = 01",
        "a = 1.",
        "a = .5",
        "a = inf",
        "a = nan",
        "a = truex",
        "a = 1234567890123456789",  # past 18 digits
        "a = 1\r\n",  # CR: tomllib's
        "a = 1 b = 2",
        "a = [1 2]",
        "a = [1,,2]",
        "a = [",
        "a =",
        "a = 1,",
        "\ufeffa = 1",
        "a = 'x\x01'",
        "# \x7f",
        'a = "unterminated',
    ],
)
def test_anything_else_is_left_to_tomllib(text: str) -> None:
    assert loads(text) is None


_PIECES = [
    "a", "b", "runs", "k-1", "x_y", "a.b", '"q"', " ", "\t", "\n", "\n", "\n", "=", " = ", "#c", "# é\n",
    "[", "]", "[[", "]]", ",", "1", "0", "-", "+", "12", ".", "5", "e", "_", "true", "false", "inf",
    '"s"', '"', "'l'", "'", "\\", "{", "}", "1979-05-27", "\r", "\x01", "ü",
]  # fmt: skip


def _statement(rng: random.Random) -> str:
    key = rng.choice(["a", "b", "c", "runs", "k-1", "0"])
    kind = rng.random()
    if kind < 0.15:
        return rng.choice(["[", "[["]) + key + rng.choice(["]", "]]"])
    value = rng.choice(
        ["1", "-2", "+0", "0.5", "true", "false", '"s"', "'l'", "[]", '[1, "x",]', "[\n1, # c\n 2]"]
    )
    equals = rng.choice(["=", " = ", " =", "\t=\t"])
    return f"{key}{equals}{value}{rng.choice(['', ' ', ' # c'])}"


def test_generated_and_mutated_documents_agree_with_tomllib() -> None:
    rng = random.Random(18)
    accepted = 0
    for _ in range(3000):
        lines = [_statement(rng) for _ in range(rng.randint(0, 6))]
        text = "\n".join(lines)
        if rng.random() < 0.5:  # a mutation: a piece inserted, or a character dropped
            at = rng.randint(0, len(text))
            text = (
                text[:at] + rng.choice(_PIECES) + text[at:]
                if rng.random() < 0.7
                else text[:at] + text[at + 1 :]
            )
        ours = loads(text)
        if ours is not None:
            accepted += 1
            assert ours == _tomllib(text), text
    assert accepted > 500  # the generator exercises the accepted path, not only the refusals


def test_settings_are_the_same_with_and_without_the_subset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ".gpu-advise.toml"
    text = (REPO / "fixtures" / "example" / ".gpu-advise.toml").read_text()
    path.write_text(text)
    assert loads(text) is not None
    with_subset = settings_module.parse_settings(text, path)
    monkeypatch.setattr(toml_subset, "loads", lambda _text: None)
    assert settings_module.parse_settings(text, path) == with_subset
