"""Which release of each library a file is judged against, and what that release accepts.

The release comes from the project's ``target-versions`` setting, else from the pins nearest the training
script that reads the file (or receives its flags), then nearest the file (advisor.sources.pins, walking
up to the project root: the folder holding ``.git``; the check's context reads them, advisor.plan.context),
else it is the
current release our key data was generated from. ``advisor/data/keys/versions.json`` (written by
``tools/gen_known_keys.py --versions`` from every minor's sources) says, per class, in which releases
each key exists and in which it is deprecated; it is read lazily, once.

A pin whose release cannot be known (a git commit or branch, a local path: advisor.sources.pins
``Pin.via``) gives a Target at ``ANY_RELEASE``: a key any shipped release has may be the tree's, so it is
neither removed nor deprecated for it, and only a key no release has is unknown (at most a warning that
names the commit: advisor.facts.keys).
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

from advisor import PACKAGE_DIR
from advisor.core.records import record
from advisor.plan.context import CheckContext
from advisor.sources.pins import PACKAGES, Pin

_DATA = PACKAGE_DIR / "data" / "keys" / "versions.json"

# The index of a Target whose release cannot be known: key_status and keys_at read it as "some release"
ANY_RELEASE = -1


@record(frozen=True, slots=True)
class Target:
    """The release of ``package`` a verdict is for, and why that one."""

    package: str
    # a release we have key data for (the newest patch of its minor); for an unknown one (index
    # ANY_RELEASE) the current release, which consumers that only read a release number keep using
    release: str
    index: int  # its position in versions.json's releases of the package, or ANY_RELEASE
    why: str  # "pinned ==4.57.1 in requirements.txt:3", "target-versions", "current release"
    pinned: bool  # a release is pinned (not for an unknown one)

    @property
    def known(self) -> bool:
        return self.index != ANY_RELEASE

    @property
    def label(self) -> str:
        """``transformers 4.57 (pinned ==4.57.1 in requirements.txt:2)``: the data is per minor release;
        ``trl, release unknown (pinned to git commit 69ad852 in setup.py:70)``."""
        if not self.known:
            return f"{self.package}, release unknown ({self.why})"
        return f"{self.package} {minor(self.release)} ({self.why})"


def newest_target(package: str, pin: Pin) -> Target | None:
    """A default branch (``git+https://github.com/huggingface/transformers.git``, no revision): pip installs
    its newest commit, so the newest release we ship judges (the tree is at least that new today)."""
    shipped = releases(package)
    if not shipped:
        return None
    why = f"installed from the {pin.via} in {pin.where}, its newest commit: judged as the current release"
    return Target(package, shipped[-1], len(shipped) - 1, why, True)


def unknown_target(package: str, pin: Pin, why: str | None = None) -> Target | None:
    """The Target of a pin whose release cannot be known: "unknown, because pinned to git commit 69ad852"."""
    shipped = releases(package)
    if not shipped:
        return None
    return Target(package, shipped[-1], ANY_RELEASE, why or f"pinned to {pin.via} in {pin.where}", False)


@cache
def _data() -> dict[str, Any]:
    return json.loads(_DATA.read_text(encoding="utf-8"))["packages"]


def releases(package: str) -> list[str]:
    return list(_data().get(package, {}).get("versions", ()))


def _vtuple(v: str) -> tuple[int, ...]:
    out = []
    for part in v.split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group(0)))
    return tuple(out)


def minor(release: str) -> str:
    return ".".join(release.split(".")[:2])


def current(package: str) -> Target | None:
    shipped = releases(package)
    if not shipped:
        return None
    return Target(package, shipped[-1], len(shipped) - 1, "current release, nothing pinned", False)


@cache
def resolve_spec(package: str, spec: str, why: str) -> Target | None:
    """The newest shipped release whose minor a version allowed by ``spec`` falls in; below the oldest
    shipped minor, the oldest; None when the spec cannot be read or allows nothing we ship."""
    shipped = releases(package)
    if not shipped:
        return None
    clauses = _parse_spec(spec)
    if clauses is None:
        return None
    written = re.findall(r"\d+(?:\.\d+)+", spec)
    candidates = sorted({*shipped, *written}, key=_vtuple)
    allowed = [v for v in candidates if all(_satisfies(_vtuple(v), op, want) for op, want in clauses)]
    if not allowed:
        return None
    best = _vtuple(allowed[-1])[:2]
    by_minor = {_vtuple(v)[:2]: i for i, v in enumerate(shipped)}
    if best in by_minor:
        i = by_minor[best]
    elif best < _vtuple(shipped[0])[:2]:
        i, why = 0, f"{why}; older than the oldest release we ship data for"
    else:
        older = [i for m, i in by_minor.items() if m <= best]
        if not older:
            return None
        i = max(older)
    return Target(package, shipped[i], i, why, True)


# a release component of more than 18 digits is no release of these libraries (and int() of 4,301 digits
# raises): the clause does not match and the pin is not used
# (a post release, 0.41.2.post2, is its release's: the key data is per minor)
_CLAUSE_RE = re.compile(
    r"\s*(===|==|!=|~=|>=|<=|>|<)\s*v?(\d{1,18}(?:\.\d{1,18})*)(?:\.?post\d{1,9})?(\.\*)?\s*"
)


def _parse_spec(spec: str) -> list[tuple[str, tuple[int, ...] | str]] | None:
    """PEP 440 specifier clauses over plain release numbers (what pins of these libraries use); None for
    anything else (a URL, a local version, a pre-release pin): then the pin is not used. packaging is not
    imported for this: it costs ~18 ms of start-up."""
    out: list[tuple[str, tuple[int, ...] | str]] = []
    for part in spec.split(","):
        if not part.strip():
            continue
        m = _CLAUSE_RE.fullmatch(part)
        if m is None:
            return None
        op, number, star = m.group(1), m.group(2), m.group(3)
        if star:
            if op not in ("==", "!="):
                return None
            out.append((op + "*", number))
        else:
            out.append((op, tuple(int(x) for x in number.split("."))))
    return out or None


def _pad(a: tuple[int, ...], n: int) -> tuple[int, ...]:
    return a + (0,) * (n - len(a))


def _satisfies(version: tuple[int, ...], op: str, want: tuple[int, ...] | str) -> bool:
    if isinstance(want, str):  # ==4.57.* / !=4.57.*
        prefix = tuple(int(x) for x in want.split("."))
        same = version[: len(prefix)] == prefix
        return same if op == "==*" else not same
    n = max(len(version), len(want))
    a, b = _pad(version, n), _pad(want, n)
    if op in ("==", "==="):
        return a == b
    if op == "!=":
        return a != b
    if op == ">=":
        return a >= b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    if op == "<":
        return a < b
    # ~=4.45.0 means >=4.45.0, ==4.45.*; ~=4.45 means >=4.45, ==4.*
    return a >= b and len(want) > 1 and version[: len(want) - 1] == want[:-1]


def targets_for(
    path: Path, settings: Any, context: CheckContext, script: Path | None = None
) -> dict[str, Target]:
    """{package: Target} for a file: ``target-versions`` first, then pins, else the current release.
    The pins are the check's (`context`, advisor.plan.context: read once per folder and check), found from
    the folder of ``script`` upwards when a training script reads the file or receives its flags: a
    sub-project (``sft/requirements.txt`` beside ``sft/train.py``) runs in the environment it pins, wherever
    the launch script or recipe that feeds it lies (``scripts/run.sh``, ``configs/sft.yaml``); the file's own
    folders then give the packages the script's do not pin."""
    wanted = dict(getattr(settings, "target_versions", None) or {})
    folder = Path(os.path.abspath(path)).parent
    near = Path(os.path.abspath(script)).parent if script is not None else None
    items = tuple(sorted(wanted.items()))

    def build() -> tuple[tuple[str, Target], ...]:
        pins = dict(context.pins_near(near)) if near is not None else {}
        for package, pin in context.pins_near(folder).items():
            pins.setdefault(package, pin)
        return _targets(pins, items)

    return dict(context.derived("targets", (folder, near, items), build))


def _targets(
    pins: dict[str, Pin], wanted_items: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, Target], ...]:
    wanted = dict(wanted_items)
    out: dict[str, Target] = {}
    for package in PACKAGES:
        target = None
        if package in wanted:
            spec = str(wanted[package])
            spec = spec if spec[:1] in "<>=!~" else f"=={spec}"
            target = resolve_spec(package, spec, f"target-versions {spec}")
        elif package in pins:
            pin = pins[package]
            if not pin.spec and pin.newest:
                target = newest_target(package, pin)
            elif not pin.spec:
                target = unknown_target(package, pin)
            elif pin.spec.strip() == "*":  # poetry's any version: pip installs the newest
                target = resolve_spec(package, ">=0", f"pinned * in {pin.where}: the newest release installs")
            elif _parse_spec(pin.spec) is None:  # a pre-release (==0.16.0.dev0), a local version: no release
                target = unknown_target(
                    package, pin, f"pinned {pin.spec} in {pin.where}, no release we can place"
                )
            else:
                shown = f"{pin.via} ({pin.spec})" if pin.via else pin.spec
                target = resolve_spec(package, pin.spec, f"pinned {shown} in {pin.where}")
        target = target or current(package)
        if target is not None:
            out[package] = target
    return tuple(out.items())


