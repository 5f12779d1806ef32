"""Pins written the way repositories really write them, read as their installer reads them (issue 20 item 4).

Each form is a hand-written copy of an upstream one, checked through the real CLI (`gpu-advise check
--format json` in a subprocess):

- open-r1's setup.py (knoveleng/open-rs, huggingface/open-r1): transformers' ``_deps`` list looked up through
  ``deps[...]`` and ``deps_list(...)``, with ``trl @ git+https://github.com/huggingface/trl.git@<commit>``: a
  commit, whose release cannot be known;
- the same with a tag (``@v0.14.0``): that release;
- alignment-handbook's setup.py as SPIN copies it (``install_requires=[deps["transformers"], ...]``);
- ContextualAI/HALOs' install.sh: ``pip install accelerate==0.33.0`` lines;
- LLaVA-NeXT's pyproject.toml: ``"transformers@git+https://github.com/huggingface/transformers.git@<sha>"``;
- LLMZoo's requirements.txt: ``git+https://github.com/huggingface/transformers.git`` (the default branch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.facts import versions
from advisor.plan.context import CheckContext
from advisor.sources.pins import direct_reference, read_folder_pins
from advisor.sources.pins_shell import install_requests
from tests.conftest import write_files
from tests.sources.cli_json import TRAIN_FLAGS, check, project

KEYS = {"GA002", "GA005", "GA007"}


def _keys(result: dict[str, Any]) -> list[tuple[str, str, int, str]]:
    return sorted(
        (f["rule"], f["file"], f["line"], f["severity"]) for f in result["findings"] if f["rule"] in KEYS
    )


def _folder(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def _message(result: dict[str, Any], rule: str, line: int) -> str:
    return next(f["message"] for f in result["findings"] if f["rule"] == rule and f["line"] == line)


# open-r1 setup.py (huggingface/open-r1 @ early 2025, copied by knoveleng/open-rs), cut down
OPEN_R1_SETUP = """\
import re

from setuptools import find_packages, setup

_deps = [
    "accelerate==1.4.0",
    "bitsandbytes>=0.43.0",
    "deepspeed==0.15.4",
    "lighteval @ git+https://github.com/huggingface/lighteval.git@ed084813e0bd12d82a06d9f913291fdbee774905",
    "pytest",
    "transformers==4.49.0",
    "trl @ git+https://github.com/huggingface/trl.git@TRL_REF",
    "vllm==0.7.2",
]

deps = {
    b: a
    for a, b in (re.findall(r"^(([^!=<>~ \\[\\]]+)(?:\\[[^\\]]+\\])?(?:[!=<>~ ].*)?$)", x)[0] for x in _deps)
}


def deps_list(*pkgs):
    return [deps[pkg] for pkg in pkgs]


extras = {}
extras["tests"] = deps_list("pytest")
extras["eval"] = deps_list("lighteval")

install_requires = [
    deps["accelerate"],
    deps["bitsandbytes"],
    deps["deepspeed"],
    deps["transformers"],
    deps["trl"],
]

