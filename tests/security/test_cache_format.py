"""Defect 2 of issue 9: the on-disk cache cannot run code, and a bad entry is a miss, never a crash.

Entries are JSON. Whatever sits in the cache folder (a planted pickle, garbage, a JSON entry of the
wrong shape, a FIFO, a link to a device) must never be executed, must not hang or crash `check`, and must
give the same findings as a clean run: it is rebuilt from the real files.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor.core import cache
from tests.conftest import REPO

PROJECT = {
    "args.yaml": "output_dir: out\ndataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n",
    ".gpu-advise.toml": "hardware = '4xH100-NVL'\nignore = ['GA204']\n[thresholds]\nsingle_gpu_hours = 6.0\n",
}
# one entry of each kind the check writes: the rule catalog, settings, the GPU catalog, a machine
KINDS = ("rules", "settings", "gpus", "machine")


def _run(project: Path, cache_home: Path) -> tuple[int, list[tuple[Any, ...]], str]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(REPO),
        "GPU_ADVISE_CACHE_DIR": str(cache_home),
    }
    env.pop("GPU_ADVISE_NO_CACHE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "advisor.cli", "check", "args.yaml", "--format", "json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    return (
        proc.returncode,
        sorted((f["rule"], f["file"], f["line"], f["column"]) for f in findings),
        proc.stderr,
    )


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, tuple[int, list[tuple[Any, ...]]]]:
    """A project, a cache folder filled by one check of it, and what that check found."""
    root = tmp_path_factory.mktemp("cache-format")
    project = root / "project"
    project.mkdir()
    (project / ".git").mkdir()
    for name, text in PROJECT.items():
        (project / name).write_text(text, encoding="utf-8")
    home = root / "cache-home"
    code, findings, _ = _run(project, home)
    assert code == 1 and ("GA203", "args.yaml", 3, 29) in findings
    return project, home, (code, findings)


def _entries(home: Path) -> dict[str, Path]:
    folder = home / "gpu-advise"
    found = {}
    for kind in KINDS:
        paths = sorted(folder.glob(f"{kind}-*.json"))
        assert paths, f"no {kind} entry in {sorted(p.name for p in folder.iterdir())}"
        found[kind] = paths[0]
    return found


@pytest.fixture
def planted(warm: tuple[Path, Path, Any], tmp_path: Path) -> tuple[Path, Path, dict[str, Path], Any]:
    """A copy of the warm cache folder for one test to spoil."""
    project, home, expected = warm
    mine = tmp_path / "cache-home"
    shutil.copytree(home, mine)
    return project, mine, _entries(mine), expected


def test_entries_are_json_with_a_header(planted: tuple[Path, Path, dict[str, Path], Any]) -> None:
    project, home, entries, expected = planted
    for kind, path in entries.items():
        stored = json.loads(path.read_text(encoding="utf-8"))
        assert stored["name"] == kind and stored["format"] == cache.FORMAT and "data" in stored
    assert not list((home / "gpu-advise").glob("*.pickle"))
    code, findings, _ = _run(project, home)  # all hits
    assert (code, findings) == expected


class _Plant:
    """Unpickling this creates the marker file: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def test_a_planted_pickle_is_never_loaded(
    planted: tuple[Path, Path, dict[str, Path], Any], tmp_path: Path
) -> None:
    project, home, entries, expected = planted
    marker = tmp_path / "pickle-was-loaded"
    payload = pickle.dumps(_Plant(marker))
    for path in entries.values():
        path.write_bytes(payload)  # under the JSON entry's own name
        path.with_suffix(".pickle").write_bytes(payload)  # and where the earlier format kept it
    code, findings, _ = _run(project, home)
    assert (code, findings) == expected
    assert not marker.exists()
    for path in entries.values():  # rebuilt as JSON
        assert json.loads(path.read_text(encoding="utf-8"))["format"] == cache.FORMAT