def pinned(package: str, path: Path, context: CheckContext, script: Path | None = None) -> Pin | None:
    """The pin of any package the pin files are read for (advisor.sources.pins.WANTED: bitsandbytes and
    PyYAML besides the judged libraries) nearest the training script ``script``, then nearest ``path``."""
    if script is not None:
        near = context.pins_near(Path(os.path.abspath(script)).parent).get(package)
        if near is not None:
            return near
    return context.pins_near(Path(os.path.abspath(path)).parent).get(package)


def unknown_release_note(targets: dict[str, Target], packages: Any) -> str:
    """For a key or flag no shipped release of ``packages`` has: why that is no error when one of them is
    pinned to a tree whose release cannot be known (a git commit); "" when every release is known."""
    unsure = [targets[p] for p in dict.fromkeys(packages) if p in targets and not targets[p].known]
    if not unsure:
        return ""
    return "; " + ", ".join(t.label for t in unsure) + ": whether that tree has it cannot be known"


def run_installs_below(plan: Any, package: str, version: str) -> bool | None:
    """installs_below for the pin of ``package`` nearest the run's training script (else its training
    file, else its root document); None when nothing pins it or the answer needs the release list."""
    doc = plan.spec.script or plan.spec.training or plan.spec.root
    if doc is None or getattr(doc, "path", None) is None:
        return None
    pin = pinned(package, doc.path, plan.context, getattr(plan.spec.script, "path", None))
    if pin is None or not pin.spec:
        return None
    return installs_below(pin.spec, version)


