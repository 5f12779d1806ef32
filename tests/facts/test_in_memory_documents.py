"""Document facts of files held in memory (tests/facts/conftest.py document_facts_of): the pins come from
the check context handed to the facts, not from a folder on disk."""

from __future__ import annotations

from advisor.sources.pins import Pin
from tests.facts.conftest import PROJECT

ARGS = "per_device_train_batch_size: 2\nevaluation_strategy: steps\nlearnig_rate: 1e-5\n"


def test_a_misspelt_key_is_unknown_with_its_suggestion(document_facts_of) -> None:
    ns = document_facts_of("args.yaml", ARGS)
    assert ns.kind == "training_args"
    assert [(i["key"], i["suggestion"]) for i in ns.unknown_keys] == [("learnig_rate", "learning_rate")]


def test_the_pin_in_the_context_decides_removed_or_deprecated(document_facts_of) -> None:
    # unpinned: the current transformers has no evaluation_strategy (removed in 4.46, eval_strategy)
    current = document_facts_of("args.yaml", ARGS)
    assert [i["key"] for i in current.removed_keys] == ["evaluation_strategy"]
    assert current.deprecated_keys == []
    # pinned 4.45.2 by the context: the key still exists there, deprecated
    pin = Pin("transformers", "==4.45.2", PROJECT / "requirements.txt", 1)
    pinned = document_facts_of("args.yaml", ARGS, pins={"transformers": pin})
    assert pinned.removed_keys == []
    assert [i["key"] for i in pinned.deprecated_keys] == ["evaluation_strategy"]


def test_nothing_is_read_from_disk(document_facts_of, monkeypatch) -> None:
    import advisor.sources.read as read

    def refused(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a file was opened")

    monkeypatch.setattr(read, "_open_regular", refused)
    ns = document_facts_of(
        "accelerate.yaml", "compute_environment: LOCAL_MACHINE\nnum_processes: 2\nmixd: 1\n"
    )
    assert ns.kind == "accelerate"
    assert [i["key"] for i in ns.unknown_keys] == ["mixd"]
