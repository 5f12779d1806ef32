"""The fact builders of a run, listed once (as yamllint lists its rules), and the order they run in.

A builder is a typed function of the plan and the namespaces it reads, named by its parameters:
`def placement_facts(plan: RunPlan, batch: BatchFacts) -> PlacementFacts`. Its return annotation names
the namespace class it builds (advisor/facts/declare.py); the order is derived from the parameter names
here, at import: a builder runs after every builder it reads, and a name no builder and no plan provides
is refused (tests/core/test_fact_catalogue.py imports this module).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from advisor.facts.batch import batch_facts
from advisor.facts.data import data_facts
from advisor.facts.declare import FactNamespace
from advisor.facts.estimates import estimates_facts
from advisor.facts.hardware import hardware_facts
from advisor.facts.placement import placement_facts
from advisor.facts.precision import precision_facts
from advisor.facts.reference_run import baseline_facts
from advisor.facts.run import run_facts
from advisor.facts.training_script import script_facts

if TYPE_CHECKING:
    from advisor.plan.run_plan import RunPlan

# in the order the catalogue lists them (docs/facts.md); BUILD_ORDER is the order they run in
FACT_BUILDERS: tuple[Callable[..., FactNamespace], ...] = (
    batch_facts,
    hardware_facts,
    data_facts,
    run_facts,
    placement_facts,
    precision_facts,
    script_facts,
    baseline_facts,
    estimates_facts,
)

# what the plan itself provides (advisor.plan.run_plan.RunPlan.namespaces): a builder may read these too
PLAN_NAMESPACES = ("training", "accelerate", "deepspeed", "launch", "env", "model")


class Builder:
    """One registry entry: the function, the namespace class it returns and the namespaces it reads."""

    __slots__ = ("cls", "function", "requires")

    def __init__(self, function: Callable[..., FactNamespace]) -> None:
        code = function.__code__
        # the parameter names, as inspect.signature reads them (co_varnames starts with the positional
        # parameters), without importing inspect on the check path (~7 ms)
        params = code.co_varnames[: code.co_argcount]
        if not params or params[0] != "plan":
            raise TypeError(f"{function.__qualname__}: a fact builder's first parameter is the plan")
        returns = function.__annotations__.get("return")
        cls = function.__globals__.get(returns) if isinstance(returns, str) else returns
        if not (isinstance(cls, type) and issubclass(cls, FactNamespace)):
            raise TypeError(f"{function.__qualname__} must be annotated to return its FactNamespace class")
        self.function = function
        self.cls: type[FactNamespace] = cls
        self.requires: tuple[str, ...] = tuple(params[1:])

    @property
    def name(self) -> str:
        return self.cls.namespace

    @property
    def path(self) -> str:
        return f"{self.function.__module__}:{self.function.__name__}"

    def __call__(self, plan: RunPlan, names: dict[str, Any]) -> FactNamespace:
        return self.function(plan, *(names[r] for r in self.requires))


def _ordered(builders: tuple[Callable[..., FactNamespace], ...]) -> tuple[Builder, ...]:
    entries = [Builder(b) for b in builders]
    known = {e.name for e in entries} | set(PLAN_NAMESPACES)
    for e in entries:
        unknown = [r for r in e.requires if r not in known]
        if unknown:
            raise TypeError(f"{e.path} reads {', '.join(unknown)}: no builder or plan provides it")
    done, order, pending = set(PLAN_NAMESPACES), [], list(entries)
    while pending:
        ready = [e for e in pending if all(r in done for r in e.requires)]
        if not ready:
            raise TypeError(f"fact builders read each other: {', '.join(e.path for e in pending)}")
        for e in ready:
            order.append(e)
            done.add(e.name)
            pending.remove(e)
    return tuple(order)


BUILD_ORDER: tuple[Builder, ...] = _ordered(FACT_BUILDERS)