def installs_below(spec: str, version: str) -> bool | None:
    """Whether pip, which installs the newest release a specifier allows, installs one older than
    ``version`` (a release that exists): True for ``==0.41.0`` or ``<0.43.2`` below it, False when nothing
    bounds the spec from above (the newest release is not older than one that exists) or an exact pin is
    at or above it; None when the answer needs the package's release list (``<0.44``, ``==0.43.*``) or the
    spec cannot be read (an empty one: a git commit)."""
    clauses = _parse_spec(spec) if spec else None
    if clauses is None:
        return None
    want = tuple(int(x) for x in re.findall(r"\d+", version))
    uppers: list[bool | None] = []
    for op, bound in clauses:
        if isinstance(bound, str):
            if op == "==*":
                uppers.append(None)
            continue
        n = max(len(bound), len(want))
        b, w = _pad(bound, n), _pad(want, n)
        if op in ("==", "==="):
            return b < w
        if op == "<":
            uppers.append(True if b <= w else None)
        elif op == "<=":
            uppers.append(True if b < w else None)
        elif op == "~=":
            uppers.append(None)
    if not uppers:
        return False
    if any(u is True for u in uppers):
        return True
    return None


# --------------------------------------------------------------------------------------------------
# what a release accepts
# --------------------------------------------------------------------------------------------------