GARBAGE = {
    "empty": b"",
    "binary": b"\x80\x04\x95\xff\x00garbage\xff\xfe",
    "truncated": b'{"format": 4, "name": "rules", "data": [',
    "a-list": b"[1, 2, 3]",
    "header-only": b'{"format": 4}',
    "deeply-nested": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("first", [0, 4], ids=["first-four", "last-two"])
def test_garbage_in_an_entry_is_a_miss(first: int, planted: tuple[Path, Path, dict[str, Path], Any]) -> None:
    project, home, entries, expected = planted
    payloads = list(GARBAGE.values())
    for n, path in enumerate(entries.values()):  # a different kind of garbage in each entry
        path.write_bytes(payloads[(first + n) % len(payloads)])
    code, findings, _ = _run(project, home)
    assert (code, findings) == expected


def _first_string_to_list(data: Any) -> bool:
    """Replace the first string leaf inside data with a list (a wrong type somewhere deep)."""
    items = (
        list(data.items())
        if isinstance(data, dict)
        else list(enumerate(data))
        if isinstance(data, list)
        else []
    )
    for key, value in items:
        if isinstance(value, str):
            data[key] = [value]
            return True
        if _first_string_to_list(value):
            return True
    return False


@pytest.mark.parametrize(
    "spoil", ["data-is-a-number", "data-is-empty", "a-field-of-the-wrong-type", "other-key"]
)
def test_a_wrong_shape_entry_is_a_miss(spoil: str, planted: tuple[Path, Path, dict[str, Path], Any]) -> None:
    project, home, entries, expected = planted
    for path in entries.values():
        stored = json.loads(path.read_text(encoding="utf-8"))
        if spoil == "data-is-a-number":
            stored["data"] = 42
        elif spoil == "data-is-empty":
            stored["data"] = {} if isinstance(stored["data"], list) else []
        elif spoil == "a-field-of-the-wrong-type":
            assert _first_string_to_list(stored["data"])
        else:
            stored["key"] = "0" * 16
        path.write_text(json.dumps(stored), encoding="utf-8")
    code, findings, _ = _run(project, home)
    assert (code, findings) == expected


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_special_file_at_an_entry_is_a_miss(planted: tuple[Path, Path, dict[str, Path], Any]) -> None:
    project, home, entries, expected = planted
    for kind, path in zip(["fifo", "link-to-dev-zero", "folder", "fifo"], entries.values(), strict=True):
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        else:
            path.symlink_to("/dev/zero")
    code, findings, _ = _run(project, home)  # _run's timeout: a FIFO must not hang it
    assert (code, findings) == expected


def test_a_miss_from_a_refusing_reader_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_ADVISE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPU_ADVISE_NO_CACHE", raising=False)

    def refuse(data: Any) -> Any:
        raise KeyError("wrong shape")

    assert cache.cached("thing", "/x", 1, lambda: {"a": 1}) == {"a": 1}
    assert cache.cached("thing", "/x", 1, lambda: {"a": 2}, from_data=refuse) == {"a": 2}
    assert cache.cached("thing", "/x", 1, lambda: {"a": 3}) == {"a": 2}  # the rebuilt entry


def test_an_entry_from_another_slot_or_name_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPU_ADVISE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPU_ADVISE_NO_CACHE", raising=False)
    folder = tmp_path / "gpu-advise"
    cache.cached("thing", "/x", 1, lambda: "x")
    # an entry copied under another slot's name keeps its own header, so it is not taken for that slot
    shutil.copy(cache.entry_path(folder, "thing", "/x", 1), cache.entry_path(folder, "thing", "/y", 1))
    assert cache.cached("thing", "/y", 1, lambda: "y") == "y"


def test_nothing_in_advisor_unpickles() -> None:
    pattern = re.compile(
        r"^\s*(import|from)\s+(pickle|cPickle|_pickle|marshal|shelve|dill)\b|\bpickle\.loads?\(", re.M
    )
    offenders = [
        str(p.relative_to(REPO))
        for p in sorted((REPO / "advisor").rglob("*.py"))
        if pattern.search(p.read_text())
    ]
    assert offenders == []


# ---- issue 17 item 8: a cache inside the checked project is never trusted; keys are content ----------


def _check_json(project: Path, args: list[str], env_extra: dict[str, str]) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO), **env_extra}
    for name in ("GPU_ADVISE_NO_CACHE", "GPU_ADVISE_CACHE_DIR"):
        if name not in env_extra:
            env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "advisor.cli", "check", "--format", "json", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def _forge_settings_entries(folder: Path) -> int:
    """What a pull request would commit: every settings entry rewritten to ignore every rule."""
    forged = 0
    for entry in folder.glob("settings-*.json"):
        stored = json.loads(entry.read_text(encoding="utf-8"))
        stored["data"]["ignore"] = ["ALL"]
        entry.write_text(json.dumps(stored), encoding="utf-8")
        forged += 1
    return forged