setup(
    name="open-r1",
    package_dir={"": "src"},
    packages=find_packages("src"),
    extras_require=extras,
    install_requires=install_requires,
)
"""
COMMIT = "69ad852e5654a77f1695eb4c608906fe0c7e8624"

# an open-r1 GRPO recipe: TrlParser reads it (ModelConfig, ScriptArguments, GRPOConfig)
GRPO_RECIPE = """\
model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct
torch_dtype: bfloat16
dataset_name: open-r1/OpenR1-Math-220k
bf16: true
use_vllm: true
vllm_device: auto
vllm_enforce_eager: true
vllm_max_model_len: 4608
gradient_checkpointing: true
max_prompt_length: 512
num_generations: 6
output_dir: data/grpo
overwrite_output_dir: true
per_device_train_batch_size: 6
warmup_ratio: 0.1
"""


def test_a_git_commit_pin_is_an_unknown_release_not_the_current_one(tmp_path: Path) -> None:
    """At trl@<commit> every key some trl release has may be the tree's: torch_dtype (ModelConfig to 0.26),
    vllm_device (0.14-0.17), vllm_max_model_len (0.15-0.17), max_prompt_length are neither removed nor
    unknown; transformers 4.49 from the _deps list keeps warmup_ratio, overwrite_output_dir and an
    undeprecated gradient_checkpointing. A key no trl release has is a warning naming the commit, not an
    error."""
    root = project(
        tmp_path,
        {"setup.py": OPEN_R1_SETUP.replace("TRL_REF", COMMIT), "recipes/grpo.yaml": GRPO_RECIPE},
    )
    result = check(root, "recipes/grpo.yaml")
    assert _keys(result) == [("GA002", "recipes/grpo.yaml", 7, "warning")]
    message = _message(result, "GA002", 7)
    assert "vllm_enforce_eager" in message
    assert "git commit 69ad852 in setup.py:12" in message
    assert "transformers 4.49 (pinned ==4.49.0 in setup.py:11)" in message
    assert not [f for f in result["findings"] if f["severity"] == "error"]


def test_the_same_recipe_unpinned_is_judged_against_the_current_releases(tmp_path: Path) -> None:
    """The control: without the setup.py the current releases judge, and these keys are findings."""
    root = project(tmp_path, {"recipes/grpo.yaml": GRPO_RECIPE})
    found = {(rule, line) for rule, _f, line, _s in _keys(check(root, "recipes/grpo.yaml"))}
    assert {("GA005", 2), ("GA005", 6), ("GA002", 8), ("GA005", 10), ("GA005", 13), ("GA005", 15)} <= found


def test_a_git_tag_pin_is_that_release(tmp_path: Path) -> None:
    """``@v0.14.0`` is trl 0.14: vllm_max_model_len came in 0.15, so that release refuses it."""
    root = project(
        tmp_path,
        {"setup.py": OPEN_R1_SETUP.replace("TRL_REF", "v0.14.0"), "recipes/grpo.yaml": GRPO_RECIPE},
    )
    result = check(root, "recipes/grpo.yaml")
    message = _message(result, "GA002", 8)
    assert "trl 0.14 (pinned git tag v0.14.0 (==0.14.0) in setup.py:12)" in message
    assert "added in 0.15" in message
    assert ("GA005", 6) not in {(f["rule"], f["line"]) for f in result["findings"]}  # vllm_device is 0.14's


# alignment-handbook's setup.py as uclaml/SPIN ships it: every requirement through deps[...]
HANDBOOK_SETUP = """\
import re
from setuptools import find_packages, setup

_deps = [
    "accelerate==0.23.0",
    "bitsandbytes==0.41.2.post2",
    "datasets==2.14.6",
    "peft==0.6.1",
    "transformers==4.37.0",
    "trl==0.7.4",
]
deps = {
    b: a
    for a, b in (re.findall(r"^(([^!=<>~ \\[\\]]+)(?:\\[[^\\]]+\\])?(?:[!=<>~ ].*)?$)", x)[0] for x in _deps)
}


def deps_list(*pkgs):
    return [deps[pkg] for pkg in pkgs]


