"""Rule selectors, one meaning everywhere: --select/--ignore, `select`/`ignore` and `per-file-ignores` in
the settings, and the codes of `# gpu-advise: ignore[...]` directives.

A selector is `ALL`, a rule code (`GA203`), a code prefix (`GA2`, `GA`: letters, then digits), a rule
name (`prefetch-without-workers`) or one of a rule's aliases. Codes and prefixes and ALL are
case-insensitive; names and aliases are exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from advisor.core.lazy_pattern import LazyPattern

_PREFIX = LazyPattern(r"[A-Za-z]+\d*")


def matches(selector: str, code: str, name: str, aliases: Iterable[str] = ()) -> bool:
    """Whether one selector names the rule with this code, name and aliases."""
    s = selector.strip()
    if not s:
        return False
    if s.upper() == "ALL" or s == name or s in aliases:
        return True
    return _PREFIX.fullmatch(s) is not None and code.upper().startswith(s.upper())


def matches_any(selectors: Iterable[str], code: str, name: str, aliases: Iterable[str] = ()) -> bool:
    aliases = tuple(aliases)
    return any(matches(s, code, name, aliases) for s in selectors)


def rule_matches(selector: str, rule: Any) -> bool:
    """`matches` for a compiled rule (advisor.engine.rule_engine.CompiledRule)."""
    return matches(selector, rule.spec.code, rule.spec.name, rule.spec.aliases)


def named_rules(selector: str, rules: Iterable[Any]) -> list[Any]:
    """The rules a selector names (none: a typo, or a rule that does not exist)."""
    return [r for r in rules if rule_matches(selector, r)]


def find_rule(key: str, rules: Iterable[Any]) -> Any | None:
    """The one rule a code, name or alias names exactly (`gpu-advise rule CODE`), or None."""
    k = key.strip()
    for r in rules:
        if k.upper() == r.spec.code or k == r.spec.name or k in r.spec.aliases:
            return r
    return None