@pytest.mark.parametrize("layout", ["git-work-tree", "project-root-as-current-folder"])
def test_a_cache_inside_the_checked_project_is_never_read(layout: str, tmp_path: Path) -> None:
    """XDG_CACHE_HOME under the CI workspace: a forged settings entry committed there silenced every rule."""
    project = tmp_path / "workspace"
    project.mkdir()
    for name, text in PROJECT.items():
        (project / name).write_text(text, encoding="utf-8")
    if layout == "git-work-tree":
        (project / ".git").mkdir()
    else:
        (project / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    inside = {"XDG_CACHE_HOME": str(project / ".cache")}
    # the entries a pull request would commit, made by a trusted run of the same files elsewhere
    outside = tmp_path / "trusted-cache"
    assert _check_json(project, ["args.yaml"], {"GPU_ADVISE_CACHE_DIR": str(outside)})["findings"]
    shutil.copytree(outside, project / ".cache")
    assert _forge_settings_entries(project / ".cache" / "gpu-advise") == 1
    before = sorted(p.name for p in (project / ".cache" / "gpu-advise").iterdir())
    report = _check_json(project, ["args.yaml"], inside)
    assert [f["rule"] for f in report["findings"]] == ["GA203"]
    # nothing was written there either: the checkout is not the tool's cache
    assert sorted(p.name for p in (project / ".cache" / "gpu-advise").iterdir()) == before


def test_a_cache_outside_the_project_is_still_used(tmp_path: Path) -> None:
    project = tmp_path / "workspace"
    (project / ".git").mkdir(parents=True)
    for name, text in PROJECT.items():
        (project / name).write_text(text, encoding="utf-8")
    home = tmp_path / "cache-home"
    _check_json(project, ["args.yaml"], {"GPU_ADVISE_CACHE_DIR": str(home)})
    assert sorted(p.name.split("-")[0] for p in (home / "gpu-advise").glob("*.json")) == sorted(KINDS)


def test_a_rule_file_changed_with_the_same_size_and_mtime_is_rebuilt(tmp_path: Path) -> None:
    """Rule folders were keyed by path, size and mtime: an edit that kept both (a checkout in the same
    second, `touch -r`) kept the old compiled rule. Keys are the files' content."""
    rules = tmp_path / "rules"
    shutil.copytree(REPO / "tests" / "gate" / "golden" / "rules", rules)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "args.yaml").write_text("learning_rate: 0.01\n", encoding="utf-8")
    env = {"GPU_ADVISE_CACHE_DIR": str(tmp_path / "cache-home")}
    args = ["args.yaml", "--rules", str(rules), "--select", "TST001"]
    assert [f["severity"] for f in _check_json(project, args, env)["findings"]] == ["warning"]
    rule = rules / "TST001-learning-rate-too-high.yaml"
    st = rule.stat()
    text = rule.read_text(encoding="utf-8")
    rule.write_text(text.replace("severity: warning", "severity: error  "), encoding="utf-8")
    os.utime(rule, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert rule.stat().st_size == st.st_size and rule.stat().st_mtime_ns == st.st_mtime_ns
    assert [f["severity"] for f in _check_json(project, args, env)["findings"]] == ["error"]


def test_an_entry_owned_by_another_user_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_ADVISE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GPU_ADVISE_NO_CACHE", raising=False)
    cache.cached("thing", "/x", 1, lambda: "mine")
    entry = cache.entry_path(tmp_path / "gpu-advise", "thing", "/x", 1)
    if os.geteuid() != 0:
        pytest.skip("needs root to give the entry to another user")
    os.chown(entry, 12345, 12345)
    assert cache.cached("thing", "/x", 1, lambda: "rebuilt") == "rebuilt"
