"""Structured generators for benchmarks/fuzz_inputs.py: one function per input kind that composes a small
project (files as bytes) from typed values, each value drawn either well-typed with odd content (huge
ints, long strings, control characters, globs, paths out of the project) or of the wrong type, plus
byte-level twists of the encoded file (UTF-16, a BOM, invalid UTF-8, truncation).

Every draw comes from one ``random.Random``, so an example is a pure function of (seed, index).
Values the emitters must write verbatim (YAML tags, a 5,000-digit integer that ``str(int)`` refuses,
JSON's NaN) are ``Raw`` strings.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# planted in every project's sibling folder: its text must never reach an output
SECRET = "FUZZSECRET"
# strings that must come out escaped: a terminal escape, a workflow command, bidi, zero-width, a tag char
MARKERS = ("\x1b", "\u202e", "\u200b", "\U000e0041", "\x07")
MODEL = "meta-llama/Llama-3.1-8B"  # in the shipped catalog: the estimate runs offline


class Raw(str):
    """Written verbatim by every emitter (a YAML tag, an integer too long for str(int), NaN in JSON)."""


@dataclass(slots=True)
class Example:
    kind: str  # settings, hardware, rules, baseline, verify, hostfile, pins, scripts
    files: dict[str, bytes]  # path in the project -> content
    command: list[str]  # arguments after `gpu-advise`
    note: str = ""  # what was drawn, for the report
    links: dict[str, str] = field(default_factory=dict)  # path in the project -> link target
    allows_outside: bool = False  # the settings allow a root outside the project: reading it is allowed


# ---- scalars ---------------------------------------------------------------------------------------
BIG_DIGITS = Raw("9" * 5000)  # past Python's 4,300-digit limit for int(str)
ODD_INTS: list[Any] = [
    0,
    -1,
    1,
    2,
    3,
    7,
    2**31 - 1,
    2**31,
    2**32,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64 + 1,
    4_000_000_000,
    10**12,
    10**18,
    10**30,
    10**300,
    -(10**20),
    Raw("9" * 4300),
    Raw("9" * 4301),
    BIG_DIGITS,
    Raw("-" + "9" * 5000),
]
ODD_FLOATS: list[Any] = [
    0.0,
    -0.0,
    0.5,
    1e-300,
    5e-324,
    1e308,
    1e20,
    float("inf"),
    float("-inf"),
    float("nan"),
]
GLOBS = [
    "*",
    "**",
    "**/*",
    "*.yaml",
    "**/**/**/**/**",
    "*a" * 30 + "X",
    "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*aX",
    "[",
    "[!",
    "[a-",
    "[]]",
    "[^x]*",
    "{a,b}",
    "?" * 200,
    "a/../../b",
    "\\",
    "(a+)+$",
    "*" * 500,
]
PATHS = [
    "../outside/secret.yaml",
    "../outside",
    "../outside/victim.txt",
    "../../etc/passwd",
    "/etc/passwd",
    "/",
    "~",
    "~/.netrc",
    ".",
    "..",
    "",
    "sub/../../outside/secret.yaml",
    "link-out.yaml",
    "nowhere.yaml",
    "d" * 300 + ".yaml",
    "a/" * 200 + "x.yaml",
    "-rf",
    "--help",
    "x\x00y",
]
CODES = ["GA101", "GA203", "GA2", "GA", "ALL", "ga101", "GA999", "GA001", "E501", "ORG001", "GA101,GA203"]
NASTY = [
    "",
    " ",
    "\t",
    "\x1b[31mRED\x1b[0m",
    "line\n::add-mask::FUZZ",
    "x\r\n::error file=a::b",
    "##[error]x",
    "\u202eevil",
    "GA\u200b101",
    "tag\U000e0041",
    "bell\x07",
    "nul\x00nul",
    "é",
    "日本語",
    "🙂" * 10,
    "{0}",
    "{training.output_dir}",
    "{",
    "}",
    "%s%n",
    "${HOME}",
    "$(id)",
    "`id`",
    "a" * 300,
    "b" * 5000,
    "x" * 70000,
]


def odd_int(rng: random.Random) -> Any:
    return rng.choice(ODD_INTS) if rng.random() < 0.7 else rng.randint(-5, 100)


def odd_str(rng: random.Random) -> str:
    pool = rng.choice([NASTY, NASTY, PATHS, GLOBS, CODES])
    return rng.choice(pool)


def odd_scalar(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.3:
        return odd_int(rng)
    if r < 0.45:
        return rng.choice(ODD_FLOATS)
    if r < 0.55:
        return rng.choice([True, False, None])
    return odd_str(rng)


def odd_value(rng: random.Random, depth: int = 0) -> Any:
    """Any shape: a scalar, or a list or mapping of odd values."""
    r = rng.random()
    if depth < 3 and r < 0.15:
        return [odd_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if depth < 3 and r < 0.25:
        return {str(odd_scalar(rng))[:50]: odd_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return odd_scalar(rng)


def typed(rng: random.Random, good: Callable[[], Any], wrong: float = 0.3) -> Any:
    """Usually a well-typed draw with odd content, sometimes a value of any other shape."""
    return odd_value(rng) if rng.random() < wrong else good()


# ---- emitters --------------------------------------------------------------------------------------
_BARE_TOML = re.compile(r"[A-Za-z0-9_-]+")


def _toml_str(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append("?")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_key(k: Any) -> str:
    k = str(k)
    return k if _BARE_TOML.fullmatch(k) else _toml_str(k)


def toml_value(v: Any) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(repr(v), repr(v))
    if v is None:
        return '""'  # TOML has no null
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    return _toml_str(str(v))


def toml_doc(data: dict[str, Any], table: str | None, rng: random.Random) -> str:
    """``data`` as TOML under ``[table]`` (None: top level); a mapping value becomes its own section
    or an inline table."""
    head = [f"[{table}]"] if table else []
    lines, sections = list(head), []
    for k, v in data.items():
        if (
            isinstance(v, dict)
            and v
            and rng.random() < 0.6
            and all(not isinstance(x, dict) for x in v.values())
        ):
            name = f"{table}.{_toml_key(k)}" if table else _toml_key(k)
            sections.append(f"\n[{name}]")
            sections += [f"{_toml_key(kk)} = {toml_value(vv)}" for kk, vv in v.items()]
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v) and rng.random() < 0.6:
            name = f"{table}.{_toml_key(k)}" if table else _toml_key(k)
            for item in v:
                sections.append(f"\n[[{name}]]")
                sections += [f"{_toml_key(kk)} = {toml_value(vv)}" for kk, vv in item.items()]
        else:
            lines.append(f"{_toml_key(k)} = {toml_value(v)}")
    return "\n".join(lines + sections) + "\n"


YAML_TAGS = [
    "!!timestamp x",
    "!!timestamp 2001-99-99",
    "!!bool maybe",
    "!!int ''",
    "!!float ''",
    "!!int 0b2",
    "!!float abc",
    "!!binary x",
    "!!null x",
    "!!python/object:os.system x",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "!!pairs [a: 1, a: 2]",
    "!!str",
    "!!seq x",
    "!!map x",
    "!custom x",
    "*missing",
    "1e400",
    ".inf",
    ".nan",
    "0x1F",
    "1:30",
    "no",
    "~",
    "? [a]",
    "'unterminated",
    '"\\ud800"',
    "{a: 1, a: 2}",
    "[" * 60 + "]" * 60,
]


def yaml_scalar(v: Any) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return {"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}.get(repr(v), repr(v))
    if isinstance(v, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_./-]*", v) and v.lower() not in _YAML_WORDS:
        return v
    return json.dumps(str(v), ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


_YAML_WORDS = {"yes", "no", "on", "off", "true", "false", "null", "y", "n", "~"}


def yaml_doc(v: Any, indent: int = 0) -> str:
    pad = " " * indent
    if isinstance(v, dict):
        if not v:
            return pad + "{}\n"
        out = []
        for k, x in v.items():
            key = yaml_scalar(k) if not isinstance(k, Raw) else str(k)
            if isinstance(x, (dict, list)) and x:
                out.append(f"{pad}{key}:\n{yaml_doc(x, indent + 2)}")
            else:
                out.append(f"{pad}{key}: {_flow(x)}\n")
        return "".join(out)
    if isinstance(v, list):
        if not v:
            return pad + "[]\n"
        out = []
        for x in v:
            if isinstance(x, (dict, list)) and x:
                inner = yaml_doc(x, indent + 2)
                out.append(f"{pad}- {inner.lstrip()}")
            else:
                out.append(f"{pad}- {_flow(x)}\n")
        return "".join(out)
    return pad + _flow(v) + "\n"


def _flow(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{yaml_scalar(k)}: {_flow(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    return yaml_scalar(v)


def json_doc(v: Any, rng: random.Random) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, dict):
        items = [f"{json.dumps(str(k))}: {json_doc(x, rng)}" for k, x in v.items()]
        if items and rng.random() < 0.05:
            items.append(items[0])  # a duplicate key
        return "{" + ", ".join(items) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(json_doc(x, rng) for x in v) + "]"
    if isinstance(v, float) and v != v:
        return "NaN"
    return json.dumps(v, ensure_ascii=rng.random() < 0.5)


def tag_some(rng: random.Random, v: Any, p: float = 0.15) -> Any:
    """Replace some leaves of a structure with YAML tag tokens (rule files, hardware, environment.yml)."""
    if isinstance(v, dict):
        return {k: tag_some(rng, x, p) for k, x in v.items()}
    if isinstance(v, list):
        return [tag_some(rng, x, p) for x in v]
    return Raw(rng.choice(YAML_TAGS)) if rng.random() < p else v


def encode(rng: random.Random, text: str, twist: float = 0.15) -> bytes:
    """UTF-8 mostly; sometimes UTF-16, a BOM, invalid bytes, latin-1, or a cut."""
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() >= twist:
        return data
    op = rng.choice(["utf16", "utf16le", "bom", "invalid", "latin1", "cut", "nul", "crlf", "lone-cr"])
    if op == "utf16":
        return text.encode("utf-16", "surrogatepass")
    if op == "utf16le":
        return text.encode("utf-16-le", "surrogatepass")
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    if op == "invalid":
        at = rng.randint(0, len(data))
        return (
            data[:at] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80\x80", b"\xf8"]) + data[at:]
        )
    if op == "latin1":
        return text.encode("latin-1", "replace") + "é".encode("latin-1")
    if op == "cut":
        return data[: rng.randint(0, len(data))]
    if op == "nul":
        at = rng.randint(0, len(data))
        return data[:at] + b"\x00" + data[at:]
    if op == "crlf":
        return data.replace(b"\n", b"\r\n")
    return data.replace(b"\n", b"\r")


# ---- the base run every kind builds on -------------------------------------------------------------
def base_run(rng: random.Random, script: str | None = None) -> dict[str, bytes]:
    """A small, valid run (a launch script, its TrainingArguments, a training script) that the odd
    input is added to."""
    args = {
        "model_name_or_path": MODEL,
        "output_dir": "out",
        "per_device_train_batch_size": rng.choice([1, 2, 4]),
        "gradient_accumulation_steps": rng.choice([1, 4]),
        "bf16": True,
        "dataloader_num_workers": rng.choice([0, 2, 16]),
        "learning_rate": 2.0e-5,
    }
    launch = script or rng.choice(
        [
            "torchrun --nproc_per_node 4 train.py args.yaml",
            "accelerate launch --num_processes 2 train.py args.yaml",
            "deepspeed --num_gpus 2 train.py args.yaml",
            "python train.py args.yaml",
        ]
    )
    return {
        "args.yaml": yaml_doc(args).encode(),
        "launch.sh": f"#!/bin/bash\n{launch}\n".encode(),
        "train.py": b"from transformers import HfArgumentParser, Trainer, TrainingArguments\n",
    }


# ---- settings --------------------------------------------------------------------------------------
def _codes(rng: random.Random) -> list[Any]:
    return [rng.choice(CODES + NASTY[:12]) for _ in range(rng.randint(0, 4))]


VALID_CODES = ["GA101", "GA203", "GA2", "GA", "ALL", "GA001", "GA4", "GA401", "GA202"]
VALID_INTS = [v for v in ODD_INTS if not isinstance(v, Raw) or len(v) <= 4300]


def _settings_value(rng: random.Random, key: str, valid: bool) -> Any:
    """One setting's value: with ``valid``, of the type the schema wants (odd content: huge ints, globs,
    nasty strings, paths out of the project); without, anything, usually close to the type."""
    sev = ["error", "warning", "info"] + ([] if valid else ["fatal", "", "ERROR"])
    codes_pool = VALID_CODES if valid else CODES + NASTY[:12]
    version = [
        "4.57.1",
        ">=0.19,<0.20",
        "^4.40",
        "~=4",
        "==" + "9" * 40,
        "x",
        "",
        "4.*",
        ">=1e400",
        "==4." + "0." * 300 + "0",
    ]
    ints = VALID_INTS if valid else ODD_INTS

    def codes() -> list[Any]:
        return [rng.choice(codes_pool) for _ in range(rng.randint(0, 4))]

    def maybe(good: Callable[[], Any], wrong: float = 0.25) -> Any:
        return good() if valid else typed(rng, good, wrong)

    def run() -> dict[str, Any]:
        r: dict[str, Any] = {"path": rng.choice(["launch.sh", "args.yaml", "launch.sh", *PATHS[:8]])}
        for k in (
            "name",
            "hardware",
            "effective-batch",
            "learning-rate",
            "dataset-samples",
            "dataset-tokens",
        ):
            if rng.random() < 0.4:
                good = {
                    "name": lambda: odd_str(rng),
                    "hardware": lambda: rng.choice(["1xH100", "hw.yaml", "8xH100-SXM", *PATHS[:6]]),
                    "learning-rate": lambda: rng.choice(ODD_FLOATS),
                }.get(k, lambda: rng.choice(ints))
                r[k] = maybe(good)
        return r

    goods: dict[str, Callable[[], Any]] = {
        "select": codes,
        "extend-select": codes,
        "ignore": codes,
        "severity": lambda: {rng.choice(codes_pool): rng.choice(sev) for _ in range(rng.randint(0, 3))},
        "fail-on": lambda: rng.choice(sev),
        "per-file-ignores": lambda: {rng.choice(GLOBS): codes() for _ in range(rng.randint(1, 3))},
        "key-ignores": lambda: {
            rng.choice(GLOBS): {rng.choice(["*", "learning_rate", *GLOBS[:6]]): codes()}
            for _ in range(rng.randint(1, 2))
        },
        "hardware": lambda: rng.choice(
            ["1xH100", "4xH100-NVL", "hw.yaml", "hw.yaml"] + (PATHS[:8] if valid else [*PATHS, *NASTY[:8]])
        ),
        "runs": lambda: [run() for _ in range(rng.randint(0, 3))],
        "extend-rules": lambda: [rng.choice(["rules"] * 6 + PATHS) for _ in range(rng.randint(0, 2))],
        "allowed-roots": lambda: [rng.choice(["sub", *PATHS]) for _ in range(rng.randint(0, 2))],
        "thresholds": lambda: {
            k: maybe(lambda: rng.choice(ODD_FLOATS + VALID_INTS[:16]), 0.2)
            for k in rng.sample(
                ["single-gpu-hours", "workers-per-process", "near-memory-fraction", "prediction-tolerance"],
                rng.randint(1, 4),
            )
        },
        "baseline": lambda: rng.choice([".gpu-advise-baseline.json"] * 3 + PATHS),
        "dataset-samples": lambda: rng.choice(ints),
        "dataset-tokens": lambda: rng.choice(ints),
        "target-versions": lambda: {
            rng.choice(
                ["transformers", "trl", "accelerate", "peft", "deepspeed"]
                + ([] if valid else ["torch", *NASTY[:6]])
            ): rng.choice(version)
            for _ in range(rng.randint(1, 3))
        },
    }
    good = goods.get(key, lambda: odd_value(rng))
    return maybe(good)


def settings_table(rng: random.Random, valid: bool) -> dict[str, Any]:
    from advisor.sources.schema.settings import known_keys

    keys = known_keys("")
    chosen = rng.sample(keys, rng.randint(1, min(6, len(keys))))
    table = {k: _settings_value(rng, k, valid) for k in chosen}
    if not valid and rng.random() < 0.15:  # a typo or an unknown key, maybe with a nasty name
        table[rng.choice(["selct", "ignores", "thresholds2", *NASTY[:12]])] = odd_value(rng)
    return table


def settings_file(rng: random.Random, table: dict[str, Any], twist: float = 0.25) -> tuple[str, bytes]:
    if rng.random() < 0.5:
        text = '[project]\nname = "demo"\n\n' + toml_doc(table, "tool.gpu-advise", rng)
        return "pyproject.toml", encode(rng, text, twist)
    return ".gpu-advise.toml", encode(rng, toml_doc(table, None, rng), twist)


def _allows_outside(table: dict[str, Any]) -> bool:
    roots = table.get("allowed-roots")
    return isinstance(roots, list) and any(
        isinstance(r, str) and r.startswith(("/", "..", "~", "sub/..")) for r in roots
    )


def gen_settings(rng: random.Random) -> Example:
    files = base_run(rng)
    valid = rng.random() < 0.65
    table = settings_table(rng, valid)
    name, data = settings_file(rng, table, 0.02 if valid else 0.3)
    files[name] = data
    if valid or rng.random() < 0.3:
        files["hw.yaml"] = yaml_doc(hardware_mapping(rng, odd=0.0 if valid else 0.1)).encode()
    if valid or rng.random() < 0.2:
        files["rules/ORG001-demo.yaml"] = yaml_doc(rule_mapping(rng, odd=0.0)).encode()
    if valid or rng.random() < 0.3:
        files[".gpu-advise-baseline.json"] = json_doc(baseline_payload(rng, True), rng).encode()
    if rng.random() < 0.2:  # a settings file in a sub-folder too (hierarchical settings)
        files["sub/.gpu-advise.toml"] = encode(rng, toml_doc(settings_table(rng, valid), None, rng), 0.02)
        files["sub/args.yaml"] = files["args.yaml"]
    command = rng.choice(
        [
            ["check", "--format", "json", "."],
            ["check", "."],
            ["check", "--format", "sarif", "."],
            ["plan", "."],
            ["baseline", "."],
            ["estimate", "."],
        ]
    )
    if "sub/args.yaml" in files and rng.random() < 0.5:
        command = ["check", "sub/args.yaml", "args.yaml"]
    note = f"{'valid' if valid else 'odd'} keys {sorted(map(str, table))[:6]}"
    return Example("settings", files, command, note, allows_outside=_allows_outside(table))


# ---- hardware descriptors --------------------------------------------------------------------------
GPU_MODELS = ["H100-NVL", "A100-80GB", "RTX-4090", "H100", "MI300X", "4090", "T4", "B200", "nope", ""]
NVLINKS: list[Any] = [
    [[0, 1], [2, 3]],
    "all",
    [],
    "none",
    [[0, 0]],
    [[0, 1, 2, 3, 4, 5, 6, 7]],
    [[-1, 2]],
    [[0, 99999]],
    [[0, 2**63]],
    [[0, 1]] * 500,
    [list(range(300))],
    [[0, 1], [1, 2], [2, 3]],
    [[[0, 1]]],
    [0, 1],
    [["0", "1"]],
    True,
    None,
    {"0": 1},
]


VALID_NVLINKS: list[Any] = [
    [[0, 1], [2, 3]],
    "all",
    [],
    [[0, 1]],
    [[0, 1, 2, 3]],
    [[0, 1]] * 500,
    [[0, 3], [1, 2]],
]


def hardware_mapping(rng: random.Random, odd: float = 0.3) -> dict[str, Any]:
    """A descriptor; ``odd`` = 0 keeps it valid for the schema (huge node counts and long names still)."""
    valid = odd == 0

    def pick(good: list[Any], bad: list[Any]) -> Any:
        return rng.choice(good) if valid else typed(rng, lambda: rng.choice(good + bad), odd)

    gpus: dict[str, Any] = {
        "model": pick(
            ["H100-NVL", "A100-80GB", "RTX-4090", "H100", "MI300X", "T4", "B200"], ["4090", "nope", ""]
        ),
        "count": pick([1, 2, 4, 8, 1024], [1025, 0, -1, 10**12, BIG_DIGITS]),
    }
    if rng.random() < 0.3:
        gpus["memory_gib"] = pick([80, 0.5, 1e-300, 1e308, 10**30], [0, -1, float("nan"), float("-inf")])
    hw: dict[str, Any] = {
        "name": pick(["lab-box", "n" * 300, *NASTY[3:13]], NASTY),
        "gpus": gpus if valid or rng.random() > odd / 3 else odd_value(rng),
        "nvlink": pick(VALID_NVLINKS, NVLINKS),
    }
    options: list[tuple[str, list[Any], list[Any]]] = [
        ("cpu_cores", [1, 2, 64, 2**31, 2**63, 10**18], [0, -1, "x"]),
        ("ram_gib", [512, 0.5, 1e308, 10**12], [0, float("nan"), -1]),
        ("nodes", [1, 2, 16, 10**12, 2**63], [0, -1, BIG_DIGITS]),
        (
            "network",
            [
                "ib-400g",
                "ib-400gx8",
                "eth-100g",
                "efa-3200g",
                "none",
                "ib-400gx" + "9" * 30,
                "eth-" + "9" * 40 + "g",
            ],
            ["x", "ib-0g"],
        ),
        ("notes", [odd_str(rng)], []),
    ]
    for key, good, bad in options:
        if rng.random() < 0.5:
            hw[key] = pick(good, bad)
    if not valid and rng.random() < 0.1:
        hw[rng.choice(["extra", "gpu", *NASTY[:6]])] = odd_value(rng)
    return hw


def gen_hardware(rng: random.Random) -> Example:
    files = base_run(rng)
    valid = rng.random() < 0.55
    hw = hardware_mapping(rng, 0.0 if valid else 0.3)
    if not valid and rng.random() < 0.2:
        hw = tag_some(rng, hw, 0.1)
    text = yaml_doc(hw)
    if rng.random() < 0.1:  # aliases under a non-scalar key (item 5's 580 bytes)
        text = "a: &a [" + ", ".join(["x"] * 20) + "]\nb: &b [" + ", ".join(["*a"] * 20) + "]\n" + text
        text += "? [*b, *b, *b, *b, *b, *b, *b, *b]\n: 1\n"
    name = rng.choice(["hw.yaml", "machine.yaml"] + ([] if valid else ["h" * 250 + ".yaml"]))
    files[name] = encode(rng, text, 0.0 if valid else 0.15)
    mode = rng.choice(["flag", "flag", "auto", "settings", "run-settings"])
    if mode == "settings":
        files[".gpu-advise.toml"] = f"hardware = {toml_value(name)}\n".encode()
    elif mode == "run-settings":
        files[".gpu-advise.toml"] = f'[[runs]]\npath = "launch.sh"\nhardware = {toml_value(name)}\n'.encode()
    flag = ["-H", name] if mode == "flag" else []
    command = rng.choice(
        [
            ["check", *flag, "--format", "json", "."],
            ["check", *flag, "."],
            ["estimate", *flag, "."],
            ["plan", *flag, "."],
            ["check", *flag, "launch.sh"],
        ]
    )
    return Example("hardware", files, command, f"{mode} {str(hw)[:100]}")


# ---- rule files ------------------------------------------------------------------------------------
FACTS = [
    "batch.world_size",
    "batch.per_device",
    "batch.accumulation",
    "batch.dp_size",
    "batch.effective_batch",
    "training.output_dir",
    "training.learning_rate",
    "training.per_device_train_batch_size",
    "hardware.name",
    "hardware.count",
    "hardware.memory_gib",
    "data.workers",
    "run.name",
    "run.strategy",
    "model.name",
    "placement.gpu_ids",
    "script.load_calls",
    "document.problems",
    "estimates.params",
    "settings.path",
]
LISTS = [
    "placement.gpu_ids",
    "script.load_calls",
    "document.problems",
    "placement.nvlink_groups",
    "[1, 2, 3]",
]
BIG = [
    "'x' * 10**9",
    "'ab' * 10**5 * 10**5",
    "[0] * 10**8",
    "[[0] * 10**4] * 10**4",
    "str([0] * 10**7)",
    "join(',', [str(i) for i in [0] * 10**7])",
    "sorted([1, 2] * 10**7)",
    "[1] * 10**7 == [1] * 10**7",
    "'a' * 10**7 in 'a' * 10**8",
    "sum([i * i for i in [1] * 10**7])",
    "2 ** 10**8",
    "10 ** 10 ** 10",
    "max([len(str(i)) for i in [10**4000] * 1000])",
    "[x for x in [1] * 10**4 for y in [1] * 10**4]",
    "show(training) * 10**6",
    "upper('a' * 10**8)",
    "1 / 0",
    "1 % 0",
    "-(2**64) // 0",
    "int('9' * 5000)",
    "float('1e400')",
    "round(1e308 * 10)",
    "gib(10**400)",
    "plural(10**5000, 'x')",
]
ODD_EXPR = [
    "__import__('os')",
    "training.__class__",
    "().__class__.__bases__",
    "open('/etc/passwd')",
    "lambda: 1",
    "(x := 1)",
    "f'{1}'",
    "range(10**9)",
    "[",
    "",
    "not",
    "batch.world_size >",
    "batch.nope",
    "nope.x",
    "item.x",
    "'a' if True else",
    "((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))",
    "1 +" * 300 + " 1",
    "not " * 500 + "True",
    "[" * 150 + "]" * 150,
]


def expression(rng: random.Random, depth: int = 0, names: tuple[str, ...] = (), valid: bool = False) -> str:
    r = rng.random()
    if depth > 2 or r < 0.25:
        return rng.choice(
            FACTS
            + list(names)
            + ["1", "0", "'x'", "None", "True", "[1, 2]", str(rng.choice(VALID_INTS[:18]))]
        )
    if r < 0.35:
        return rng.choice(BIG)
    if r < 0.42 and not valid:
        return rng.choice(ODD_EXPR)

    def sub() -> str:
        return expression(rng, depth + 1, names, valid)

    a, b = sub(), sub()
    op = rng.choice(
        ["+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", ">=", "and", "or", "in", "not in", "is"]
    )
    if r < 0.55:
        return f"({a} {op} {b})"
    if r < 0.65:
        helper = rng.choice(
            ["len", "str", "int", "float", "max", "min", "sum", "sorted", "show", "lower", "abs", "list"]
        )
        return f"{helper}({a})"
    if r < 0.72:
        return f"[{a} for item in {rng.choice(LISTS)}]"
    if r < 0.78:
        return f"({a} if {b} else {sub()})"
    if r < 0.84:
        return f"{a}[{rng.choice(['0', '-1', '10**20', '1:10**9', chr(39) + 'k' + chr(39)])}]"
    return f"not {a}"


def rule_mapping(rng: random.Random, odd: float = 0.25, code: str = "ORG001") -> dict[str, Any]:
    """A rule file's mapping; ``odd`` = 0 keeps every field valid for the schema (the expressions are
    still drawn from the whole grammar, big builders included, but not from the malformed ones)."""
    valid = odd == 0
    lets = {f"v{i}": expression(rng, 1, (), valid) for i in range(rng.randint(0, 2))}
    names = tuple(lets)

    def pick(good: list[Any], bad: list[Any], wrong: float) -> Any:
        return rng.choice(good) if valid else typed(rng, lambda: rng.choice(good + bad), wrong)

    def template() -> Any:
        return rng.choice(
            [
                "value {" + expression(rng, 1, names, valid) + "}",
                odd_str(rng).replace("{", "(").replace("}", ")") if valid else odd_str(rng),
                "{" + rng.choice(BIG) + "}",
                {
                    "by": expression(rng, 1, names, valid),
                    "cases": {"x": "{" + expression(rng, 1, (), valid) + "}"},
                    "default": "d",
                },
            ]
        )

    rule: dict[str, Any] = {
        "code": pick([code], ["ga101", "GA101", "ORG1", "X" * 300, ""], odd / 2),
        "name": pick([f"demo-rule-{code.lower()}"], ["Demo", "demo-" + "x" * 300, ""], odd / 2),
        "severity": pick(
            ["error", "warning", "info", {"error": expression(rng, 1, names, valid), "default": "warning"}],
            ["fatal", {"default": "warning"}],
            odd / 2,
        ),
        "summary": pick([odd_str(rng), "a summary"], [], odd / 3),
        "when": expression(rng, 0, names, valid)
        if valid
        else typed(rng, lambda: expression(rng, 0, names), odd / 3),
        "message": template() if valid else typed(rng, template, odd / 3),
        "docs": pick(["## What it does\nx\n", odd_str(rng)], [], odd / 3),
    }
    if lets:
        rule["let"] = lets
    if rng.random() < 0.3:
        rule["for_each"] = rng.choice([*LISTS, expression(rng, 1, (), valid)])
    if rng.random() < 0.5:
        rule["at"] = pick([*FACTS, "item"], ["training.nope", *NASTY[:6]], odd)
    if rng.random() < 0.2:
        rule["related"] = [rng.choice(FACTS) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.2:
        fix = {
            "set": {rng.choice(FACTS): odd_value(rng)},
            "safety": rng.choice(["safe", "unsafe", "display"] + ([] if valid else ["x"])),
            "when": expression(rng, 1, (), valid),
        }
        rule["fix"] = fix if valid else typed(rng, lambda: fix, odd)
    if rng.random() < 0.15:
        rule["scope"] = rng.choice(["run", "document", "suppression"] + ([] if valid else ["x"]))
    if rng.random() < 0.15:
        rule["requires"] = [rng.choice(FACTS + ([] if valid else ["nope"])) for _ in range(rng.randint(0, 2))]
    if rng.random() < 0.1:
        rule["aliases"] = [f"ORG{rng.randint(500, 999)}"] if valid else _codes(rng)
    if rng.random() < 0.15:
        rule["examples"] = [
            {
                "expect": rng.choice(["fail", "pass"] + ([] if valid else ["x"])),
                "files": {"args.yaml": "output_dir: out\n"},
                "at": odd_str(rng),
            }
        ]
    if not valid and rng.random() < 0.05:
        rule[rng.choice(["message_by", "severity_when", "extra"])] = odd_value(rng)
    return rule


def gen_rules(rng: random.Random) -> Example:
    files = base_run(rng)
    valid = rng.random() < 0.6
    for i in range(rng.randint(1, 3)):
        rule = rule_mapping(rng, 0.0 if valid else 0.25, code=f"ORG{i + 1:03d}")
        if not valid and rng.random() < 0.35:
            rule = tag_some(rng, rule, 0.12)
        text = yaml_doc(rule)
        if not valid and rng.random() < 0.05:
            text = text + "---\n" + text  # two documents
        names = [f"ORG{i + 1:03d}-demo.yaml", f"org{i}.yml", f"x{i}.yaml"] + (
            [] if valid else ["r" * 250 + ".yaml"]
        )
        files[f"rules/{rng.choice(names)}"] = encode(rng, text, 0.0 if valid else 0.1)
    via_settings = rng.random() < 0.2
    if via_settings:
        files[".gpu-advise.toml"] = b'extend-rules = ["rules"]\n'
    flag = [] if via_settings else ["--rules", "rules"]
    command = rng.choice(
        [
            ["check", *flag, "--format", "json", "."],
            ["check", *flag, "."],
            ["baseline", *flag, "."],
            ["rules", *flag] if flag else ["rules"],
            ["check", *flag, "--format", "sarif", "."],
        ]
    )
    return Example("rules", files, command, f"{len([f for f in files if f.startswith('rules/')])} rule files")


# ---- baselines -------------------------------------------------------------------------------------
def baseline_payload(rng: random.Random, valid: bool = False) -> Any:
    if valid:
        entries = []
        for _ in range(rng.randint(0, 5)):
            e = {
                "rule": rng.choice(VALID_CODES),
                "file": rng.choice(["args.yaml", "launch.sh", *PATHS[:6]]),
                "key": rng.choice(["/learning_rate", None, "/per_device_train_batch_size", *NASTY[:6]]),
                "fingerprint": rng.choice(["0" * 16, "x", "", "f" * 5000, odd_str(rng)]),
            }
            if rng.random() < 0.5:
                e["count"] = rng.choice([1, 2, 2**31, 2**63 - 1, 10**18])
            entries.append(e)
        return {"version": 1, "tool": rng.choice(["gpu-advise", odd_str(rng)]), "entries": entries}

    def entry() -> Any:
        e: dict[str, Any] = {
            "rule": typed(rng, lambda: rng.choice(CODES), 0.2),
            "file": typed(rng, lambda: rng.choice(["args.yaml", "launch.sh", *PATHS]), 0.2),
            "key": typed(rng, lambda: rng.choice(["/learning_rate", None, "", "/a/b", *NASTY[:6]]), 0.2),
            "fingerprint": typed(rng, lambda: rng.choice(["0" * 16, "x", "", "f" * 5000]), 0.3),
        }
        if rng.random() < 0.5:
            e["count"] = typed(rng, lambda: odd_int(rng), 0.3)
        return e if rng.random() > 0.1 else odd_value(rng)

    payload: dict[str, Any] = {
        "version": typed(
            rng, lambda: rng.choice([1, 1, 1, 2, 0, True, 1.0, "1", BIG_DIGITS, Raw("1e400")]), 0.1
        ),
        "tool": "gpu-advise",
        "entries": typed(rng, lambda: [entry() for _ in range(rng.randint(0, 5))], 0.15),
    }
    if rng.random() < 0.1:
        return odd_value(rng)
    return payload


def gen_baseline(rng: random.Random) -> Example:
    files = base_run(rng)
    name = rng.choice([".gpu-advise-baseline.json", ".gpu-advise-baseline.json", "base.json"])
    valid = rng.random() < 0.5
    text = json_doc(baseline_payload(rng, valid), rng)
    if not valid and rng.random() < 0.05:
        text = "[" * rng.choice([1000, 100_000]) + "]" * rng.choice([0, 1000])
    files[name] = encode(rng, text, 0.02 if valid else 0.2)
    mode = rng.choice(["flag", "flag", "settings", "write"])
    if mode == "settings":
        files[".gpu-advise.toml"] = f"baseline = {toml_value(rng.choice([name, *PATHS[:4]]))}\n".encode()
        command = rng.choice([["check", "."], ["check", "--format", "json", "."], ["baseline", "."]])
    elif mode == "write":
        command = ["baseline", "-o", name, "."]
    else:
        command = rng.choice(
            [["check", "--baseline", name, "."], ["check", "--baseline", name, "--format", "json", "."]]
        )
    return Example("baseline", files, command, mode)


# ---- the verify file -------------------------------------------------------------------------------
MEASURED_KEYS = [
    "world_size",
    "effective_batch",
    "per_device",
    "accumulation",
    "seq_len",
    "samples_per_rank",
    "seconds_per_step",
    "tokens_per_s",
    "tokens_per_step",
    "peak_allocated_gib",
    "peak_reserved_gib",
    "device_total_gib",
    "param_bytes",
    "grad_bytes",
    "optimizer_bytes",
    "oom_rank",
    "oom_at_step",
    "error",
    "stopped",
    "device",
    "device_name",
    "cpu_timings",
    "faithful",
    "scaling_efficiency",
    "scaling_processes",
    "digest",
]


def verify_payload(rng: random.Random) -> Any:
    def measured() -> Any:
        return {
            k: typed(rng, lambda: rng.choice([odd_int(rng), rng.choice(ODD_FLOATS), odd_str(rng)]), 0.3)
            for k in rng.sample(MEASURED_KEYS, rng.randint(0, 10))
        }

    def spec() -> Any:
        s = {
            "run": "launch.sh",
            "launcher": rng.choice(["torchrun", "accelerate", "python", "x"]),
            "nproc": odd_int(rng),
            "device": rng.choice(["cuda", "cpu", "tpu"]),
            "model_name": MODEL,
            "model_source": "catalog",
            "hf_config": typed(rng, lambda: {"model_type": "llama", "hidden_size": odd_int(rng)}, 0.3),
            "seq_len": odd_int(rng),
        }
        for k in rng.sample(list(s), rng.randint(0, 3)):
            s[k] = odd_value(rng)
        return s

    def run() -> Any:
        r: dict[str, Any] = {
            "path": typed(rng, lambda: rng.choice(["launch.sh", "args.yaml", "launch.sh", *PATHS[:4]]), 0.1),
            "name": typed(rng, lambda: rng.choice(["launch.sh", *NASTY[:8]]), 0.2),
            "status": typed(
                rng, lambda: rng.choice(["ok", "oom", "failed", "stale", "timeout", "", *NASTY[:4]]), 0.2
            ),
        }
        if rng.random() < 0.6:
            r["measured"] = typed(rng, measured, 0.15)
        if rng.random() < 0.3:
            r["digest"] = typed(rng, lambda: rng.choice(["", "abc", "0" * 64]), 0.3)
        if rng.random() < 0.3:
            r["scaling"] = typed(
                rng, lambda: {"efficiency": rng.choice(ODD_FLOATS), "processes": odd_int(rng)}, 0.3
            )
        if rng.random() < 0.3:
            r["spec"] = typed(rng, spec, 0.2)
        if rng.random() < 0.2:
            r["reason"] = odd_value(rng)
        return r

    payload: dict[str, Any] = {
        "version": typed(rng, lambda: 1, 0.2),
        "device": typed(rng, lambda: {"name": odd_str(rng), "total_gib": rng.choice(ODD_FLOATS)}, 0.4),
        "runs": typed(rng, lambda: [run() for _ in range(rng.randint(0, 3))], 0.15),
    }
    return payload if rng.random() > 0.08 else odd_value(rng)


INT_MEASURES = {
    "world_size",
    "effective_batch",
    "per_device",
    "accumulation",
    "seq_len",
    "tokens_per_step",
    "param_bytes",
    "grad_bytes",
    "optimizer_bytes",
    "oom_rank",
    "oom_at_step",
    "scaling_processes",
}
TEXT_MEASURES = {"error", "stopped", "device", "device_name", "digest"}


def valid_verify_payload(rng: random.Random) -> dict[str, Any]:
    """Recorded measurements of the right shape (strict JSON, no NaN): odd sizes and strings inside."""
    finite = [0.0, 0.5, 1e-300, 5e-324, 12.5, 1e6, 3.0]
    ints = [0, 1, 2, 4, 7, 2**31, 2**53 + 1, 2**63 - 1]
    ratios = [0.0, 0.5, 0.999, 1.0]

    def value(key: str) -> Any:
        if key in INT_MEASURES:
            return rng.choice(ints)
        if key in TEXT_MEASURES:
            return rng.choice(["cuda", "H100", *NASTY[:14]])
        if key in ("cpu_timings", "faithful"):
            return rng.choice([True, False])
        if key == "scaling_efficiency":
            return rng.choice(ratios)
        if key == "samples_per_rank":
            return [rng.choice(ints) for _ in range(rng.randint(0, 4))]
        return rng.choice(finite)

    runs = []
    for _ in range(rng.randint(1, 3)):
        run: dict[str, Any] = {
            "path": rng.choice(["launch.sh", "launch.sh", "args.yaml", "sub/x.sh"]),
            "name": rng.choice(["launch.sh", *NASTY[:10]]),
            "status": rng.choice(["ok", "ok", "oom", "failed", "timeout", "skipped"]),
            "measured": {k: value(k) for k in rng.sample(MEASURED_KEYS, rng.randint(1, 12))},
        }
        if rng.random() < 0.3:
            run["scaling"] = {"efficiency": rng.choice(ratios), "processes": rng.choice(ints)}
        if rng.random() < 0.3:
            run["reason"] = rng.choice(NASTY[:14])
        runs.append(run)
    device = {"name": rng.choice(["NVIDIA H100 80GB HBM3", *NASTY[:14]]), "total_gib": rng.choice(finite)}
    return {"version": 1, "device": device, "runs": runs}


def gen_verify(rng: random.Random) -> Example:
    files = base_run(rng)
    valid = rng.random() < 0.6
    payload = valid_verify_payload(rng) if valid else verify_payload(rng)
    text = json.dumps(payload, ensure_ascii=rng.random() < 0.5) if valid else json_doc(payload, rng)
    files[".gpu-advise-verify.json"] = encode(rng, text, 0.0 if valid else 0.15)
    command = rng.choice(
        [
            ["check", "."],
            ["check", "--format", "json", "."],
            ["check", "--format", "sarif", "."],
            ["check", "launch.sh"],
        ]
    )
    return Example("verify", files, command, text[:100])


# ---- hostfiles -------------------------------------------------------------------------------------
HOSTS = [
    "worker-1",
    "worker-2",
    "localhost",
    "10.0.0.1",
    "h" * 300,
    "-x",
    "a:b",
    "@",
    "é",
    "#x",
    "w\x1b[2J",
    "*",
]
SLOTS = ["4", "8", "0", "1", "4e9", "4000000000", "9" * 30, "9" * 5000, "-1", "", "x", "4.5", "0x10", "٣"]


def hostfile_text(rng: random.Random) -> tuple[str, list[str]]:
    lines, hosts = [], []
    for _ in range(rng.choice([0, 1, 2, 3, 5, 50, 5000])):
        host = rng.choice(HOSTS[:3]) + (str(rng.randint(0, 9)) if rng.random() < 0.5 else "")
        if rng.random() < 0.2:
            host = rng.choice(HOSTS)
        form = rng.random()
        if form < 0.75:
            lines.append(f"{host} slots={rng.choice(SLOTS)}")
            hosts.append(host)
        elif form < 0.85:
            lines.append(rng.choice(["# comment", "", "   ", "\t"]))
        else:
            lines.append(
                rng.choice(
                    [
                        host,
                        f"{host} slots",
                        f"{host}\tslots=2",
                        f"{host} slots=2 extra",
                        "slots=2",
                        f"  {host} slots=2  # c",
                        "\x00",
                    ]
                )
            )
    return "\n".join(lines) + "\n", hosts


def _node_spec(rng: random.Random, hosts: list[str]) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        host = rng.choice(hosts) if hosts and rng.random() < 0.8 else rng.choice(HOSTS)
        if rng.random() < 0.5:
            host += ":" + ",".join(
                rng.choice(["0", "1", "3", "-1", "x", "9" * 30, ""]) for _ in range(rng.randint(1, 3))
            )
        parts.append(host)
    return "@".join(parts)


def gen_hostfile(rng: random.Random) -> Example:
    text, hosts = hostfile_text(rng)
    words = ["deepspeed"]
    name = rng.choice(
        ["hostfile", "hostfile", "../outside/secret.yaml", "/etc/hosts", "missing", "sub", "h" * 300]
    )
    words += [rng.choice(["--hostfile", "-H"]), name]
    if rng.random() < 0.4:
        words += [rng.choice(["--include", "--exclude", "-i", "-e"]), f"'{_node_spec(rng, hosts)}'"]
    for flag in ("--num_nodes", "--num_gpus", "--num_accelerators", "--master_port", "--launcher"):
        if rng.random() < 0.25:
            words += [flag, rng.choice([*SLOTS[:9], "pdsh", "openmpi", "$N", "$((2**64))"])]
    words += ["train.py", "args.yaml", "--deepspeed", "ds.json"]
    files = base_run(rng, " ".join(words))
    files["hostfile"] = encode(rng, text, 0.1)
    files["ds.json"] = b'{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2}}\n'
    (files.setdefault("sub/x", b""))
    command = rng.choice(
        [
            ["check", "."],
            ["check", "--format", "json", "launch.sh"],
            ["plan", "launch.sh"],
            ["estimate", "launch.sh"],
        ]
    )
    return Example("hostfile", files, command, " ".join(words)[:120])


# ---- pin files -------------------------------------------------------------------------------------
PACKAGES = ["transformers", "trl", "accelerate", "peft", "deepspeed", "Transformers", "trl_", "torch"]
SPECS = [
    "==4.57.1",
    ">=4.41,<5",
    "^4.40",
    "~4.40",
    "~=4.57",
    "==4.*",
    "===4.57.1",
    "==" + "9" * 5000,
    "==" + "9" * 40,
    ">=1e400",
    "==4.57.1rc1.post2.dev3",
    "==v4",
    "!=",
    "<" * 50,
    "^" + "9" * 30,
    "~0.0.0.0.0",
    "^0.0",
    "==4.57.1; python_version<'3'",
    "@ git+https://example.invalid/x",
    "[torch]==4.40",
    "",
    "==",
    "== 4 . 5",
    ">=0.19,<0.20",
    "==0.19.8",
    "*",
    "==4." + "0." * 500 + "0",
]


def _req(rng: random.Random) -> str:
    return rng.choice(PACKAGES) + rng.choice(SPECS) if rng.random() < 0.9 else odd_str(rng)


def pin_files(rng: random.Random) -> dict[str, str]:
    kind = rng.choice(
        ["requirements", "pyproject", "environment", "uv", "poetry", "pipfile", "setup.cfg", "setup.py"]
    )
    reqs = [_req(rng) for _ in range(rng.randint(1, 4))]
    if kind == "requirements":
        extra = ["-r other.txt", "--index-url x", "# c", "-e .", "transformers @ file:///x"]
        lines = reqs + rng.sample(extra, rng.randint(0, 2))
        return {rng.choice(["requirements.txt", "requirements-dev.txt"]): "\n".join(lines) + "\n"}
    if kind == "pyproject":
        project: dict[str, Any] = {
            "name": "demo",
            "dependencies": typed(rng, lambda: reqs, 0.15),
        }
        if rng.random() < 0.3:
            project["optional-dependencies"] = typed(rng, lambda: {"x": reqs}, 0.3)
        text = toml_doc(project, "project", rng)
        if rng.random() < 0.4:
            deps = {
                p: typed(rng, lambda: rng.choice([*SPECS, "4.57.1", {"version": rng.choice(SPECS)}]), 0.2)
                for p in rng.sample(PACKAGES, 2)
            }
            text += "\n" + toml_doc(deps, "tool.poetry.dependencies", rng)
        return {"pyproject.toml": text}
    if kind == "environment":
        levels, fan = rng.choice([(0, 0), (1, 3), (2, 10), (3, 10), (4, 8), (5, 6), (6, 6)])
        anchors = "x0: &a0 [" + ", ".join(json.dumps(r) for r in reqs) + "]\n"
        for lv in range(1, levels + 1):
            anchors += f"x{lv}: &a{lv} [" + ", ".join([f"*a{lv - 1}"] * fan) + "]\n"
        deps = [
            rng.choice(["python=3.11", "pip", "conda-forge::transformers=4.57.1", _req(rng)])
            for _ in range(3)
        ]
        body = yaml_doc({"name": "env", "dependencies": [*deps, {"pip": reqs}]})
        if levels:
            body += f"  - *a{levels}\n"
        text = anchors + body if levels else body
        if rng.random() < 0.2:
            text = yaml_doc(tag_some(rng, {"name": "env", "dependencies": [*deps, {"pip": reqs}]}, 0.3))
        return {rng.choice(["environment.yml", "environment.yaml"]): text}
    if kind in ("uv", "poetry"):
        blocks = []
        for _ in range(rng.randint(1, 3)):
            pkg = {
                "name": rng.choice(PACKAGES),
                "version": typed(rng, lambda: rng.choice(["4.57.1", *SPECS]), 0.3),
            }
            blocks.append(toml_doc(pkg, None, rng))
        text = "version = 1\n" + "".join(f"\n[[package]]\n{b}" for b in blocks)
        return {"uv.lock" if kind == "uv" else "poetry.lock": text}
    if kind == "pipfile":
        payload = {
            "default": typed(
                rng, lambda: {p: {"version": rng.choice(SPECS)} for p in rng.sample(PACKAGES, 2)}, 0.3
            ),
            "develop": odd_value(rng),
        }
        return {"Pipfile.lock": json_doc(payload, rng)}
    if kind == "setup.cfg":
        return {"setup.cfg": "[options]\ninstall_requires =\n" + "".join(f"    {r}\n" for r in reqs)}
    lits = ", ".join(json.dumps(r) for r in reqs)
    body = rng.choice(
        [
            f"from setuptools import setup\nsetup(name='x', install_requires=[{lits}])\n",
            f"REQS = [{lits}]\nsetup(install_requires=REQS, extras_require={{'a': [{lits}]}})\n",
            "setup(install_requires=" + "[" * 150 + lits + "]" * 150 + ")\n",
            "setup(install_requires=[" + " + ".join(["'x'"] * 3000) + "])\n",
            f"setup(install_requires=REQS)\nREQS = [{lits}]\n",
            "setup(install_requires=[" + "9" * 5000 + "])\n",
            f"import os\nos.system('id')\nsetup(install_requires=[{lits}])\n",
        ]
    )
    return {"setup.py": body}


def gen_pins(rng: random.Random) -> Example:
    files = base_run(rng)
    args = yaml_doc(
        {
            "model_name_or_path": MODEL,
            "output_dir": "out",
            "evaluation_strategy": "steps",
            "use_mps_device": False,
            "per_device_train_batch_size": 2,
        }
    )
    files["args.yaml"] = args.encode()
    drawn = pin_files(rng)
    for name, text in drawn.items():
        files[name] = encode(rng, text, 0.1)
    command = rng.choice(
        [["check", "."], ["check", "--format", "json", "."], ["plan", "."], ["check", "args.yaml"]]
    )
    return Example("pins", files, command, ", ".join(drawn))


# ---- scripts ---------------------------------------------------------------------------------------
SHELL_VALUES = [
    "4",
    "0",
    "-1",
    "9" * 30,
    "9" * 5000,
    "$((2**64))",
    "$((1/0))",
    "$((1 << 70))",
    "${N:-8}",
    "${N:-${M:-$((2*4))}}",
    "$(nvidia-smi -L | wc -l)",
    "`id`",
    "gpu",
    "auto",
    "1:4",
    "'4'",
    '"$N"',
    "${#A[@]}",
    "$((N*2))",
    "$(cat ../outside/secret.yaml)",
    "é",
    "''",
    "${X/a/b}",
]
LAUNCHERS = [
    "torchrun --nproc_per_node {v} --nnodes {v} train.py args.yaml",
    "torchrun --standalone --nproc-per-node={v} train.py --per_device_train_batch_size {v}",
    "accelerate launch --num_processes {v} --num_machines {v} train.py args.yaml",
    "accelerate launch --config_file {v} train.py",
    "deepspeed --num_gpus {v} train.py --deepspeed ds.json args.yaml",
    "python -m torch.distributed.run --nproc_per_node={v} train.py args.yaml",
    "CUDA_VISIBLE_DEVICES={v} python train.py args.yaml",
    "srun python train.py --gradient_accumulation_steps {v}",
    "llamafactory-cli train args.yaml",
    "python train.py --learning_rate {v} --output_dir {v}",
]
SHELL_CONSTRUCTS = [
    "N={v}",
    "export CUDA_VISIBLE_DEVICES={v}",
    "export WORLD_SIZE={v}",
    "A=(1 2 3 {v})",
    "for i in $(seq 1 {v}); do echo $i; done",
    'if [ "$N" -gt {v} ]; then N=1; fi',
    "f() { echo {v}; }; f",
    "case $N in 1) M=2;; *) M={v};; esac",
    "cat <<EOF > cfg.yaml\nper_device_train_batch_size: {v}\nEOF",
    "source ../outside/secret.yaml",
    ". ./launch.sh",
    "cd .. && cd -",
    'eval "N={v}"',
    "#SBATCH --nodes={v}",
    "#SBATCH --gres=gpu:h100:{v}",
    "#SBATCH --ntasks-per-node={v}",
    "#SBATCH --cpus-per-task={v}",
    "while true; do break; done",
    "N=$((N+1)); N=$((N*N*N*N*N*N))",
    "X=${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-{v}}}}}}}}}",
    'echo "unterminated',
    "echo $(echo $(echo $(echo $(echo $(echo {v})))))",
    "trap 'rm -rf /' EXIT",
    "exec > log.txt 2>&1",
]


def launch_script(rng: random.Random) -> str:
    lines = ["#!/bin/bash"]
    for _ in range(rng.randint(0, 5)):
        lines.append(rng.choice(SHELL_CONSTRUCTS).replace("{v}", rng.choice(SHELL_VALUES)))
    launch = rng.choice(LAUNCHERS).replace("{v}", rng.choice(SHELL_VALUES))
    if rng.random() < 0.2:
        launch = launch.replace(" --", " \\\n  --")
    if rng.random() < 0.05:
        launch += " --x 1" * rng.choice([1000, 20000])
    lines.append(launch)
    if rng.random() < 0.1:
        lines = lines * rng.choice([2, 50, 2000])
    return "\n".join(lines) + "\n"


PY_VALUES = [
    "1",
    "0",
    "-1",
    "10**100",
    "9" * 5000,
    "'auto'",
    "None",
    "True",
    "[1, 2]",
    "'a' * 10**9",
    "float('inf')",
    "os.environ['N']",
    "int(os.environ.get('N', 4))",
    "lambda: 1",
    "{'a': 1}",
    "field(default_factory=lambda: ['q_proj', 'v_proj'])",
    "sys.maxsize",
    "2**64",
    "'\\x1b[31m'",
]
PY_SNIPPETS = [
    "@dataclass\nclass ScriptArguments:\n    lora_r: int = field(default={v})\n    model_name: str = {v}\n",
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument('--per_device_train_batch_size', type=int, default={v})\n"
    "parser.add_argument('--lora_rank', default={v}, choices=[{v}])\nargs = parser.parse_args()\n",
    "parser = HfArgumentParser((ScriptArguments, TrainingArguments))\nscript_args, training_args = "
    "parser.parse_args_into_dataclasses()\n",
    "pre = argparse.ArgumentParser()\nknown, rest = pre.parse_known_args()\n",
    "training_args = TrainingArguments(output_dir='out', per_device_train_batch_size={v}, "
    "gradient_accumulation_steps={v}, dataloader_num_workers={v})\n",
    "config = LoraConfig(r={v}, lora_alpha={v}, target_modules={v}, lora_dropout={v},"
    " modules_to_save=[{v}])\n"
    "model = get_peft_model(model, config)\n",
    "model = AutoModelForCausalLM.from_pretrained({v}, device_map='auto', torch_dtype=torch.bfloat16)\n",
    "model = AutoModelForCausalLM.from_pretrained('../outside', trust_remote_code=True)\n",
    "os.makedirs('out', exist_ok=True)\nopen('x.txt', 'w').write('x')\n",
    "if __name__ == '__main__':\n    main()\n",
    "if __name__ == {v}:\n    pass\n",
    "import torch.distributed as dist\ndist.init_process_group('nccl')\nmodel.to('cuda:99')\n",
    "from . import x\nfrom .. import y\nfrom ...... import z\nimport train\n",
    "match x:\n    case [1, *rest]:\n        pass\n    case {{'a': b}}:\n        pass\n",
    "async def f():\n    async with x as y:\n        await z\n",
    "x = " + "(" * 150 + "1" + ")" * 150 + "\n",
    "x = " + " + ".join(["1"] * 5000) + "\n",
    "x = [" + ", ".join(["[1]"] * 20000) + "]\n",
    "x = 'a' 'b' 'c' " * 200 + "\n",
    "def f(*, a={v}, **k):\n    return (yield from g())\n",
    "class A(B, metaclass=M):\n    x: int = {v}\n    y = z = w = {v}\n",
    "exec(open('../outside/secret.yaml').read())\neval('1')\n",
    "trainer = Trainer(model=model, args=training_args)\ntrainer.train()\n",
    "sys.argv += ['--per_device_train_batch_size', '{v}']\n",
    "global_batch = {v} // 0\n",
    "print(f'{{x!r:>{{w}}}}')\n",
]
PY_HEAD = (
    "import os, sys, argparse, torch\nfrom dataclasses import dataclass, field\n"
    "from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments\n"
    "from peft import LoraConfig, get_peft_model\n"
)


def python_script(rng: random.Random) -> str:
    parts = [PY_HEAD]
    for _ in range(rng.randint(1, 5)):
        snippet = rng.choice(PY_SNIPPETS)
        parts.append(snippet.replace("{v}", "\x00V\x00").replace("{{", "{").replace("}}", "}"))
    text = "\n".join(parts)
    while "\x00V\x00" in text:
        text = text.replace("\x00V\x00", rng.choice(PY_VALUES), 1)
    if rng.random() < 0.1:
        text = (
            rng.choice(["# -*- coding: latin-1 -*-\n", "# coding: utf-16\n", "# coding: nope\n", "\ufeff"])
            + text
        )
    if rng.random() < 0.05:
        text = text.replace("    ", "\t", 1)
    return text


def gen_scripts(rng: random.Random) -> Example:
    files = base_run(rng)
    files["launch.sh"] = encode(rng, launch_script(rng), 0.1)
    files["train.py"] = encode(rng, python_script(rng), 0.1)
    files["ds.json"] = b'{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}}\n'
    if rng.random() < 0.2:
        files["other.sh"] = encode(rng, launch_script(rng), 0.1)
    command = rng.choice(
        [
            ["check", "."],
            ["check", "--format", "json", "."],
            ["plan", "launch.sh"],
            ["estimate", "launch.sh"],
            ["check", "train.py"],
            ["check", "--diff", "."],
        ]
    )
    return Example("scripts", files, command, files["launch.sh"][-100:].decode("utf-8", "replace"))


GENERATORS: dict[str, Callable[[random.Random], Example]] = {
    "settings": gen_settings,
    "hardware": gen_hardware,
    "rules": gen_rules,
    "baseline": gen_baseline,
    "verify": gen_verify,
    "hostfile": gen_hostfile,
    "pins": gen_pins,
    "scripts": gen_scripts,
}
KINDS = tuple(GENERATORS)


def links(rng: random.Random, example: Example) -> None:
    """Sometimes plant a link out of the project at a name a reader may open (item 7)."""
    if rng.random() < 0.08:
        name = rng.choice(
            ["link-out.yaml", "hw-link.yaml", "model/config.json", ".gpu-advise.toml", "hostfile"]
        )
        if name == ".gpu-advise.toml" and name in example.files:
            return
        example.files.pop(name, None)
        example.links[name] = (
            rng.choice(["../outside/secret.yaml", "../../outside/secret.json", "../outside/secret.toml"])
            if "/" not in name
            else "../../outside/secret.json"
        )


def make_example(seed: int, index: int, kinds: tuple[str, ...] = KINDS) -> Example:
    """Example ``index`` of the campaign ``seed``: the same pair always gives the same project."""
    rng = random.Random(f"fuzz-inputs:{seed}:{index}")
    kind = kinds[index % len(kinds)]
    example = GENERATORS[kind](rng)
    links(rng, example)
    return example
