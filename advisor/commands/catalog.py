"""`gpu-advise rules`, `facts` and `rule`: the rule and fact catalogues."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from advisor.commands.base import OutputFormat, command, die
from advisor.core.suggest import close_matches

if TYPE_CHECKING:
    import typer

else:
    from advisor.commands.base import typer  # PlainTyper until advisor.cli builds the app and rebinds it here


@command("rules")
def list_rules(
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
    rules: Annotated[list[Path] | None, typer.Option("--rules", help="Extra folder of rule files.")] = None,
) -> None:
    """List every rule: code, name, default severity, fixable, summary."""
    from advisor.core.escape import escape_text, escape_value, strict_json
    from advisor.engine.rule_engine import RuleError, load_catalog

    try:
        catalog = load_catalog(rules or [])
    except RuleError as exc:
        die(str(exc))
        return
    if output_format is OutputFormat.json:
        rows = [
            {
                "code": r.code,
                "name": r.spec.name,
                "severity": r.spec.severity,
                "summary": r.spec.summary,
                "fixable": r.spec.fix is not None,
            }
            for r in catalog
        ]
        sys.stdout.write(strict_json(escape_value(rows)) + "\n")
        return
    for r in catalog:
        fix = "fix" if r.spec.fix else "   "
        typer.echo(escape_text(f"{r.code}  {r.spec.name:<32} {r.spec.severity:<8} {fix}  {r.spec.summary}"))


@command("facts")
def list_facts(
    namespace: Annotated[str | None, typer.Argument(help="One namespace, e.g. batch.")] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
) -> None:
    """List the facts rule expressions can read: namespace, name, type, unit, doc (docs/facts.md)."""

    from advisor.core.escape import strict_json
    from advisor.facts import catalogue_view
    from advisor.facts.catalogue import by_name

    if namespace is not None and namespace not in by_name():
        close = close_matches(namespace, list(by_name()), n=1)
        die(f"no fact namespace {namespace!r}" + (f"; did you mean {close[0]!r}?" if close else ""))
        return
    if output_format is OutputFormat.json:
        sys.stdout.write(strict_json(catalogue_view.rows(namespace)) + "\n")
        return
    sys.stdout.write(catalogue_view.text(namespace))


@command("rule")
def show_rule(code: Annotated[str, typer.Argument(help="Rule code or name, e.g. GA203.")]) -> None:
    """Print one rule's documentation."""
    from advisor.engine.rule_engine import load_catalog
    from advisor.engine.selectors import find_rule
    from advisor.report.rule_doc import render_rule
    from advisor.report.sarif import help_uri
    from advisor.report.text import color_enabled

    r = find_rule(code, load_catalog())
    if r is None:
        die(f"no rule '{code}' (see `gpu-advise rules`)")
        return
    uri = help_uri(r)
    page = render_rule(r) + (f"\nDocumentation: {uri}\n" if uri else "")
    if color_enabled("auto", isatty=sys.stdout.isatty()):
        # on a terminal: the Markdown rendered by rich (headings, code blocks, wrapping);
        # piped, the Markdown itself (the text of docs/rules/CODE.md)
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(page))
    else:
        sys.stdout.write(page)
