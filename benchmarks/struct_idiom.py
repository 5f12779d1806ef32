"""One struct idiom (issue 19 item 5): today's records + datacodec + pydantic mirror against msgspec.Struct.

Prints, on this machine, the figures the choice rests on:
  1. start-up: what `import msgspec` adds to the check path (modules, paired wall-time medians), and
     `python -X importtime` of `advisor.pipeline.check` as it is;
  2. class definition: every record class the check path defines, rebuilt from its own fields as a
     record and as a msgspec.Struct (same names, defaults, frozen/kw_only), total per idiom;
  3. construction: instances of a 6-field frozen class, first 16 and steady state;
  4. the cache: the real prebuilt rule catalog (RuleSpec) and the GPU catalog entries decoded from
     their JSON text, with json + datacodec.decode against msgspec.json.decode into Struct mirrors;
  5. error messages for bad settings / hardware values: today's message (file:line) against
     msgspec.convert's ValidationError path;
  6. behaviour: what the package relies on (frozen, slots, hash, defaults, replace, compare=False,
     positional construction, init=False, copy/pickle) and whether each idiom has it;
  7. lines of code of each idiom's machinery;
  8. with --check-speed: benchmarks/check_speed.py --startup (installed wheel, cold and warm cache).

    python benchmarks/struct_idiom.py [--runs 15] [--check-speed]

msgspec must be installed (`pip install msgspec`); the script is read-only on the tree.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import typing
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


FIGURES: dict[str, float] = {}


def summary() -> None:
    saved = FIGURES["classes"] + FIGURES["construction"] + FIGURES["decode"]
    print("== summary: a cached `check` with msgspec.Struct instead of records + datacodec")
    print(f"  pays: import msgspec {FIGURES['import'] * 1000:.1f} ms")
    print(
        f"  saves: class definition {FIGURES['classes'] * 1000:.1f} ms + 1,301 constructions"
        f" {FIGURES['construction'] * 1000:.1f} ms + rule catalog decoding {FIGURES['decode'] * 1000:.1f} ms"
        f" = {saved * 1000:.1f} ms"
    )
    print(
        f"  net: {(FIGURES['import'] - saved) * 1000:+.1f} ms on every warm start (positive: msgspec slower)"
    )


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.1f} ms"


def _run_py(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout


# 1. start-up --------------------------------------------------------------------------------------


def startup(runs: int) -> None:
    print("== 1. start-up: the check path's imports")
    mods = "import sys, json\n{}\nprint(json.dumps(sorted(sys.modules)))"
    base = set(json.loads(_run_py(mods.format("import advisor.pipeline.check"))))
    with_ms = set(json.loads(_run_py(mods.format("import advisor.pipeline.check, msgspec, msgspec.json"))))
    added = sorted(m for m in with_ms - base if not m.startswith("msgspec"))
    print(f"  modules advisor.pipeline.check imports: {len(base)}")
    print(f"  modules msgspec adds beyond them: {len(with_ms - base)} (stdlib/3rd party: {', '.join(added)})")
    a_cmd = [sys.executable, "-c", "import advisor.pipeline.check"]
    b_cmd = [sys.executable, "-c", "import advisor.pipeline.check, msgspec, msgspec.json"]
    c_cmd = [sys.executable, "-c", "import advisor.pipeline.check; import advisor.sources.schema.settings"]
    times: dict[str, list[float]] = {"a": [], "b": [], "c": []}
    for _ in range(runs):  # alternated: load from other processes falls on all alike
        for key, cmd in (("a", a_cmd), ("b", b_cmd), ("c", c_cmd)):
            start = time.perf_counter()
            subprocess.run(cmd, cwd=REPO, capture_output=True, check=True)
            times[key].append(time.perf_counter() - start)
    print(f"  python -c 'import advisor.pipeline.check':                    {_median_ms(times['a'])}")
    print(f"  ... plus msgspec, msgspec.json:                      {_median_ms(times['b'])}")
    print(f"  ... plus pydantic (advisor.sources.schema.settings, a miss): {_median_ms(times['c'])}")
    delta = [b - a for a, b in zip(times["a"], times["b"], strict=True)]
    print(f"  msgspec's paired cost: median {_median_ms(delta)} over {runs} runs")
    code = (
        "import time, advisor.pipeline.check\nt = time.perf_counter()\n"
        "import msgspec, msgspec.json, msgspec.structs\n"
        "print(time.perf_counter() - t)"
    )
    inproc = [float(_run_py(code)) for _ in range(runs)]
    print(f"  `import msgspec` after advisor.pipeline.check, in process: median {_median_ms(inproc)}")
    FIGURES["import"] = statistics.median(inproc)
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import advisor.pipeline.check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    total = {}
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            total[parts[2].strip()] = int(parts[1])
    print(
        "  -X importtime advisor.pipeline.check (cumulative): "
        f"{total.get('advisor.pipeline.check', 0) / 1000:.1f} ms;"
        f" advisor.core.records: {total.get('advisor.core.records', 0) / 1000:.1f} ms"
    )


# 2. class definition ------------------------------------------------------------------------------


def _record_classes() -> list[type]:
    import advisor.pipeline.check  # noqa: F401  (the check path's modules)
    from advisor.core.records.fields import FIELDS

    seen: dict[int, type] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("advisor") or module is None:
            continue
        for value in vars(module).values():
            if isinstance(value, type) and FIELDS in value.__dict__ and value.__module__ == name:
                seen[id(value)] = value
    return list(seen.values())


def _options(cls: type) -> dict[str, bool]:
    fields = cls.__dict__["__record_fields__"].values()
    return {
        "frozen": bool(cls.__dict__.get("__record_frozen__")),
        "slots": "__slots__" in cls.__dict__,
        "kw_only": bool(fields) and all(f.kw_only is True for f in fields),
    }


def _define_all(specs: list[Any]) -> tuple[float, float, list[str]]:
    """Each class defined once as a record and once as a msgspec.Struct: (record s, msgspec s, refusals)."""
    import msgspec

    from advisor.core import records
    from advisor.core.records.fields import MISSING

    t_rec = t_ms = 0.0
    refused: list[str] = []
    for cls, own, opts in specs:
        ns: dict[str, Any] = {"__annotations__": {f.name: "Any" for f in own}, "__module__": __name__}
        for f in own:
            if f.default is not MISSING:
                ns[f.name] = f.default
            elif f.default_factory is not MISSING:
                ns[f.name] = records.field(default_factory=f.default_factory, compare=f.compare)
        plain = type(cls.__name__, (), ns)
        start = time.perf_counter()
        records.record(frozen=opts["frozen"], slots=opts["slots"], kw_only=opts["kw_only"])(plain)
        t_rec += time.perf_counter() - start
        ms_fields = []
        for f in own:
            if f.default is not MISSING:
                ms_fields.append((f.name, Any, f.default))
            elif f.default_factory is not MISSING:
                ms_fields.append((f.name, Any, msgspec.field(default_factory=f.default_factory)))
            else:
                ms_fields.append((f.name, Any))
        start = time.perf_counter()
        try:
            msgspec.defstruct(cls.__name__, ms_fields, frozen=opts["frozen"], kw_only=opts["kw_only"])
        except TypeError as exc:
            refused.append(f"{cls.__qualname__}: {exc}")
        t_ms += time.perf_counter() - start
    return t_rec, t_ms, refused


def class_definition() -> None:

    from advisor.core import records

    print("== 2. class definition: the check path's record classes, rebuilt from their fields")
    classes = [
        c
        for c in _record_classes()
        if not any(b is not object and hasattr(b, "__record_fields__") for b in c.__bases__)
    ]
    no_compare = sum(1 for c in classes for f in records.fields(c) if not f.compare)
    no_init = sum(1 for c in classes for f in records.fields(c) if not f.init)
    post_init = sum(1 for c in classes if hasattr(c, "__post_init__"))
    specs = []
    for cls in classes:
        own = [f for f in records.fields(cls)]
        specs.append((cls, own, _options(cls)))
    rounds = [_define_all(specs) for _ in range(7)]
    t_rec = statistics.median(r[0] for r in rounds)
    t_ms = statistics.median(r[1] for r in rounds)
    refused = rounds[0][2]
    print(
        f"  record classes on the check path: {len(classes)} (plus subclasses);"
        f" fields with compare=False: {no_compare}, init=False: {no_init}, __post_init__: {post_init}"
    )
    print(f"  records.record total:   {t_rec * 1000:.2f} ms (rebuilt here, median of 7 rounds)")
    print(f"  msgspec.defstruct total: {t_ms * 1000:.2f} ms")
    FIGURES["classes"] = max(t_rec - t_ms, 0.0)
    for line in refused[:5]:
        print(f"  msgspec refused: {line}")
    code = (
        "import time\nimport advisor.core.records.build as b\norig = b._build\ntot = [0.0, 0]\n"
        "def timed(*a, **k):\n    t = time.perf_counter(); r = orig(*a, **k)\n"
        "    tot[0] += time.perf_counter() - t; tot[1] += 1; return r\n"
        "b._build = timed\nimport advisor.pipeline.check\nprint(tot[1], tot[0])\n"
    )
    samples = [_run_py(code).split() for _ in range(7)]
    print(
        f"  inside `import advisor.pipeline.check` (7 processes): {samples[0][0]} classes decorated,"
        f" median {_median_ms([float(s[1]) for s in samples])} in records.record"
    )


# 3. construction ----------------------------------------------------------------------------------


def construction() -> None:
    import msgspec

    from advisor.core.records import record

    print("== 3. construction: a frozen, slotted, kw-only class of six fields")

    @record(frozen=True, slots=True, kw_only=True)
    class R:
        a: int
        b: int
        c: str = ""
        d: float = 0.0
        e: int | None = None
        f: tuple[int, ...] = ()

    class S(msgspec.Struct, frozen=True, kw_only=True):
        a: int
        b: int
        c: str = ""
        d: float = 0.0
        e: int | None = None
        f: tuple[int, ...] = ()

    # one check of the bundled example builds 1,301 instances of 80 classes (advisor/core/records/methods.py)
    per: dict[str, tuple[float, float]] = {}
    for label, cls in (("record", R), ("msgspec", S)):
        start = time.perf_counter()
        for i in range(16):
            cls(a=i, b=i, c="x")
        first = (time.perf_counter() - start) / 16
        start = time.perf_counter()
        for i in range(20000):
            cls(a=i, b=i, c="x")
        steady = (time.perf_counter() - start) / 20000
        h = time.perf_counter()
        for i in range(20000):
            hash(cls(a=i, b=1))
        hashed = (time.perf_counter() - h) / 20000
        per[label] = (first, steady)
        print(
            f"  {label:8} first 16: {first * 1e6:.2f} us each; then {steady * 1e6:.2f} us; build+hash"
            f" {hashed * 1e6:.2f} us"
        )

    # ~80 classes x 16 first instances at the binder's cost, the rest at the compiled __init__'s
    rec, ms = per["record"], per["msgspec"]
    FIGURES["construction"] = min(1301, 80 * 16) * (rec[0] - ms[0]) + max(0, 1301 - 80 * 16) * (
        rec[1] - ms[1]
    )


# 4. the cache -------------------------------------------------------------------------------------


def _mirror(hint: Any, made: dict[type, Any]) -> Any:
    """The type `hint` with every record class in it replaced by a msgspec.Struct of the same fields."""
    import msgspec

    from advisor.core import records
    from advisor.core.records import field_types
    from advisor.core.records.fields import MISSING

    if records.is_record(hint):
        if hint not in made:
            made[hint] = None
            types = field_types(hint)
            fields = []
            for f in records.fields(hint):
                t = _mirror(types[f.name], made)
                if f.default is not MISSING:
                    fields.append((f.name, t, f.default))
                elif f.default_factory is not MISSING:
                    fields.append((f.name, t, msgspec.field(default_factory=f.default_factory)))
                else:
                    fields.append((f.name, t))
            made[hint] = msgspec.defstruct(
                hint.__name__, fields, frozen=True, kw_only=True, forbid_unknown_fields=True
            )
        return made[hint] if made[hint] is not None else Any
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is None or not args:
        return hint
    mapped = tuple(_mirror(a, made) for a in args)
    if origin in (typing.Union, __import__("types").UnionType):
        return typing.Union[mapped]  # noqa: UP007
    if origin is typing.Literal:
        return hint
    return origin[mapped if len(mapped) > 1 else mapped[0]]


def cache_decoding(runs: int) -> None:
    import msgspec

    from advisor.core.datacodec import decode
    from advisor.engine.rule_engine import builtin_rules_dir, prebuilt_rules
    from advisor.engine.rulespec import RuleSpec
    from advisor.sources.gpu_catalog import prebuilt_gpus
    from advisor.sources.gpu_types import GpuSpec

    print("== 4. the cache: decode the real prebuilt catalogs from their JSON text")
    _, rules = prebuilt_rules(builtin_rules_dir())
    _, gpus = prebuilt_gpus()
    cases = [
        ("rule catalog", RuleSpec, json.dumps([r["spec"] for r in rules])),
        ("GPU catalog", GpuSpec, json.dumps(list(gpus[0].values()))),
    ]
    for label, cls, text in cases:
        made: dict[type, Any] = {}
        struct = _mirror(cls, made)
        decoder = msgspec.json.Decoder(list[struct])
        a, b = [], []
        for _ in range(runs):
            start = time.perf_counter()
            [decode(cls, d) for d in json.loads(text)]
            a.append(time.perf_counter() - start)
            start = time.perf_counter()
            decoder.decode(text)
            b.append(time.perf_counter() - start)
        n = len(json.loads(text))
        if label == "rule catalog":  # the GPU catalog is decoded lazily, one or two entries a run
            FIGURES["decode"] = statistics.median(a) - statistics.median(b)
        print(
            f"  {label} ({n} entries, {len(text) // 1024} KiB, {len(made)} classes):"
            f" json+datacodec {_median_ms(a)}, msgspec.json {_median_ms(b)}"
        )


# 5. error messages --------------------------------------------------------------------------------

_BAD_SETTINGS = [
    ("a wrong type", 'hardware = "4xH100"\n[[runs]]\npath = "train.sh"\neffective-batch = "big"\n'),
    ("below a bound", "[thresholds]\nworkers-per-process = -1\n"),
    ("a bad value in a table", 'ignore = []\n[severity]\nGA101 = "loud"\n'),
    ("a bad item in a nested table", '[key-ignores."a.yaml"]\nGA1 = [3]\n'),
    ("an unknown key", 'selct = ["GA2"]\n'),
]


def _msgspec_settings() -> Any:
    from advisor.core import settings_types

    return _mirror(settings_types.Settings, {})


def error_messages() -> None:
    import tomllib

    import msgspec

    from advisor.sources.settings import SettingsError, parse_settings

    print("== 5. error messages: bad settings (.gpu-advise.toml)")
    struct = _msgspec_settings()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".gpu-advise.toml"
        for label, text in _BAD_SETTINGS:
            try:
                parse_settings(text, path)
                today = "(accepted)"
            except SettingsError as exc:
                today = str(exc).replace(str(path), ".gpu-advise.toml")
            data = {k.replace("-", "_"): v for k, v in tomllib.loads(text).items()}
            if "runs" in data:
                data["runs"] = [{k.replace("-", "_"): v for k, v in r.items()} for r in data["runs"]]
            if "thresholds" in data:
                data["thresholds"] = {k.replace("-", "_"): v for k, v in data["thresholds"].items()}
            try:
                msgspec.convert(data, struct)
                other = "(accepted: the mirror has no bounds; Meta(ge=0) says `Expected `int` >= 0 - at ...`)"
            except msgspec.ValidationError as exc:
                other = str(exc)
            print(f"  {label}:")
            print(f"    today:   {today}")
            print(f"    msgspec: {other}")
    print(
        "  msgspec stops at the first error (pydantic lists them all: the hardware reader reports each);"
        " a dict value's path is `[...]`, its key is not named, so file:line can only be the table's"
    )


# 6. behaviour -------------------------------------------------------------------------------------


def behaviour() -> None:
    import copy
    import pickle

    import msgspec

    from advisor.core.records import field, record, replace

    print("== 6. behaviour the package relies on")

    @record(frozen=True, slots=True)
    class R:
        line: int
        end: int | None = field(default=None, compare=False)
        tags: list[str] = field(default_factory=list)

    class S(msgspec.Struct, frozen=True):
        line: int
        end: int | None = None
        tags: list[str] = msgspec.field(default_factory=list)

    rows = []

    def probe(label: str, fn_r: Any, fn_s: Any) -> None:
        out = []
        for fn in (fn_r, fn_s):
            try:
                out.append("yes" if fn() else "no")
            except Exception as exc:
                out.append(f"no ({type(exc).__name__})")
        rows.append((label, *out))

    def frozen(cls: Any) -> bool:
        try:
            cls(1).line = 2
        except AttributeError:
            return True
        return False

    probe("frozen (AttributeError on assignment)", lambda: frozen(R), lambda: frozen(S))
    probe("slots (no __dict__)", lambda: not hasattr(R(1), "__dict__"), lambda: not hasattr(S(1), "__dict__"))
    probe("positional construction", lambda: R(1, 2).end == 2, lambda: S(1, 2).end == 2)
    probe("default_factory is fresh", lambda: R(1).tags is not R(1).tags, lambda: S(1).tags is not S(1).tags)
    probe("hash of frozen", lambda: hash(R(1, 2, ())) is not None, lambda: hash(S(1, 2, ())) is not None)
    probe("field with compare=False", lambda: R(1, 2) == R(1, 3), lambda: S(1, 2) == S(1, 3))
    probe(
        "replace()",
        lambda: replace(R(1), line=5).line == 5,
        lambda: msgspec.structs.replace(S(1), line=5).line == 5,
    )
    probe("copy.deepcopy", lambda: copy.deepcopy(R(1)) == R(1), lambda: copy.deepcopy(S(1)) == S(1))
    probe(
        "pickle (the cache is JSON: unused)",
        lambda: pickle.loads(pickle.dumps(R(1))) == R(1),
        lambda: pickle.loads(pickle.dumps(S(1))) == S(1),
    )
    probe(
        "a field named `self`/`type` etc.",
        lambda: record(type("A", (), {"__annotations__": {"self": "int"}}))(self=1).self == 1,
        lambda: msgspec.defstruct("A", [("self", int)])(self=1).self == 1,
    )
    probe("validates types on construction", lambda: R("x") is None, lambda: S("x") is None)
    probe("field(init=False)", lambda: bool(field(init=False)), lambda: "init" in msgspec.field.__doc__)
    probe(
        "mixing frozen and mutable in one hierarchy refused",
        lambda: _mix_refused(record),
        lambda: _mix_refused_ms(),
    )
    width = max(len(r[0]) for r in rows)
    print(f"  {'':{width}}  record      msgspec.Struct")
    for label, a, b in rows:
        print(f"  {label:{width}}  {a:11} {b}")


def _mix_refused(record: Any) -> bool:
    base = record(frozen=True)(type("B", (), {"__annotations__": {"a": "int"}}))
    try:
        record(type("C", (base,), {"__annotations__": {"b": "int"}}))
    except TypeError:
        return True
    return False


def _mix_refused_ms() -> bool:
    import msgspec

    base = msgspec.defstruct("B", [("a", int)], frozen=True)
    try:
        msgspec.defstruct("C", [("b", int)], bases=(base,), frozen=False)
    except (TypeError, ValueError):
        return True
    return False


# 7. lines of code ---------------------------------------------------------------------------------


def _lines(paths: list[Path]) -> int:
    return sum(len(p.read_text().splitlines()) for p in paths if p.exists())


def lines_of_code() -> None:
    print("== 7. lines of code")
    adv = REPO / "advisor"
    machinery = [*sorted((adv / "records").glob("*.py")), adv / "datacodec.py"]
    schema = sorted((adv / "schema").glob("*.py"))
    mirror = [adv / "settings_types.py"]
    tests = [REPO / "tests/core/test_records.py", REPO / "tests/core/test_schema_views.py"]
    print(f"  records/ + datacodec.py:           {_lines(machinery)}")
    print(f"  schema/ (pydantic models):         {_lines(schema)}")
    print(
        f"  settings_types.py (a mirror):      {_lines(mirror)}  (+ the mirrored classes in engine, hardware,"
        " gpu_types)"
    )
    print(f"  test_records + test_schema_views:  {_lines(tests)}")
    src = [p for p in adv.rglob("*.py") if "records" not in p.parts]
    uses = sum(p.read_text().count("@record") for p in src)
    nt = sum(p.read_text().count("(NamedTuple)") for p in src)
    print(f"  @record classes: {uses}; NamedTuple classes: {nt}")
    print(
        "  msgspec instead: records/ and datacodec go (0 lines), the schema's Field(...) constraints become"
        " Annotated[..., Meta(...)] on the one declaration; the parity test goes"
    )


def check_speed() -> None:
    print("== 8. benchmarks/check_speed.py --startup")
    subprocess.run(
        [sys.executable, str(REPO / "benchmarks/check_speed.py"), "--startup"], cwd=REPO, check=False
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=textwrap.dedent(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--check-speed", action="store_true", help="also run check_speed.py --startup")
    args = parser.parse_args()
    try:
        import msgspec  # noqa: F401
    except ImportError:
        sys.exit("struct_idiom.py compares against msgspec: pip install msgspec")
    startup(args.runs)
    class_definition()
    construction()
    cache_decoding(args.runs)
    error_messages()
    behaviour()
    lines_of_code()
    summary()
    if args.check_speed:
        check_speed()


if __name__ == "__main__":
    main()