extras = {}
extras["peft"] = deps_list("peft")
install_requires = [
    deps["accelerate"],
    deps["bitsandbytes"],
    deps["datasets"],
    deps["transformers"],
    deps["trl"],
]
setup(name="spin", packages=find_packages(), extras_require=extras, install_requires=install_requires)
"""
HANDBOOK_ARGS = (
    "output_dir: out\nper_device_train_batch_size: 4\nevaluation_strategy: epoch\nwarmup_ratio: 0.1\n"
)


def test_the_deps_list_idiom_pins_what_install_requires_names(tmp_path: Path) -> None:
    pins = read_folder_pins(project(tmp_path, {"setup.py": HANDBOOK_SETUP}))
    assert {k: (p.spec, p.line) for k, p in pins.items()} == {
        "accelerate": ("==0.23.0", 5),
        "bitsandbytes": ("==0.41.2.post2", 6),
        "peft": ("==0.6.1", 8),
        "transformers": ("==4.37.0", 9),
        "trl": ("==0.7.4", 10),
    }


def test_the_deps_list_pins_judge_the_config(tmp_path: Path) -> None:
    """transformers 4.37 (judged at 4.40, the oldest data) still takes evaluation_strategy and warmup_ratio
    without a warning; unpinned, both are GA005."""
    pinned = project(
        _folder(tmp_path, "pinned"), {"setup.py": HANDBOOK_SETUP, "configs/args.yaml": HANDBOOK_ARGS}
    )
    assert _keys(check(pinned, "configs/args.yaml")) == []
    alone = project(_folder(tmp_path, "alone"), {"configs/args.yaml": HANDBOOK_ARGS})
    assert [(r, line) for r, _f, line, _s in _keys(check(alone, "configs/args.yaml"))] == [
        ("GA005", 3),
        ("GA005", 4),
    ]


# ContextualAI/HALOs install.sh form
INSTALL_SH = """\
#!/bin/bash
conda create --name halos python=3.10.14
conda activate halos
pip install packaging ninja
pip install transformers==4.51.3
pip install accelerate==0.30.1
python -m pip install "accelerate==0.33.0"  # the last install of a package is what stays
uv pip install -r requirements-eval.txt
pip install trl==$TRL_VERSION
git clone --depth 1 https://github.com/EleutherAI/lm-evaluation-harness
cd lm-evaluation-harness
pip install -e .
python << EOF
print("pip install peft==0.4.0")
EOF
"""
ACCELERATE_CFG = (
    "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 4\n"
    "ipex_config:\n  ipex: false\n"
)


def test_install_script_pins_the_last_install_of_each_package(tmp_path: Path) -> None:
    root = project(tmp_path, {"install.sh": INSTALL_SH, "requirements-eval.txt": "peft==0.12.0\n"})
    pins = read_folder_pins(root)
    assert {k: (p.spec, p.path.name, p.line) for k, p in pins.items()} == {
        "transformers": ("==4.51.3", "install.sh", 5),
        "accelerate": ("==0.33.0", "install.sh", 7),
        "peft": ("==0.12.0", "requirements-eval.txt", 1),
    }  # trl==$TRL_VERSION is not known; the here-document is python's input, not the shell's


def test_install_script_pins_judge_an_accelerate_config(tmp_path: Path) -> None:
    """ipex_config is a ClusterConfig key up to accelerate 1.12: fine at the 0.33.0 install.sh installs, an
    unknown key (GA002) of the current release when nothing is pinned."""
    pinned = project(
        _folder(tmp_path, "pinned"),
        {"install.sh": INSTALL_SH, "accelerate_config/multi.yaml": ACCELERATE_CFG},
    )
    assert _keys(check(pinned, "accelerate_config/multi.yaml")) == []
    alone = project(_folder(tmp_path, "alone"), {"accelerate_config/multi.yaml": ACCELERATE_CFG})
    assert [(r, line) for r, _f, line, _s in _keys(check(alone, "accelerate_config/multi.yaml"))] == [
        ("GA002", 4)
    ]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (
            "pip3 install 'transformers>=4.40,<4.45' \\\n  --upgrade -i https://pypi.org/simple\n",
            [("req", "transformers>=4.40,<4.45", 1)],
        ),
        ("sudo python3.10 -m pip install --no-deps peft==0.12.0\n", [("req", "peft==0.12.0", 1)]),
        ("conda install -c conda-forge transformers=4.44.0 -y\n", [("conda", "transformers=4.44.0", 1)]),
        ("cd sub && pip install -r reqs.txt\n", [("file", "sub/reqs.txt", 1)]),
        ("cd /opt/x && pip install -r reqs.txt\n", []),
        ("echo pip install trl==0.9.6\n", []),
        ("pip install trl==0.9.6 > log.txt\n", [("req", "trl==0.9.6", 1)]),
    ],
)
def test_install_commands(script: str, expected: list[tuple[str, str, int]]) -> None:
    assert install_requests(script) == expected


# LLaVA-VL/LLaVA-NeXT pyproject.toml and launch form
LLAVA_PYPROJECT = """\
[project]
name = "llava"
dependencies = []

[project.optional-dependencies]
train = [
    "deepspeed==0.14.4",
    "peft==0.4.0",
    "transformers@git+https://github.com/huggingface/transformers.git@1c39974a4c4036fd641bc1191cc32799f85715a4",
    "bitsandbytes==0.41.0",
]
"""
LLAVA_LAUNCH = """\
deepspeed train_dpo.py \\
    --output_dir out \\
    --evaluation_strategy no \\
    --warmup_ratio 0.03 \\
    --not_a_flag_of_any_release 1
