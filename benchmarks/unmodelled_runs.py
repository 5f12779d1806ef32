"""How many runs of the corpora get no memory estimate because their training stack is not modelled.

Every file of ../shared/corpus (one run each, as the corpus tests read them), every recipe folder of
tests/corpus2 and every row folder of benchmarks/data (memory/, time/, heldout/) goes through the user's
path (config files -> RunPlan -> estimator inputs). A run is counted "not modelled" when the estimator
refuses its method (the reason says "not modelled", an optimizer without a memory profile, a quantized base
it does not train); other missing estimates (no model name, an unknown model) are counted apart.

    HF_HUB_OFFLINE=1 python3 benchmarks/unmodelled_runs.py [--list]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

UNMODELLED_MARKS = ("not modelled", "has no memory profile", "not a training setup the estimator models")


def targets() -> list[tuple[str, Path]]:
    """(corpus, path) for each run: a file of the file corpora, a folder of the calibration data."""
    out: list[tuple[str, Path]] = []
    shared = REPO.parent / "shared" / "corpus"
    out += [("shared/corpus", p) for p in sorted(shared.rglob("*")) if p.is_file() and p.suffix != ".md"]
    corpus2 = REPO / "tests" / "corpus2"
    out += [("corpus2", p) for p in sorted(corpus2.iterdir()) if p.is_dir()]  # a folder per recipe
    for kind in ("memory", "time", "heldout"):
        folder = REPO / "benchmarks" / "data" / kind
        if folder.is_dir():
            out += [(f"data/{kind}", p) for p in sorted(folder.iterdir()) if p.is_dir()]
    return out


def reasons(path: Path) -> list[str | None]:
    """Per run found at `path`: None when it has a memory estimate, else the reason it has none."""
    from advisor.facts import run_names
    from advisor.facts.estimates import plan_inputs
    from advisor.pipeline.check import CheckOptions, build_plans
    from advisor.sources.settings import Settings

    settings = Settings()
    here = Path.cwd()
    os.chdir(path if path.is_dir() else path.parent)
    try:
        hw = Path("hw.yaml")
        opts = CheckOptions(hardware=str(hw) if path.is_dir() and hw.is_file() else None, settings=settings)
        plans, _ = build_plans([Path(".") if path.is_dir() else Path(path.name)], opts, settings)
        out: list[str | None] = []
        for plan in plans:
            inputs = plan_inputs(plan, run_names(plan))
            out.append(None if inputs.setup is not None else str(inputs.reason))
        return out
    except Exception as exc:  # a crash is a finding of this benchmark, not its end
        return [f"crash: {type(exc).__name__}: {exc}"]
    finally:
        os.chdir(here)


def unmodelled(reason: str | None) -> bool:
    return reason is not None and any(m in reason for m in UNMODELLED_MARKS)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true", help="print each not-modelled run and its reason")
    args = ap.parse_args()
    per: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    why: collections.Counter[str] = collections.Counter()
    for corpus, path in targets():
        for reason in reasons(path):
            kind = "estimated" if reason is None else "not modelled" if unmodelled(reason) else "other"
            per[corpus][kind] += 1
            if kind == "not modelled":
                why[str(reason).split(" (")[0][:90]] += 1
                if args.list:
                    print(f"  {path.relative_to(REPO.parent)}: {reason}")
    print(f"{'corpus':<16} {'runs':>5} {'estimated':>9} {'not modelled':>12} {'other':>6}")
    total: collections.Counter[str] = collections.Counter()
    for corpus, c in per.items():
        total.update(c)
        print(
            f"{corpus:<16} {sum(c.values()):>5} {c['estimated']:>9} {c['not modelled']:>12} {c['other']:>6}"
        )
    t = total
    print(f"{'all':<16} {sum(t.values()):>5} {t['estimated']:>9} {t['not modelled']:>12} {t['other']:>6}")
    print("not modelled, by reason:")
    for reason, n in why.most_common():
        print(f"  {n:>3}  {reason}")


if __name__ == "__main__":
    main()
