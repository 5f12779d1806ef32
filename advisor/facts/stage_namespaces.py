"""The namespaces other stages build: the plan's own (advisor/plan/run_plan.py), the settings and thresholds
(advisor/facts/__init__.py run_names), what --verify measured (advisor/pipeline/probe/results.py), the
suppression directives (advisor/engine/suppress.py) and the gate's policy (advisor/pipeline/policy/facts.py).

They are declared here, in the facts layer, so that the catalogue and the rule-load check know them
without importing those stages (a higher layer); each class names its builder for the docs. The dynamic
ones (training, accelerate, deepspeed, launch, env) take their entry names from the key data files
(advisor/data/keys/*.json) or take any name.
"""

from __future__ import annotations

from advisor.facts.declare import FactNamespace, fact


class TrainingKeys(
    FactNamespace,
    name="training",
    doc=("TrainingArguments as the run's trainer reads them: every key of its file or launch flags."),
    keys_from=("training_args", "trl", "axolotl", "llamafactory", "llamafactory_v1", "removed"),
    extra_keys=("dialect", "reads_training_arguments"),
    builder="advisor.plan.run_plan:build_plan",
):
    pass


class AccelerateKeys(
    FactNamespace,
    name="accelerate",
    doc=("The accelerate config file: every key (nested sections as children)."),
    keys_from=("accelerate",),
    builder="advisor.plan.run_plan:build_plan",
):
    pass


class DeepSpeedKeys(
    FactNamespace,
    name="deepspeed",
    doc=("The DeepSpeed config: every key (nested sections as children)."),
    keys_from=("deepspeed",),
    builder="advisor.plan.run_plan:build_plan",
):
    pass


class LaunchFlags(
    FactNamespace,
    name="launch",
    doc=("The launch command's flags (dashes as underscores), `launcher`, and `sbatch` directives."),
    open=True,
    builder="advisor.plan.run_plan:build_plan",
):
    pass


class EnvVars(
    FactNamespace,
    name="env",
    doc="Environment variables the launch script sets.",
    open=True,
    builder="advisor.plan.run_plan:build_plan",
):
    pass


class ModelFacts(
    FactNamespace,
    name="model",
    doc="The model the run trains, as the plan names it.",
    builder="advisor.plan.run_plan:build_plan",
):
    name_ = fact(str, "model name or path (model_name_or_path as written)", key="name")
    seq_len = fact(int | str, "max_seq_length as written", unit="tokens")
    method = fact(str, "full | lora | qlora")


class SettingsFacts(
    FactNamespace,
    name="settings",
    doc=("The run's entry in the project settings ([[runs]]), when one matches."),
    builder="advisor.facts:run_names",
):
    path = fact(str, "the run's path as the settings write it")
    name_ = fact(str, "the run's name", key="name")
    hardware = fact(str, "the machine the settings give the run")
    effective_batch = fact(int, "the run's declared effective batch", unit="samples")
    learning_rate = fact(float, "the run's declared learning rate")
    dataset_samples = fact(int, "samples in the run's data set", unit="samples")
    dataset_tokens = fact(int, "tokens in the run's data set", unit="tokens")


class ThresholdsFacts(
    FactNamespace,
    name="thresholds",
    doc=("The project's [thresholds] settings (advisor.sources.settings.Thresholds)."),
    builder="advisor.facts:run_names",
):
    single_gpu_hours = fact(float, "a run shorter than this on one GPU may stay on one GPU", unit="h")
    workers_per_process = fact(int, "DataLoader workers per process worth having", unit="workers")
    near_memory_fraction = fact(float, "margin below the GPU's memory that counts as tight")
    prediction_tolerance = fact(float, "relative error a --verify comparison tolerates")


class MeasuredFacts(
    FactNamespace,
    name="measured",
    doc="What --verify measured (empty without it).",
    builder="advisor.pipeline.probe.results:measured_namespace",
    requires=("batch", "training"),
):
    status = fact(str, "ok | oom | failed | ...")
    source = fact(str, "where the measurement comes from")
    device = fact(str, "cuda or cpu")
    device_name = fact(str, "the GPU's name")
    cpu_timings = fact(bool, "timings were measured on the CPU (not comparable)")
    faithful = fact(bool, "the probe ran the run's own configuration")
    per_device = fact(int, "micro batch measured", unit="samples")
    accumulation = fact(int, "accumulation measured", unit="steps")
    seq_len = fact(int, "sequence length measured", unit="tokens")
    samples_per_rank = fact(list[int], "samples each rank saw in one step", unit="samples")
    seconds_per_step = fact(float, "measured step time", unit="s")
    tokens_per_s = fact(float, "measured throughput", unit="tokens/s")
    tokens_per_step = fact(int, "tokens per optimizer step", unit="tokens")
    peak_allocated_gib = fact(float, "torch.cuda.max_memory_allocated", unit="GiB")
    peak_reserved_gib = fact(float, "torch.cuda.max_memory_reserved", unit="GiB")
    param_bytes = fact(int, "parameter bytes", unit="bytes")
    grad_bytes = fact(int, "gradient bytes", unit="bytes")
    optimizer_bytes = fact(int, "optimizer state bytes", unit="bytes")
    oom_rank = fact(int, "the rank that ran out of memory")
    oom_at_step = fact(int, "the step it ran out at")
    error = fact(str, "the probe's error")
    stopped = fact(str, "why the probe stopped")
    world_size = fact(int, "processes measured", unit="processes")
    effective_batch = fact(int, "effective batch measured", unit="samples")
    oom = fact(dict, "{rank, step, device, total_gib, predicted_gib} of an out-of-memory")
    scaling_efficiency = fact(float, "measured scaling efficiency")
    scaling_processes = fact(int, "processes the scaling was measured at", unit="processes")
    comparisons = fact(
        list[dict],
        "predicted against measured values",
        items=(
            "exact",
            "location",
            "measured",
            "measured_text",
            "off",
            "off_text",
            "predicted",
            "predicted_text",
            "quantity",
            "severity",
            "unit",
            "why",
        ),
    )


class SuppressionFacts(
    FactNamespace,
    name="suppressions",
    doc=("The inline suppression directives of the check, after the findings were matched with them."),
    scope="suppression",
    builder="advisor.engine.suppress:suppression_facts",
):
    unused = fact(
        list[dict],
        (
            "each directive code that suppressed nothing: kind no-codes (no codes in brackets), "
            "unknown-code (names no rule) or unused (its rule ran and found nothing there)"
        ),
        items=("code", "directive", "kind", "location", "where"),
    )


class PolicyFacts(
    FactNamespace,
    name="policy",
    doc=(
        "What the change does to the gate's own policy against the base of `check --base` "
        "(advisor/pipeline/policy/)."
    ),
    scope="policy",
    builder="advisor.pipeline.policy.facts:policy_facts",
):
    base = fact(str, "the revision the policy is compared with, as `git REV`")
    settings = fact(
        list[dict],
        "settings that weaken the gate (GA801)",
        items=("file", "key", "kind", "location", "now", "rules", "value", "was"),
    )
    rules = fact(
        list[dict],
        "base rule files removed or weakened",
        items=("code", "file", "kind", "location", "now", "part", "was"),
    )
    suppressions = fact(
        list[dict],
        "inline directive codes the base lacks",
        items=("code", "directive", "file", "location", "where"),
    )
    baseline = fact(
        list[dict],
        "baseline entries the base lacks",
        items=("count", "file", "key", "kind", "location", "rule"),
    )
    measurements = fact(
        list[dict], "recorded measurements the base lacks", items=("digest", "file", "location", "run")
    )