"""


def test_pyproject_git_direct_reference_judges_flags_as_an_unknown_release(tmp_path: Path) -> None:
    root = project(
        tmp_path, {"pyproject.toml": LLAVA_PYPROJECT, "train_dpo.py": TRAIN_FLAGS, "dpo.sh": LLAVA_LAUNCH}
    )
    result = check(root, "dpo.sh")
    assert _keys(result) == [("GA002", "dpo.sh", 5, "warning")]
    assert "git commit 1c39974 in pyproject.toml:9" in _message(result, "GA002", 5)
    # the control: a release pinned exactly judges the same flags
    exact = LLAVA_PYPROJECT.replace(LLAVA_PYPROJECT.splitlines()[8].strip()[1:-2], "transformers==5.24.0")
    write_files(root, {"pyproject.toml": exact})
    rules = {(r, line, s) for r, _f, line, s in _keys(check(root, "dpo.sh"))}
    assert {("GA005", 3, "warning"), ("GA005", 4, "warning"), ("GA002", 5, "error")} <= rules


def test_a_default_branch_installs_the_newest_tree(tmp_path: Path) -> None:
    """FreedomIntelligence/LLMZoo's requirements.txt: the default branch is at least the current release."""
    root = project(
        tmp_path,
        {
            "requirements.txt": "torch\ngit+https://github.com/huggingface/transformers.git\naccelerate\n",
            "train.py": TRAIN_FLAGS,
            "run.sh": "torchrun --nproc_per_node 2 train.py --output_dir out --evaluation_strategy no\n",
        },
    )
    result = check(root, "run.sh")
    assert [(r, line) for r, _f, line, _s in _keys(result)] == [("GA005", 1)]
    assert "git default branch of huggingface/transformers in requirements.txt:2" in _message(
        result, "GA005", 1
    )


# ------------------------------------------------------------------------------------------------
# the readings themselves
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "spec", "via"),
    [
        (f"git+https://github.com/huggingface/trl.git@{COMMIT}", "", "git commit 69ad852"),
        ("git+ssh://git@github.com/huggingface/trl.git@v0.14.0", "==0.14.0", "git tag v0.14.0"),
        ("git+https://github.com/huggingface/trl.git@0.14.0#egg=trl", "==0.14.0", "git tag 0.14.0"),
        ("git+https://github.com/huggingface/trl@main", "", "git default branch main of huggingface/trl"),
        ("git+https://github.com/huggingface/trl.git@dpo-fix", "", "git ref dpo-fix"),
        (
            "https://files.example/peft-0.12.0-py3-none-any.whl",
            "==0.12.0",
            "wheel peft-0.12.0-py3-none-any.whl",
        ),
        ("https://files.example/transformers-4.44.0.tar.gz", "==4.44.0", "sdist transformers-4.44.0.tar.gz"),
        (
            "https://github.com/huggingface/transformers/archive/refs/tags/v4.44.0.zip",
            "==4.44.0",
            "archive of tag v4.44.0",
        ),
        ("https://github.com/huggingface/transformers/archive/1c39974a.zip", "", "archive of 1c39974a"),
        ("file:///opt/src/transformers", "", "local path transformers"),
        ("git+https://github.com/huggingface/trl.git@", "", "git URL with an empty revision"),
    ],
)
def test_direct_references(url: str, spec: str, via: str) -> None:
    assert direct_reference(url) == (spec, via)


@pytest.mark.parametrize(
    "line",
    [
        f"trl @ git+https://github.com/huggingface/trl.git@{COMMIT}",
        f"trl@git+https://github.com/huggingface/trl.git@{COMMIT} ; python_version >= '3.10'",
        f"trl[vllm] @ git+https://github.com/huggingface/trl.git@{COMMIT}",
    ],
)
def test_the_requirement_is_split_as_packaging_splits_it(tmp_path: Path, line: str) -> None:
    """PEP 508 direct references as packaging.requirements.Requirement reads them: name, then the URL."""
    from packaging.requirements import Requirement

    req = Requirement(line)
    write_files(tmp_path, {"requirements.txt": line + "\n"})
    pin = read_folder_pins(tmp_path)[req.name]
    assert req.url is not None
    assert (pin.spec, pin.via) == direct_reference(req.url) == ("", "git commit 69ad852")


