"""The training-script analyser: the script's AST (never imported or executed) read for rank-unguarded
side effects (side_effects.py), model loads (load_calls.py) and argument dataclasses
(argument_parsers.py). The `script` namespace that rules read is built from it in
advisor/facts/training_script.py."""

from __future__ import annotations

from functools import lru_cache

from advisor.facts.script_ast.results import (
    MAX_SCRIPT_BYTES,
    ArgumentClass,
    ArgumentParsing,
    LoadCall,
    ScriptFacts,
    SideEffect,
)
from advisor.facts.script_ast.side_effects import ScriptAnalyser
from advisor.sources.python_source import PythonSyntaxError, python_tree

__all__ = [
    "MAX_SCRIPT_BYTES",
    "ArgumentClass",
    "ArgumentParsing",
    "LoadCall",
    "ScriptFacts",
    "SideEffect",
    "analyse_script",
]


@lru_cache(maxsize=16)
def analyse_script(text: str) -> ScriptFacts:
    """Static facts about a training script's text; never raises on bad input, never executes it.
    Cached by text (the facts are frozen): the run's script facts and the launch flags' check
    (advisor.facts.script_flags) read the same script."""
    if len(text) > MAX_SCRIPT_BYTES or (
        len(text) * 4 > MAX_SCRIPT_BYTES and len(text.encode("utf-8", errors="replace")) > MAX_SCRIPT_BYTES
    ):
        return ScriptFacts(
            syntax_error=(f"script larger than {MAX_SCRIPT_BYTES // (1024 * 1024)} MB: not analysed", 1, 1)
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        col = nul - (text.rfind("\n", 0, nul) + 1) + 1
        return ScriptFacts(syntax_error=("source contains a null byte", line, col))
    tree = python_tree(text)
    if isinstance(tree, PythonSyntaxError):
        return ScriptFacts(syntax_error=(tree.message, tree.line, tree.col))
    analyser = ScriptAnalyser(tree, text)
    try:
        analyser.collect()
        analyser.walk()
        return analyser.facts()
    except RecursionError:
        return ScriptFacts(syntax_error=("script too deeply nested to analyse", 1, 1))
