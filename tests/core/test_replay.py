"""A check whose inputs are all unchanged is answered from its stored output (advisor/core/replay.py), and
never with a stale one: each kind of input, changed, changes the answer to what a check without any cache
gives. The console script's real path (`python -m advisor check`) in a copy of the bundled example."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.gate.conftest import git, needs_git

EXAMPLE = REPO / "fixtures" / "example"


class Project:
    def __init__(self, tmp_path: Path, source: Path = REPO) -> None:
        self.root = tmp_path / "project"
        shutil.copytree(EXAMPLE, self.root)
        self.cache = tmp_path / "cache"
        (self.cache / "gpu-advise").mkdir(parents=True)  # a machine that ran gpu-advise before
        self.source = source
        self.env = {
            **os.environ,
            "PYTHONPATH": str(source),
            "HF_HUB_OFFLINE": "1",
            "GPU_ADVISE_CACHE_DIR": str(self.cache),
            "HOME": str(tmp_path / "home"),
        }
        for name in ("GPU_ADVISE_NO_CACHE", "GITHUB_ACTIONS", "GPU_ADVISE_REPLAY_DEBUG", "NO_COLOR"):
            self.env.pop(name, None)

    def check(
        self, *args: str, env: dict[str, str] | None = None, cache: bool = True
    ) -> tuple[int, str, str]:
        run_env = {**self.env, **(env or {})}
        if not cache:
            run_env["GPU_ADVISE_NO_CACHE"] = "1"
        proc = subprocess.run(
            [sys.executable, "-m", "advisor", "check", "--exit-zero", *args],
            cwd=self.root,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return proc.returncode, proc.stdout, proc.stderr

    def entries(self) -> dict[str, tuple[int, int]]:
        """Each stored answer's name with its inode and mtime: a replay leaves its entry as it is, a check
        that runs writes it again."""
        folder = self.cache / "gpu-advise"
        if not folder.is_dir():
            return {}
        return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.glob("result-*.txt")}

    def stored_then_replayed(self, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        first = self.check(*args, env=env)
        stored = self.entries()
        assert len(stored) == 1, stored
        second = self.check(*args, env=env)
        assert self.entries() == stored, "the second, unchanged check ran again instead of replaying"
        assert second == first
        return second


def test_an_unchanged_check_replays_the_same_bytes_and_exit_status(tmp_path: Path) -> None:
    project = Project(tmp_path)
    fresh = project.check(cache=False)
    assert "GA101" in fresh[1]
    assert project.stored_then_replayed() == fresh
    failing = project.check("--fail-on", "warning")  # another command line: its own answer, exit 1
    assert failing[0] == 0  # --exit-zero wins
    assert project.check("--statistics") == project.check("--statistics", cache=False)


def test_a_fresh_cache_records_from_the_second_check_on(tmp_path: Path) -> None:
    """A fresh machine (a CI runner: no cache folder yet) pays nothing for a record on its first check."""
    project = Project(tmp_path)
    shutil.rmtree(project.cache)
    first = project.check()
    assert project.entries() == {} and (project.cache / "gpu-advise").is_dir()
    assert project.stored_then_replayed() == first


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def _same_size_edit(root: Path) -> None:
    # the same size and rewritten within the same second: only the bytes tell
    _edit(root / "configs" / "sft.yaml", "gradient_accumulation_steps: 8", "gradient_accumulation_steps: 4")


def _new_file(root: Path) -> None:
    (root / "configs" / "extra.yaml").write_text(
        "per_device_train_batch_size: 2\ndataloader_num_workers: 0\ndataloader_prefetch_factor: 2\n",
        encoding="utf-8",
    )


def _removed_file(root: Path) -> None:
    (root / "train.py").unlink()


def _settings(root: Path) -> None:
    _edit(root / ".gpu-advise.toml", 'hardware = "4xH100-NVL"', 'hardware = "8xH100-SXM"')


def _settings_above(root: Path) -> None:
    # a settings file the check finds by looking, not by reading one it read before
    (root / ".gpu-advise.toml").unlink()
    (root / "pyproject.toml").write_text(
        '[tool.gpu-advise]\nhardware = "2xA100-80GB-PCIe"\n', encoding="utf-8"
    )


def _pin(root: Path) -> None:
    _edit(root / "requirements.txt", "transformers==4.57.1", "transformers==4.50.0")


def _mode(root: Path) -> None:
    # launch.sh made unreadable: the reader says so instead of reading it
    (root / "launch.sh").chmod(0)


MUTATIONS = {
    "content": _same_size_edit,
    "new file": _new_file,
    "removed file": _removed_file,
    "settings": _settings,
    "settings found elsewhere": _settings_above,
    "pinned version": _pin,
}


@pytest.mark.parametrize("change", sorted(MUTATIONS))
def test_a_changed_input_is_checked_again(tmp_path: Path, change: str) -> None:
    project = Project(tmp_path)
    before = project.stored_then_replayed()
    MUTATIONS[change](project.root)
    after = project.check()
    assert after == project.check(cache=False)
    assert after != before
    assert project.check() == after  # and the new answer is the one stored now


def test_an_unreadable_file_is_checked_again(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads a file of mode 0")
    project = Project(tmp_path)
    before = project.stored_then_replayed()
    _mode(project.root)
    assert project.check() != before


def test_the_environment_and_the_arguments_are_part_of_the_key(tmp_path: Path) -> None:
    project = Project(tmp_path)
    text = project.stored_then_replayed()
    github = project.check(env={"GITHUB_ACTIONS": "true"})
    assert github == project.check(env={"GITHUB_ACTIONS": "true"}, cache=False)
    assert github != text and github[1].startswith("::")
    other = project.check("-H", "8xH100-SXM")
    assert other == project.check("-H", "8xH100-SXM", cache=False) != text


def test_a_hardware_file_edited_is_read_again(tmp_path: Path) -> None:
    project = Project(tmp_path)
    machine = project.root / "machine.yaml"
    shutil.copyfile(REPO / "advisor" / "data" / "machines" / "4xH100-NVL.yaml", machine)
    before = project.stored_then_replayed("-H", "machine.yaml")
    text = machine.read_text(encoding="utf-8")
    machine.write_text(re.sub(r"count: 4\b", "count: 8", text), encoding="utf-8")
    assert machine.read_text(encoding="utf-8") != text
    after = project.check("-H", "machine.yaml")
    assert after == project.check("-H", "machine.yaml", cache=False) != before


def test_the_tools_own_rules_and_code_are_inputs(tmp_path: Path) -> None:
    """A copy of the tool: a rule's message edited, then the report's code edited (an editable install
    upgraded in place, the same version number)."""
    source = tmp_path / "source"
    for folder in ("advisor", "rules"):
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    project = Project(tmp_path, source)
    before = project.stored_then_replayed()
    _edit(source / "rules" / "GA202-workers-per-process.yaml", "cause of start-up hangs.", "cause of hangs.")
    after = project.check()
    assert after != before and "cause of hangs." in after[1]
    assert project.check() == after
    _edit(source / "advisor" / "report" / "text.py", '"Found ', '"Found: ')
    edited = project.check()
    assert edited != after and "Found: " in edited[1]


@needs_git
def test_the_git_state_is_an_input(tmp_path: Path) -> None:
    """In a work tree the check compares with HEAD (git, five calls): a new commit of the same working files
    changes the answer, and only git's answers tell."""
    project = Project(tmp_path)
    (project.root / ".gpu-advise.toml").write_text(
        'hardware = "4xH100-NVL"\n', encoding="utf-8"
    )  # HEAD is the baseline
    git(project.root, "init", "-q")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", "first")
    _edit(project.root / "launch.sh", "NUM_GPUS:-2", "NUM_GPUS:-4")  # 2 -> 4 processes: GA101 against HEAD
    before = project.stored_then_replayed()
    assert before == project.check(cache=False)
    git(project.root, "commit", "-q", "-am", "second")  # HEAD moves; no working file changes
    after = project.check()
    assert after == project.check(cache=False)
    assert after != before
    assert "GA101" in before[1] and "GA101" not in after[1]


