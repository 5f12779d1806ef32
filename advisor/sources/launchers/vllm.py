"""The vLLM server (`vllm serve MODEL`, `python -m vllm.entrypoints.openai.api_server`,
`trl vllm-serve`): not a training run, but its parallel sizes say which GPUs it spreads over."""

from __future__ import annotations

from advisor.core.provenance import Value
from advisor.sources.launchers.counting import one_node
from advisor.sources.launchers.protocol import ProcessCount, RunInputs
from advisor.sources.launchers.spec import Flags, LauncherSpec, Processes

SPEC = LauncherSpec(
    name="vllm",
    summary="vLLM's OpenAI-compatible server",
    commands=(("vllm", "serve"), ("trl", "vllm-serve")),
    modules=(
        "vllm.entrypoints.openai.api_server",
        "vllm.entrypoints.api_server",
        "vllm.entrypoints.cli.main",
    ),
    form="server",
    flags=Flags(
        bools=frozenset(
            {
                "trust_remote_code",
                "enforce_eager",
                "enable_prefix_caching",
                "enable_chunked_prefill",
                "enable_lora",
                "disable_log_requests",
                "disable_log_stats",
                "enable_expert_parallel",
                "enable_auto_tool_choice",
                "headless",
                "help",
            }
        ),
        shorts=(
            ("tp", "tensor_parallel_size"),
            ("pp", "pipeline_parallel_size"),
            ("dp", "data_parallel_size"),
        ),
    ),
    processes=Processes(
        flags=("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"),
        default="one GPU",
    ),
    source="vllm/engine/arg_utils.py: EngineArgs.add_cli_args",
    serves=True,
    # vLLM's CLI entry point is `vllm`'s main: it serves only under its `serve` command
    module_words={"vllm.entrypoints.cli.main": "serve"},
)


def processes(run: RunInputs) -> ProcessCount:
    """A server starts no training processes: the count is not modelled (its GPUs: facts/placement.py)."""
    why = "no launch script or accelerate config says how many processes start"
    return ProcessCount(Value(None, None, "derived", unknown=why), one_node())