@pytest.mark.parametrize(
    ("text", "package", "via"),
    [
        ("-e git+https://github.com/huggingface/trl.git@v0.14.0#egg=trl\n", "trl", "git tag v0.14.0"),
        ("git+https://github.com/huggingface/peft.git@deadbeef1234\n", "peft", "git commit deadbee"),
        ("--editable=git+https://github.com/huggingface/transformers\n", "transformers", ""),
    ],
)
def test_requirements_lines_with_bare_urls(tmp_path: Path, text: str, package: str, via: str) -> None:
    write_files(tmp_path, {"requirements.txt": text})
    pin = read_folder_pins(tmp_path)[package]
    assert pin.via == via or (not via and pin.newest)


def test_bitsandbytes_release_is_a_fact_the_estimator_can_read(tmp_path: Path) -> None:
    """Before 0.43.2 every 4-bit Linear keeps its input for backward (bitsandbytes PR #1270): pip installs the
    newest release a spec allows, so ``==0.41.0`` is before it, ``>=0.43.0`` not, ``<0.44`` unknown."""
    root = project(tmp_path, {"pyproject.toml": LLAVA_PYPROJECT, "train.py": ""})
    pin = versions.pinned("bitsandbytes", root / "train.py", CheckContext.standalone(root / "train.py"))
    assert pin is not None and pin.spec == "==0.41.0" and pin.line == 10
    assert versions.installs_below(pin.spec, "0.43.2") is True
    assert versions.installs_below(">=0.43.0", "0.43.2") is False
    assert versions.installs_below("<0.44", "0.43.2") is None
    assert versions.installs_below("==0.41.2.post2", "0.43.2") is True
    assert versions.installs_below("", "0.43.2") is None  # a git commit


POETRY_GIT = """\
[tool.poetry.dependencies]
python = "^3.10"
trl = {git = "https://github.com/huggingface/trl.git", tag = "v0.14.0"}
transformers = {git = "git@github.com:huggingface/transformers.git", rev = "1c39974a"}
peft = {git = "https://github.com/huggingface/peft.git"}
accelerate = {path = "../accelerate", develop = true}
"""
CONDA_PIP_GIT = """\
dependencies:
  - python=3.10
  - pip:
    - git+https://github.com/huggingface/trl.git@v0.9.6
    - -e git+https://github.com/huggingface/peft.git@abcdef12#egg=peft
"""


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "pyproject.toml",
            POETRY_GIT,
            {
                "trl": ("==0.14.0", "git tag v0.14.0", 3),
                "transformers": ("", "git commit 1c39974", 4),
                "peft": ("", "git default branch of huggingface/peft", 5),
                "accelerate": ("", "local path accelerate", 6),
            },
        ),
        (
            "environment.yml",
            CONDA_PIP_GIT,
            {"trl": ("==0.9.6", "git tag v0.9.6", 4), "peft": ("", "git commit abcdef1", 5)},
        ),
    ],
)
def test_poetry_and_conda_direct_references(tmp_path: Path, name: str, text: str, expected: dict) -> None:
    """poetry's git/path dependencies and a conda environment's pip list name trees as pip URLs do."""
    write_files(tmp_path, {name: text})
    assert {k: (p.spec, p.via, p.line) for k, p in read_folder_pins(tmp_path).items()} == expected


