"""The on-disk cache (advisor/core/cache.py): hits, misses, and one entry per slot."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core import cache
from advisor.sources import settings as settings_module
from advisor.sources.settings import find_settings


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.delenv("GPU_ADVISE_NO_CACHE", raising=False)
    monkeypatch.setenv("GPU_ADVISE_CACHE_DIR", str(folder))
    return folder / "gpu-advise"


def test_a_hit_is_the_stored_value(cache_dir: Path) -> None:
    builds = []

    def build() -> dict[str, int]:
        builds.append(1)
        return {"a": 1}

    assert cache.cached("thing", "/x", ("k", 1), build) == {"a": 1}
    assert cache.cached("thing", "/x", ("k", 1), build) == {"a": 1}
    assert len(builds) == 1
    assert len(list(cache_dir.glob("thing-*.json"))) == 1


def test_a_new_key_replaces_the_entries_of_its_slot_only(cache_dir: Path) -> None:
    for version in range(3):
        assert cache.cached("thing", "/x", version, lambda v=version: v) == version
    cache.cached("thing", "/y", 0, lambda: "other")
    cache.cached("other", "/x", 0, lambda: "other name")
    x = cache.entry_path(cache_dir, "thing", "/x", 2)
    assert sorted(p.name for p in cache_dir.glob("thing-*.json")) == sorted(
        [x.name, cache.entry_path(cache_dir, "thing", "/y", 0).name]
    )
    assert len(list(cache_dir.glob("other-*.json"))) == 1
    assert cache.cached("thing", "/x", 2, lambda: "rebuilt") == 2  # still a hit


def test_a_corrupt_entry_is_rebuilt(cache_dir: Path) -> None:
    cache.cached("thing", "/x", 0, lambda: "first")
    cache.entry_path(cache_dir, "thing", "/x", 0).write_bytes(b"not json {")
    assert cache.cached("thing", "/x", 0, lambda: "second") == "second"
    assert cache.cached("thing", "/x", 0, lambda: "third") == "second"


def test_no_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_ADVISE_NO_CACHE", "1")
    assert cache.cached("thing", "/x", 0, lambda: "a") == "a"
    assert cache.cached("thing", "/x", 0, lambda: "b") == "b"
    assert not cache_dir.exists()


def test_editing_a_settings_file_keeps_one_entry(cache_dir: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    settings = project / ".gpu-advise.toml"
    for n in (1, 2, 3):
        settings.write_text(f"ignore = ['GA{n}']\n", encoding="utf-8")
        assert find_settings(project).ignore == [f"GA{n}"]
    assert len(list(cache_dir.glob("settings-*.json"))) == 1


def test_cached_settings_are_the_parsed_settings(cache_dir: Path, tmp_path: Path) -> None:
    from advisor.sources.settings import parse_settings

    project = tmp_path / "project"
    project.mkdir()
    text = (
        "select = ['GA2']\nseverity = {GA201 = 'info'}\nhardware = '4xH100-NVL'\n"
        "[thresholds]\nsingle_gpu_hours = 6.5\n[[runs]]\npath = 'a.yaml'\neffective_batch = 64\n"
    )
    (project / ".gpu-advise.toml").write_text(text, encoding="utf-8")
    fresh = parse_settings(text, project / ".gpu-advise.toml")
    assert find_settings(project) == fresh  # a miss: built and stored
    assert len(list(cache_dir.glob("settings-*.json"))) == 1
    settings_module._PARSED.clear()  # a new process: not the settings this one met already
    assert find_settings(project) == fresh  # a hit: rebuilt from the stored data


def test_the_gpu_catalog_and_machines_round_trip_through_data() -> None:
    from advisor.core.datacodec import decode, encode
    from advisor.sources.hardware import GpuSpec, Machine, _build_catalog_and_index, builtin_machines

    catalog, index = _build_catalog_and_index()
    assert decode(tuple[dict[str, GpuSpec], dict[str, str]], encode((catalog, index))) == (catalog, index)
    for machine in builtin_machines().values():
        assert decode(Machine, encode(machine)) == machine


def test_the_rule_catalog_round_trips_through_data() -> None:
    from advisor.engine.rule_engine import _rules_from_data, _rules_to_data, builtin_rules_dir, load_rule_file

    rules = tuple(load_rule_file(p) for p in sorted(builtin_rules_dir().glob("*.yaml")))
    again = _rules_from_data(_rules_to_data(rules))
    assert [r.spec for r in again] == [r.spec for r in rules]
    assert [r.lines for r in again] == [r.lines for r in rules]
    assert [r.when.source for r in again] == [r.when.source for r in rules]


def test_data_from_before_a_field_was_added_is_refused() -> None:
    from advisor.core.datacodec import DataError, decode, encode
    from advisor.sources.settings import Thresholds

    data = encode(Thresholds())
    assert decode(Thresholds, data) == Thresholds()
    del data["workers_per_process"]
    with pytest.raises(DataError):
        decode(Thresholds, data)
    with pytest.raises(DataError):
        decode(Thresholds, {**encode(Thresholds()), "added_later": 1})


def test_a_file_is_read_whole_and_anything_but_a_regular_file_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """_regular_bytes reads the descriptor itself (the rule files' digests on a cold start): all of a file
    of any size, nothing of a folder, a FIFO or a file over the bound."""
    import os

    for size in (0, 1, 65535, 65536, 200_001):
        path = tmp_path / f"f{size}"
        path.write_bytes(bytes(i % 251 for i in range(size)))
        assert cache._regular_bytes(path, 0) == path.read_bytes()
    assert cache._regular_bytes(tmp_path, 0) is None
    os.mkfifo(tmp_path / "fifo")
    assert cache._regular_bytes(tmp_path / "fifo", 0) is None
    monkeypatch.setattr(cache, "MAX_ENTRY_BYTES", 1000)
    assert cache._regular_bytes(tmp_path / "f200001", 0) is None
    assert cache._regular_bytes(tmp_path / "f1", 0) == b"\0"


def test_a_write_removes_the_slots_older_files_only(cache_dir: Path) -> None:
    cache.cached("thing", "/x", 0, lambda: 0)
    slot = cache.entry_path(cache_dir, "thing", "/x", 0).name.rsplit("-", 1)[0]
    kept = [f"{slot}-notes.txt", f"{slot}x-0.json", f".{slot}-1.json.abc.gpu-advise.tmp"]
    for name in [f"{slot}-old.pickle", f"{slot}-old.json", *kept]:
        (cache_dir / name).write_text("x", encoding="utf-8")
    cache.cached("thing", "/x", 1, lambda: 1)
    assert sorted(p.name for p in cache_dir.iterdir()) == sorted(
        [cache.entry_path(cache_dir, "thing", "/x", 1).name, *kept]
    )
