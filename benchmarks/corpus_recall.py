"""Recall and false alarms of the rule catalog on both labelled corpora.

First corpus (../shared/corpus): the single-file labels of tests/core/test_corpus_rules.py
(TRUE_POSITIVES: rule and line that must be raised; TRUE_NEGATIVES: rules that must stay quiet),
checked with the rules that test selects. Second corpus (tests/corpus2): labels.yaml, every rule.

Recall = labelled problems found / labelled problems. False alarms: in the first corpus, a
TRUE_NEGATIVES rule that fired; in the second, a `not_raise` rule that fired plus each finding at
warning or above on a clean file. Third corpus (tests/corpus3): whole runs, labels/*.yaml, evaluated by
tests/core/test_corpus3.py; printed per repository with false alarms by severity (an error that is not a
`raise` label, and a `not_raise` rule that fired).

    HF_HUB_OFFLINE=1 python3 benchmarks/corpus_recall.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def first_corpus() -> tuple[int, int, list[str], list[str]]:
    """(labels, found, missed, false alarms)."""
    from advisor.pipeline.check import CheckOptions, run_check
    from tests.conftest import CORPUS
    from tests.core.test_corpus_rules import MINE, TRUE_NEGATIVES, TRUE_POSITIVES

    def findings(rel: str, hardware: str | None) -> list:
        path = CORPUS / rel
        here = Path.cwd()
        os.chdir(path.parent)
        try:
            return run_check([Path(path.name)], CheckOptions(hardware=hardware, select=MINE)).findings
        finally:
            os.chdir(here)

    labels = found = 0
    missed: list[str] = []
    alarms: list[str] = []
    for rel, hardware, expected, _why in TRUE_POSITIVES:
        got = {
            (f.rule, f.location.line)
            for f in findings(rel, hardware)
            if f.location.file.name == Path(rel).name
        }
        for item in expected:
            labels += 1
            if item in got:
                found += 1
            else:
                missed.append(f"{rel} {item}")
    for rel, hardware, absent, _why in TRUE_NEGATIVES:
        alarms += [f"{rel} {f.rule}:{f.location.line}" for f in findings(rel, hardware) if f.rule in absent]
    return labels, found, missed, alarms


def second_corpus() -> tuple[int, int, list[str], list[str]]:
    from tests.core.test_corpus2 import evaluate, load_labels

    entries = load_labels()["files"]
    results = evaluate()
    labels = sum(r.labels for r in results)
    missed = [f"{r.name} {m}" for r in results for m in r.missed]
    alarms = [f"{r.name} {rule} (not_raise)" for r in results for rule in r.unwanted]
    alarms += [
        f"{r.name} {loud} (clean file)"
        for r in results
        if not entries[r.name].get("raise")
        for loud in r.loud
    ]
    return labels, labels - len(missed), missed, alarms


def third_corpus() -> None:
    from collections import Counter, defaultdict

    from tests.core.test_corpus3 import evaluate

    results = evaluate()
    if not results:
        print("third corpus (tests/corpus3): no stored labelled entries yet")
        return
    by_repo: dict[str, list] = defaultdict(list)
    for r in results:
        by_repo[r.repo].append(r)
    labels = sum(r.labels for r in results)
    missed = sum(len(r.missed) for r in results)
    found = labels - missed
    recall = found / labels if labels else 0.0
    alarms = Counter(r.severity[k] for r in results for k in {*r.unlabelled_errors, *r.unwanted})
    print(
        f"third corpus (tests/corpus3): {len(results)} entries, {len(by_repo)} repositories, "
        f"recall {found}/{labels} = {recall:.1%}, false alarms {dict(alarms) or 0}"
    )
    for repo, entries in sorted(by_repo.items()):
        n = sum(r.labels for r in entries)
        m = sum(len(r.missed) for r in entries)
        sev = Counter(r.severity[k] for r in entries for k in {*r.unlabelled_errors, *r.unwanted})
        print(f"  {repo}: found {n - m}/{n}, false alarms {dict(sev) or 0}")
        for r in entries:
            for rule, file, line in r.missed:
                print(f"    missed: {r.name} {rule} {file}:{line}")
            for k in sorted({*r.unlabelled_errors, *r.unwanted}):
                print(f"    false alarm: {r.name} {k[0]} {k[1]}:{k[2]} ({r.severity[k]})")


def main() -> int:
    from tests.conftest import CORPUS

    rows = []
    if CORPUS.is_dir():
        rows.append(("first corpus (../shared/corpus)", *first_corpus()))
    else:
        print("first corpus: ../shared/corpus is absent, skipped")
    rows.append(("second corpus (tests/corpus2)", *second_corpus()))
    for name, labels, found, missed, alarms in rows:
        recall = found / labels if labels else 0.0
        print(f"{name}: recall {found}/{labels} = {recall:.1%}, false alarms {len(alarms)}")
        for m in missed:
            print(f"  missed: {m}")
        for a in alarms:
            print(f"  false alarm: {a}")
    third_corpus()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
