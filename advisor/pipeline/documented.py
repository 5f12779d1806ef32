"""Findings of README commands (advisor/sources/readme_launch.py) are at most warnings: a command in
documentation is not a file a consumer runs, so no error stands on it, and `--fix` does not edit
documentation. This holds for every finding located in a Markdown file and for every finding of a run
whose launch is a README command (its files are combined by the documentation alone)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.sources.markdown_files import documented, is_markdown

if TYPE_CHECKING:
    from advisor.core.findings import Finding
    from advisor.plan.run_plan import RunPlan


def cap_documented(findings: list[Finding], plans: list[RunPlan]) -> list[Finding]:
    """The findings, with errors of README commands made warnings and their fixes dropped."""
    runs = {p.name for p in plans if documented(p.spec.root)}
    for finding in findings:
        in_markdown = is_markdown(finding.location.file)
        if not in_markdown and (finding.run is None or finding.run not in runs):
            continue
        if finding.severity == "error":
            finding.severity = "warning"
        if in_markdown:
            finding.fix = None
    return findings
