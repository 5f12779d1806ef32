"""Whose argument classes read a command's flags (launchers.argument_owner): the plan and discovery ask
the registry, and ms-swift's route files and DeepSpeed presets are data of its spec (launchers/swift.py),
so no module outside launchers/ imports the swift launcher."""

from __future__ import annotations

import pytest

from advisor.sources import launchers


@pytest.mark.parametrize(
    ("launcher", "script", "module"),
    [
        ("swift", None, False),  # `swift sft --model m`
        ("torchrun", "swift/cli/sft.py", False),  # ms-swift's examples start its route file themselves
        ("torchrun", "./vendor/swift/cli/rlhf.py", False),
        ("torchrun", "swift.cli.sft", True),  # `torchrun -m swift.cli.sft`
        ("python", "swift.cli.pt", True),
    ],
)
def test_swift_and_its_route_files_read_swift_arguments(launcher, script, module) -> None:
    owner = launchers.argument_owner(launcher, script, module)
    assert owner is not None and owner.name == "swift" and owner.own_defaults
    assert "zero3_offload" in owner.deepspeed_presets


@pytest.mark.parametrize(
    ("launcher", "script", "module"),
    [
        ("torchrun", "train.py", False),
        ("torchrun", "swift/cli/sft.py", True),  # a path is no module name
        ("python", "swift.cli.sft", False),  # nor a module name a path
        ("accelerate", None, False),
        (None, None, False),
    ],
)
def test_a_plain_script_has_no_owner(launcher, script, module) -> None:
    assert launchers.argument_owner(launcher, script, module) is None


def test_nothing_outside_the_launchers_imports_a_launcher_module() -> None:
    from tests.core.test_import_layers import import_graph

    modules = {f"advisor.sources.launchers.{m.__name__.rsplit('.', 1)[-1]}" for m in launchers.REGISTRY}
    outside = {
        (module, target)
        for module, targets in import_graph().items()
        if not module.startswith("advisor.sources.launchers")
        for target in targets & modules
    }
    assert outside == set()