def _in_ranges(ranges: list[int], index: int) -> bool:
    return any(ranges[i] <= index <= ranges[i + 1] for i in range(0, len(ranges), 2))


def _class(package: str, cls: str) -> dict[str, Any] | None:
    return _data().get(package, {}).get("classes", {}).get(cls)


@cache
def class_names(package: str) -> tuple[str, ...]:
    return tuple(_data().get(package, {}).get("classes", {}))


def has_class(package: str, cls: str) -> bool:
    return _class(package, cls) is not None


@record(frozen=True, slots=True)
class KeyStatus:
    """A key of ``cls`` at one release: ``present`` (accepted), ``deprecated`` (accepted with a warning),
    ``removed`` (accepted by an older release: ``last`` is the newest one), ``new`` (only in newer
    releases: ``first``), or ``never`` (in no release we ship)."""

    state: str
    first: str | None = None
    last: str | None = None
    replacement: str | None = None


def key_status(package: str, classes: tuple[str, ...], key: str, index: int) -> KeyStatus:
    """The key at release ``index`` over the union of ``classes`` (the dataclasses a parser receives); at
    ANY_RELEASE ``present`` when some shipped release has it (the tree may be that one), else ``never``."""
    if index == ANY_RELEASE:
        return KeyStatus("present" if key in keys_at(package, classes, index) else "never")
    shipped = releases(package)
    seen: list[int] = []
    deprecated = False
    replacement = None
    for cls in classes:
        data = _class(package, cls)
        if data is None:
            continue
        ranges = data["keys"].get(key)
        if ranges is None:
            continue
        if _in_ranges(ranges, index):
            dep = data.get("deprecated", {}).get(key)
            if dep is None or not _in_ranges(dep, index):
                return KeyStatus("present")
            deprecated = True
            replacement = replacement or _replacement(package, cls, key)
        seen.extend(ranges)
    if deprecated:
        return KeyStatus("deprecated", replacement=_usable(package, classes, replacement, index))
    if not seen:
        return KeyStatus("never")
    older = [v for v in seen if v < index]
    if older:
        last = max(older)
        replacement = next((r for c in classes if (r := _replacement(package, c, key))), None)
        return KeyStatus(
            "removed",
            first=minor(shipped[last + 1]),  # the first minor release without it
            last=minor(shipped[last]),
            replacement=_usable(package, classes, replacement, index),
        )
    return KeyStatus("new", first=minor(shipped[min(seen)]))


def _replacement(package: str, cls: str, key: str) -> str | None:
    data = _class(package, cls)
    return data.get("replacement", {}).get(key) if data else None


def _usable(package: str, classes: tuple[str, ...], replacement: str | None, index: int) -> str | None:
    """The replacement only when the release judged accepts it: a fix never names what it cannot read."""
    if replacement is None:
        return None
    for cls in classes:
        data = _class(package, cls)
        if data is not None and _in_ranges(data["keys"].get(replacement, []), index):
            return replacement
    return None


def keys_at(package: str, classes: tuple[str, ...], index: int) -> frozenset[str]:
    """Every key the union of ``classes`` accepts at release ``index`` (at ANY_RELEASE: at some release)."""
    out: set[str] = set()
    for cls in classes:
        data = _class(package, cls)
        if data is None:
            continue
        out.update(k for k, r in data["keys"].items() if index == ANY_RELEASE or _in_ranges(r, index))
    return frozenset(out)
