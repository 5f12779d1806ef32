"""The training script is parsed once per text, however many readers ask (discover, plan, facts)."""

from __future__ import annotations

import ast

from advisor.sources.python_source import PythonSyntaxError, parsed, python_tree, tree_nodes


def test_one_tree_per_text_and_a_bom_dropped() -> None:
    text = "\ufeffimport torch\nprint(torch.__version__)\n"
    assert python_tree(text) is python_tree(text) is parsed(text)
    assert parsed(text) is not None


def test_why_a_script_does_not_parse() -> None:
    assert python_tree("def f(:\n") == PythonSyntaxError("invalid syntax", 1, 7)
    assert python_tree("x = 1\0\n") == PythonSyntaxError("source code string cannot contain null bytes", 1, 1)
    assert python_tree("(" * 300 + ")" * 300) == PythonSyntaxError("too many nested parentheses", 1, 201)
    assert parsed("def f(:\n") is None


def test_a_trees_nodes_are_walked_once_in_ast_walks_order() -> None:
    tree = parsed("def f(x):\n    if x:\n        return g(x, 1)\n\nf(2)\n")
    assert tree is not None
    nodes = tree_nodes(tree)
    assert list(nodes) == list(ast.walk(tree))
    assert tree_nodes(tree) is nodes  # the same tree is not walked again
    assert tree_nodes(parsed("x = 1\n")) != nodes