UV_LOCK_TEMPLATE = """\
version = 1

[[package]]
name = "trl"
version = "0.16.0.dev0"
source = { git = "https://github.com/huggingface/trl.git?rev=69ad852#COMMIT" }

[[package]]
name = "transformers"
version = "4.49.0"
source = { git = "https://github.com/huggingface/transformers.git?tag=v4.49.0#abc1234def5678" }

[[package]]
name = "peft"
version = "0.14.0"
source = { registry = "https://pypi.org/simple" }
"""
UV_LOCK = UV_LOCK_TEMPLATE.replace("COMMIT", COMMIT)
PIPFILE_LOCK = (
    '{"default": {"trl": {"git": "https://github.com/huggingface/trl.git", "ref": "'
    + COMMIT
    + '"}, "peft": {"version": "==0.12.0"}}}'
)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "uv.lock",
            UV_LOCK,
            {
                "trl": ("", "git commit 69ad852 (0.16.0.dev0)"),
                "transformers": ("==4.49.0", "git commit abc1234 (4.49.0)"),
                "peft": ("==0.14.0", ""),
            },
        ),
        ("Pipfile.lock", PIPFILE_LOCK, {"trl": ("", "git commit 69ad852"), "peft": ("==0.12.0", "")}),
    ],
)
def test_lock_files_with_git_sources(tmp_path: Path, name: str, text: str, expected: dict) -> None:
    """A lock records a git source's commit and the version its metadata gives: a plain release is that
    release; a .dev0 lies between two releases, so which one is unknown."""
    write_files(tmp_path, {name: text})
    assert {k: (p.spec, p.via) for k, p in read_folder_pins(tmp_path).items()} == expected


def test_install_script_reads_requirements_files_of_its_project_only(tmp_path: Path) -> None:
    """``pip install -r ../requirements.txt`` from setup/install.sh is the project's file; one outside the
    project's work tree is not read."""
    write_files(tmp_path, {"outside.txt": "trl==0.9.6\n"})
    root = project(
        _folder(tmp_path, "repo"),
        {
            "requirements.txt": "transformers==4.44.2\n",
            "setup/install.sh": "pip install -r ../requirements.txt\npip install -r ../../outside.txt\n",
        },
    )
    pins = read_folder_pins(root / "setup")
    assert {k: (p.spec, p.path.name) for k, p in pins.items()} == {
        "transformers": ("==4.44.2", "requirements.txt")
    }


def test_requirements_files_follow_their_includes(tmp_path: Path) -> None:
    """pip reads ``-r requirements/train.txt`` and ``-c constraints.txt`` as if written in the file, from
    the including file's folder (the layout of repositories with requirements/ folders)."""
    root = project(
        tmp_path,
        {
            "requirements.txt": "-r requirements/train.txt\n--constraint=constraints.txt\n",
            "requirements/train.txt": "-r base.txt\ntrl>=0.12,<0.13\n",
            "requirements/base.txt": "transformers==4.46.3\n-r base.txt\n",  # a loop ends at the depth limit
            "constraints.txt": "accelerate==1.1.1\n",
        },
    )
    pins = read_folder_pins(root)
    assert {k: (p.spec, p.path.relative_to(root).as_posix()) for k, p in pins.items()} == {
        "trl": (">=0.12,<0.13", "requirements/train.txt"),
        "transformers": ("==4.46.3", "requirements/base.txt"),
        "accelerate": ("==1.1.1", "constraints.txt"),
    }


def test_a_pre_release_pin_is_no_release_we_can_place(tmp_path: Path) -> None:
    """``trl==0.16.0.dev0`` (a tree between 0.15 and 0.16, installed from source) is no release: its keys are
    judged as a git commit's; before, the pin was dropped and the current trl called vllm_device removed."""
    root = project(
        tmp_path,
        {"requirements.txt": "trl==0.16.0.dev0\ntransformers==4.49.0\n", "recipes/grpo.yaml": GRPO_RECIPE},
    )
    result = check(root, "recipes/grpo.yaml")
    assert _keys(result) == [("GA002", "recipes/grpo.yaml", 7, "warning")]
    assert "pinned ==0.16.0.dev0 in requirements.txt:1, no release we can place" in _message(
        result, "GA002", 7
    )


def test_poetry_any_version_is_the_newest_release(tmp_path: Path) -> None:
    root = project(
        tmp_path, {"pyproject.toml": '[tool.poetry.dependencies]\ntransformers = "*"\n', "a.yaml": ""}
    )
    target = versions.targets_for(root / "a.yaml", None, CheckContext.standalone(root / "a.yaml"))[
        "transformers"
    ]
    assert target.release == versions.releases("transformers")[-1] and target.pinned
    assert target.why == "pinned * in pyproject.toml:2: the newest release installs"


def test_a_requirement_naming_no_version_pins_nothing(tmp_path: Path) -> None:
    write_files(
        tmp_path, {"install.sh": "pip install trl== transformers>=\n", "requirements.txt": "peft==\n"}
    )
    assert read_folder_pins(tmp_path) == {}
