"""The memory model: TrainingSetup in, phase-aware peak per GPU out (memory-model.md section 6).

setup.py        the input (TrainingSetup) and output (MemoryEstimate, MemoryItem, Term) types
resolve.py      resolve_setup: stated assumptions for unknown inputs, the dtype facts
optimizers.py   optimizer state profiles
lora.py         adapter targets and parameter counts
activations.py  saved activations, backward working set, logits per token
terms.py        one function per memory term
peak.py         estimate_memory (phases, peak, band, verdict) and what_if
"""

from advisor.estimate.memory.lora import lora_params
from advisor.estimate.memory.optimizers import has_optimizer_profile
from advisor.estimate.memory.peak import PhaseTerms, estimate_memory, phase_terms, what_if
from advisor.estimate.memory.resolve import DtypeFacts, ResolvedSetup, resolve_setup
from advisor.estimate.memory.setup import MemoryEstimate, MemoryItem, Term, TrainingSetup

_resolve = resolve_setup  # the time model's name for it (advisor/estimate/timing.py)

__all__ = [
    "DtypeFacts",
    "MemoryEstimate",
    "MemoryItem",
    "PhaseTerms",
    "ResolvedSetup",
    "Term",
    "TrainingSetup",
    "estimate_memory",
    "has_optimizer_profile",
    "lora_params",
    "phase_terms",
    "resolve_setup",
    "what_if",
]