def test_what_is_not_stored(tmp_path: Path) -> None:
    project = Project(tmp_path)
    out = project.root / "report.txt"
    for _ in range(2):  # an output file is written each time, never replayed
        project.check("-o", str(out))
        assert out.is_file()
        out.unlink()
    assert project.entries() == {}
    project.check("--fix")  # typer's path, and it may write
    project.check("--help")
    assert project.entries() == {}


def test_a_cache_folder_in_the_project_holds_no_answer(tmp_path: Path) -> None:
    project = Project(tmp_path)
    project.env["GPU_ADVISE_CACHE_DIR"] = str(project.root / ".cache")
    project.cache = project.root / ".cache"
    (project.cache / "gpu-advise").mkdir(parents=True)
    first = project.check()
    assert project.check() == first
    assert project.entries() == {}


def test_an_entry_for_another_key_is_never_replayed(tmp_path: Path) -> None:
    """An entry whose header digest is not this check's key (a copy from another machine, another
    environment) is a miss, whatever output it holds."""
    project = Project(tmp_path)
    first = project.stored_then_replayed()
    (name,) = project.entries()
    entry = project.cache / "gpu-advise" / name
    lines = entry.read_text(encoding="ascii").split("\n")
    lines[1] = "0" * 64
    entry.write_text("\n".join(lines), encoding="ascii")
    tampered = project.entries()
    assert project.check() == first
    assert project.entries() != tampered  # checked for real, and stored again


