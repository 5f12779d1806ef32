"""advisor/sources/markdown.py: fenced code blocks as CommonMark 0.31.2 finds them (spec examples 119-147
for fences, 5.2 for list items), with the real line and column of every content line."""

from __future__ import annotations

from advisor.sources.markdown import fenced_blocks


def test_backtick_and_tilde_fences_with_info_strings() -> None:
    text = "# T\n\n```bash\naccelerate launch a.py\n```\n\n~~~~ sh title=x\npython b.py\n~~~~\n"
    blocks = fenced_blocks(text)
    assert [(b.language, b.line, b.closed) for b in blocks] == [("bash", 3, True), ("sh", 7, True)]
    assert [(ln.line, ln.col, ln.text) for ln in blocks[0].lines] == [(4, 0, "accelerate launch a.py")]


def test_closing_fence_same_char_at_least_as_long() -> None:
    # spec example 126/127: a shorter fence or the other character does not close
    text = "````\n```\n~~~\nx\n`````\nafter\n"
    (block,) = fenced_blocks(text)
    assert [ln.text for ln in block.lines] == ["```", "~~~", "x"]
    assert block.closed


def test_unclosed_fence_runs_to_the_end() -> None:
    (block,) = fenced_blocks("```\npython a.py\n\nmore\n")
    assert not block.closed and [ln.text for ln in block.lines] == ["python a.py", "", "more", ""]


def test_backtick_info_with_a_backtick_is_no_fence() -> None:
    # spec example 145: line 1 is text, so the fence of line 3 opens a block (left open)
    assert [(b.line, b.closed) for b in fenced_blocks("``` a`b\nx\n```\n")] == [(3, False)]


def test_indented_fence_strips_its_indent_from_content() -> None:
    # spec example 131: content loses up to as many spaces as the fence is indented
    (block,) = fenced_blocks("  ```\n  aaa\n    aaa\naaa\n  ```\n")
    assert [(ln.col, ln.text) for ln in block.lines] == [(2, "aaa"), (2, "  aaa"), (0, "aaa")]


def test_four_spaces_is_indented_code_not_a_fence() -> None:
    assert fenced_blocks("    ```\n    x\n    ```\n") == []


def test_fence_inside_a_list_item() -> None:
    text = (
        "1. Install:\n\n   ```bash\n   torchrun --nproc_per_node=4 train.py \\\n       --bf16 True\n   ```\n"
    )
    (block,) = fenced_blocks(text)
    assert block.language == "bash" and block.closed and block.col == 3
    assert [(ln.line, ln.col, ln.text) for ln in block.lines] == [
        (4, 3, "torchrun --nproc_per_node=4 train.py \\"),
        (5, 3, "    --bf16 True"),
    ]


def test_list_item_end_closes_its_fence() -> None:
    text = "- a\n  ```\n  x\nnot in the list\n```\ny\n```\n"
    blocks = fenced_blocks(text)
    assert [(b.line, b.closed, [ln.text for ln in b.lines]) for b in blocks] == [
        (2, False, ["x"]),
        (5, True, ["y"]),
    ]


def test_fence_opening_on_the_marker_line() -> None:
    (block,) = fenced_blocks("* ```sh\n  deepspeed t.py\n  ```\n")
    assert block.language == "sh" and [(ln.col, ln.text) for ln in block.lines] == [(2, "deepspeed t.py")]


def test_attribute_style_language_and_crlf() -> None:
    (block,) = fenced_blocks("``` {.Bash}\r\nx\r\n```\r\n")
    assert block.language == "bash" and [ln.text for ln in block.lines] == ["x"]
