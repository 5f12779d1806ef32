"""The check context: what a check knows about the project, built once and carried on each plan."""

from advisor.plan.context.check_context import CheckContext

__all__ = ["CheckContext"]
