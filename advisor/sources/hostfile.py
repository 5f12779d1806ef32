"""DeepSpeed's hostfile (`deepspeed --hostfile FILE`): the hosts and their slots, and which of them a
launch uses, as DeepSpeed's launcher reads them (deepspeed 0.19.8 deepspeed/launcher/runner.py; the
file format and --num_nodes/--num_gpus are the same in 0.16.4).

- `_parse_hostfile`: `NAME slots=N` per line (regex `^(\\S+)\\s+slots=(\\d+)` on the
  stripped line), `#` comments and blank lines skipped; a line of any other form, a host named twice
  or no host at all is a ValueError that stops the launch;
- `parse_inclusion_exclusion` / `parse_resource_filter` (0.19.8 lines 373-382 and the filter above
  them): `--include` / `--exclude` are `NODE_SPEC[@NODE_SPEC ...]`, `NODE_SPEC = NAME[:SLOT[,SLOT ...]]`
  (a host named twice has its slots merged: parse_node_config_list), mutually exclusive, filtered
  against the hosts' real slots. (Up to 0.18 the pool was seeded from the include string itself, so a
  bare `--include NAME` selected no slot: a bug 0.19 fixed, not modelled here);
- then `--num_nodes N` keeps the first N hosts and `--num_gpus G` gives each host slots 0..G-1
  (apply_num_nodes_and_gpus; 0.16.4 lines 502-514), and a launch with a hostfile ignores
  CUDA_VISIBLE_DEVICES (only an empty pool reads it: 0.16.4 line 430).
"""

from __future__ import annotations

import re
from pathlib import Path

from advisor.core.records import record
from advisor.sources.read import ReadRefused, read_text_file

_LINE = re.compile(r"^(\S+)\s+slots=(\d+)")
MAX_SLOTS = 1024  # GPUs on one host, as a hardware descriptor's gpus.count allows


@record(frozen=True, slots=True, kw_only=True)
class Hostfile:
    path: Path
    found: bool = True  # False: not there (DeepSpeed then runs on the local GPUs, as without one)
    hosts: tuple[tuple[str, int], ...] = ()  # (name, slots) in file order
    problem: str | None = None  # why DeepSpeed would refuse it, or why it was not read
    line: int | None = None  # the line of the problem


def parse_hostfile(path: Path, text: str) -> Hostfile:
    """The hosts, or why DeepSpeed refuses the file. The reason names a line, never its text: the file
    is whatever the launch line names, and a report may land in a public CI log."""
    hosts: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#") or not line:
            continue
        m = _LINE.search(line)
        if m is None:
            return Hostfile(path=path, problem=f"line {number} is not 'NAME slots=N'", line=number)
        if m.group(1) in hosts:
            return Hostfile(path=path, problem=f"line {number} names a host a second time", line=number)
        if len(m.group(2)) > 5 or int(m.group(2)) > MAX_SLOTS:
            # DeepSpeed builds list(range(slots)) per host: slots=4000000000 asked for 32 GB
            return Hostfile(
                path=path,
                problem=f"line {number} gives a host more than {MAX_SLOTS} slots; not read",
                line=number,
            )
        hosts[m.group(1)] = int(m.group(2))
    if not hosts:
        return Hostfile(path=path, problem="no 'NAME slots=N' line")
    return Hostfile(path=path, hosts=tuple(hosts.items()))


def read_hostfile(path: Path) -> Hostfile:
    try:
        return parse_hostfile(path, read_text_file(path))
    except ReadRefused as exc:
        return Hostfile(path=path, problem=exc.reason)


def _node_specs(text: str) -> dict[str, list[int]] | str:
    """parse_node_config_list: each host's slots, repeats merged and sorted ([] = the whole host)."""
    out: dict[str, list[int]] = {}
    for spec in text.split("@"):
        name, colon, slots = spec.partition(":")
        try:
            listed = [int(s) for s in slots.split(",")] if colon else []
        except ValueError:
            return f"a slot list that is not numbers in '{spec[:40]}'"
        out[name] = sorted(set(out.get(name, []) + listed))
    return out


def active_slots(
    hosts: tuple[tuple[str, int], ...], include: str, exclude: str, num_nodes: int, num_gpus: int
) -> dict[str, list[int]] | str:
    """The slots each host runs a process on, or DeepSpeed's reason for refusing the launch."""
    if num_gpus > MAX_SLOTS:
        return f"--num_gpus {num_gpus} is more than {MAX_SLOTS} GPUs on one host"
    if (num_nodes >= 0 or num_gpus >= 0) and (include or exclude):
        return "Cannot specify num_nodes/gpus with include/exclude"
    if include and exclude:
        return "include_str and exclude_str are mutually exclusive."
    pool = {name: list(range(slots)) for name, slots in hosts}
    filter_text = include or exclude
    if filter_text:
        specs = _node_specs(filter_text)
        if isinstance(specs, str):
            return specs
        chosen: dict[str, list[int]] = {} if include else {k: list(v) for k, v in pool.items()}
        for name, slots in specs.items():
            if name not in pool:
                return f"Hostname '{name}' not found in hostfile"
            missing = [s for s in slots if s not in pool[name]]
            if missing:
                return f"No slot '{missing[0]}' specified on host '{name}'"
            if include:
                chosen[name] = slots or pool[name]
            else:
                chosen[name] = [s for s in chosen[name] if s not in slots] if slots else []
        pool = {name: list(dict.fromkeys(chosen[name])) for name in pool if chosen.get(name)}
    if num_nodes > 0:
        pool = dict(list(pool.items())[:num_nodes])
    if num_gpus > 0:
        pool = {name: list(range(num_gpus)) for name in pool}
    return pool
