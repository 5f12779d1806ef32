"""Where the comments of a YAML or shell file are, as their own readers see them.

Only a comment may carry a `# gpu-advise: ignore[...]` directive (advisor/engine/suppress.py): a `#` inside a
quoted YAML value, a block scalar, a shell string or a here-document is data, and an `ignore-file[ALL]`
written there must not silence the file (issue 17 item 11). YAML is scanned by PyYAML's own scanner
(libyaml when present), the shell by the launch-script lexer; a `#` outside every token is a comment.
Past a point the reader could not read (a YAML syntax error, an unterminated shell quote), nothing is a
comment: what follows it is not known to be one.
"""

from __future__ import annotations

import bisect
import re

from advisor.core.lazy_pattern import LazyPattern

_YAML_BREAK = LazyPattern("\r\n|[\r\n\x85\u2028\u2029]")


def comment_columns(text: str, *, shell: bool) -> dict[int, int]:
    """1-based line -> 0-based column of the `#` that starts the comment on that line."""
    if "#" not in text:
        return {}
    spans, readable = _shell_tokens(text) if shell else _yaml_tokens(text)
    return _comments(text, spans, readable, shell=shell)


def _comments(text: str, spans: list[tuple[int, int]], readable: int, *, shell: bool) -> dict[int, int]:
    spans.sort()
    starts = [a for a, _ in spans]
    ends: list[int] = []
    top = -1
    for _, b in spans:  # the furthest end so far: spans may nest ($(...) inside a word)
        top = max(top, b)
        ends.append(top)
    breaks = re.compile("\n") if shell else _YAML_BREAK
    line_starts = [0] + [m.end() for m in breaks.finditer(text)]
    out: dict[int, int] = {}
    pos = text.find("#")
    while 0 <= pos < readable:
        i = bisect.bisect_right(starts, pos) - 1
        inside = i >= 0 and ends[i] > pos
        line = bisect.bisect_right(line_starts, pos) - 1
        start = line_starts[line]
        at_word_start = pos == start or text[pos - 1] in " \t" or (shell and text[pos - 1] in ";&|()<>")
        if not inside and at_word_start:
            out[line + 1] = pos - start
            nxt = line_starts[line + 1] if line + 1 < len(line_starts) else len(text)
            pos = text.find("#", nxt)
            continue
        pos = text.find("#", pos + 1)
    return out


def _yaml_tokens(text: str) -> tuple[list[tuple[int, int]], int]:
    import yaml

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    spans: list[tuple[int, int]] = []
    readable = len(text)
    try:
        while True:
            token = loader.get_token()
            if token is None:
                break
            spans.append((token.start_mark.index, token.end_mark.index))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        readable = mark.index if mark is not None else 0
        if spans:
            readable = min(readable, spans[-1][1])
    except RecursionError:
        readable = spans[-1][1] if spans else 0
    finally:
        loader.dispose()
    return spans, readable


def _shell_tokens(text: str) -> tuple[list[tuple[int, int]], int]:
    from advisor.sources.shell.lexer import Lexer, Src

    errors: list[tuple[str, int]] = []
    lexer = Lexer(Src(text))
    tokens = lexer.run(errors)
    spans = [(t.start, t.end) for t in tokens]
    spans += [(t.heredoc.a, t.heredoc.b) for t in tokens if t.heredoc is not None and t.heredoc.a >= 0]
    readable = min([idx for _, idx in errors] + [len(text)])
    if lexer.truncated_at is not None:
        readable = min(readable, lexer.truncated_at)
    return spans, readable