def test_no_answer_depends_on_a_files_times() -> None:
    """Stored answers leave file times out of what a stat tells (advisor/core/replay.py _stat_answer):
    that holds while the tool reads times only to key its caches. A new reader of them is a test failure
    here, to be added to the replay's inputs first."""
    allowed = {"core/cache.py", "core/replay.py", "core/replay_record.py", "engine/fix.py"}
    readers = [
        str(p.relative_to(REPO / "advisor"))
        for p in (REPO / "advisor").rglob("*.py")
        if re.search(r"st_[amc]time|get[amc]time", p.read_text(encoding="utf-8"))
    ]
    assert sorted(set(readers) - allowed) == []


def test_a_replay_imports_almost_nothing(tmp_path: Path) -> None:
    """What makes a replay cheap: the stored answer is written before the tool is imported (-X importtime
    in both runs: the interpreter's flags are part of the key)."""
    project = Project(tmp_path)
    # -S: without this environment's .pth files (the editable install's finder imports re and pathlib)
    path = os.pathsep.join((str(REPO), sysconfig.get_paths()["purelib"]))

    def imported() -> tuple[str, list[str]]:
        proc = subprocess.run(
            [sys.executable, "-S", "-X", "importtime", "-m", "advisor", "check", "--exit-zero"],
            cwd=project.root,
            env={**project.env, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            timeout=300,
        )
        names = [
            line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if "import time:" in line
        ]
        return proc.stdout, names[1:]  # the header line's "package"

    recorded, during_check = imported()
    replayed, during_replay = imported()
    assert replayed == recorded and "GA101" in replayed
    assert "advisor.cli" in during_check and "yaml" in during_check
    advisor = sorted(n for n in during_replay if n.startswith("advisor"))
    assert advisor == sorted(
        [
            "advisor",
            "advisor.commands",
            "advisor.commands.startup",
            "advisor.core",
            "advisor.core.replay",
        ]
    )
    assert not {"pathlib", "re", "json", "yaml", "typing", "subprocess"} & set(during_replay)
