"""`gpu-advise estimate`, the rendering half: draws the reports advisor/pipeline/estimate_run.py builds.

render_text draws them as plain text with ANSI colours: the breakdown table with a bar per item, the
verdict per GPU, and a comparison of strategies and methods with the cheapest one that fits;
render_json prints them. Nothing here imports torch, transformers or rich.
"""

from __future__ import annotations

from typing import Any

# in the order methods are compared (advisor.pipeline.estimate_run.METHODS)
METHOD_LABEL = {"full": "full fine-tune", "lora": "LoRA", "qlora": "QLoRA"}
STRATEGY_TEXT = {
    "none": "no sharding",
    "ddp": "DDP",
    "zero1": "ZeRO-1",
    "zero2": "ZeRO-2",
    "zero3": "ZeRO-3",
    "fsdp": "FSDP",
    "fsdp_grad_op": "FSDP SHARD_GRAD_OP",
}
VERDICT_STYLE = {"fits": "green", "tight": "yellow", "does not fit": "bold red", None: "dim"}


def _bar(gib: float, top: float, width: int = 28) -> str:
    if top <= 0 or gib <= 0:
        return ""
    cells = gib / top * width
    full = int(cells)
    part = " ▏▎▍▌▋▊▉"[int((cells - full) * 8)]
    return ("█" * full + (part if part != " " else "")).rstrip()


def _fmt_params(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"


def _layout_text(r: dict[str, Any] | None) -> str:
    if r is None:
        return "nothing in the comparison fits"
    where = f" on {r['gpus']} GPUs" if r["gpus"] > 1 else " on 1 GPU"
    gpu = f" ({r['smallest_gpu']} or larger)" if r.get("smallest_gpu") and r.get("verdict") is None else ""
    layout = "" if r["strategy"] == "none" else f" with {r['layout']}"
    return f"{METHOD_LABEL[r['method']]}{layout}{where}{gpu}, {r['peak_gib']:.1f} GiB per GPU"


_ANSI = {
    "bold": "1",
    "dim": "2",
    "green": "32",
    "yellow": "33",
    "bold red": "1;31",
    "cyan": "36",
    "red": "31",
}


class _Out:
    """Lines of text with optional ANSI colour (rich's start-up and table layout cost more than the
    whole estimate; `gpu-advise estimate` is meant to answer in well under 300 ms)."""

    def __init__(self, color: bool) -> None:
        self.color = color
        self.lines: list[str] = []

    def style(self, text: str, style: str | None) -> str:
        if not self.color or not style or not text:
            return text
        return f"\x1b[{_ANSI[style]}m{text}\x1b[0m"

    def line(self, text: str = "") -> None:
        self.lines.append(text)

    def table(self, headers: list[str], rows: list[list[tuple[str, str | None]]], right: set[int]) -> None:
        """Columns sized to their widest cell; each cell is (text, style). On a terminal (colour on),
        a rich table wrapped to the terminal's width; piped or written to a file, plain columns."""
        if self.color:
            self.lines.extend(rich_table(headers, rows, right))
            return
        widths = [len(h) for h in headers]
        for row in rows:
            for i, (text, _) in enumerate(row):
                widths[i] = max(widths[i], len(text))

        def fmt(i: int, text: str, style: str | None) -> str:
            pad = text.rjust(widths[i]) if i in right else text.ljust(widths[i])
            return self.style(pad, style)

        last = len(headers) - 1
        self.line("  ".join(fmt(i, h, "dim") for i, h in enumerate(headers)).rstrip())
        for row in rows:
            cells = [
                fmt(i, text, style) if i < last else self.style(text, style)
                for i, (text, style) in enumerate(row)
            ]
            self.line("  ".join(cells).rstrip())


_RICH_STYLES = {
    "dim": "dim",
    "bold": "bold",
    "green": "green",
    "red": "red",
    "yellow": "yellow",
    "cyan": "cyan",
}


def rich_table(headers: list[str], rows: list[list[tuple[str, str | None]]], right: set[int]) -> list[str]:
    """A rich table as lines of ANSI text, wrapped to the terminal's width (rich is imported here, on
    a terminal only: the piped output and the check path never pay its start-up)."""
    import io
    import shutil

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="dim")
    for i, h in enumerate(headers):
        table.add_column(h, justify="right" if i in right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(Text(text, style=_RICH_STYLES.get(style or "", "")) for text, style in row))
    buffer = io.StringIO()
    width = shutil.get_terminal_size((100, 24)).columns
    Console(file=buffer, force_terminal=True, width=width, color_system="standard").print(table)
    return [line.rstrip() for line in buffer.getvalue().splitlines()]


_FIGURE_LABEL = {"allocated": "allocated", "reserved": "reserved", "device": "on the device"}
# the breakdown items each figure adds to the one before (advisor/estimate/memory/peak.py estimate_memory)
_ADDED_BY = {"reserved": ("allocator overhead",), "device": ("CUDA context", "paged optimizer states")}


def _breakdown_rows(
    mem: dict[str, Any], breakdown: list[dict[str, Any]]
) -> list[list[tuple[str, str | None]]]:
    """The breakdown items with the allocated, reserved and device peaks as subtotals, each with its band
    and the number it compares with (advisor.facts.memory_kinds); the one the fit verdict uses in bold."""
    top = max((it["gib"] for it in breakdown), default=0.0)

    def figure(kind: str) -> list[tuple[str, str | None]]:
        fig, used = mem[kind], kind == mem["fit_uses"]
        return [
            (f"peak {_FIGURE_LABEL[kind]}", "bold" if used else None),
            (f"{fig['gib']:.1f}", "bold" if used else None),
            (f"band {fig['low_gib']:.1f} .. {fig['high_gib']:.1f}", None),
            (fig["reads"] + ("; the fit verdict uses this" if used else ""), "dim"),
        ]

    rows: list[list[tuple[str, str | None]]] = []
    pending = list(_FIGURE_LABEL)
    for it in breakdown:
        name = str(it["name"])
        for kind in ("reserved", "device"):
            if kind in pending and name.startswith(_ADDED_BY[kind]):
                while pending[0] != kind:  # the subtotals before the first item this figure adds
                    rows.append(figure(pending.pop(0)))
        rows.append(
            [(name, None), (f"{it['gib']:.2f}", None), (_bar(it["gib"], top), "cyan"), (it["note"], "dim")]
        )
    rows.extend(figure(kind) for kind in pending)
    return rows


def render_text(reports: list[dict[str, Any]], *, color: bool = False) -> str:
    from advisor.core.escape import escape_value

    reports = escape_value(reports)  # run names, model names and paths are user strings
    out = _Out(color)
    st = out.style
    for i, rep in enumerate(reports):
        if i:
            out.line()
        if "unknown" in rep:
            out.line(st(f"run {rep['run']}: no estimate: {rep['unknown']}", "yellow"))
            continue
        s, mem, hw = rep["setup"], rep["memory"], rep["hardware"]
        title = f"run {rep['run']}: " if rep.get("run") else ""
        model = rep["model"]
        source = model["hub_id"] if model["hub_id"] and model["hub_id"] != model["name"] else None
        out.line(
            st(f"{title}{model['name']}", "bold")
            + f" ({source + ', ' if source else ''}{model['source']}): "
            + st(f"{rep['params']:,}", "bold")
            + f" parameters ({_fmt_params(rep['params'])}), {rep['trainable_params']:,} trainable"
        )
        strategy = STRATEGY_TEXT.get(s["strategy"], s["strategy"])
        off = " + CPU offload" if s["offload_optimizer"] != "none" else ""
        out.line(
            f"{METHOD_LABEL[s['method']]}, micro-batch {s['micro_batch'] or 1} x "
            f"{s['seq_len'] or 2048} tokens, "
            f"{s['gpus']} GPU{'s' if s['gpus'] != 1 else ''}, {strategy}{off}"
            + (f", on {hw['name']} ({hw['gpu']}, {hw['usable_gib']:g} GiB usable per GPU)" if hw else "")
        )
        for d in rep.get("dtypes", []):
            out.line(f"{d['what'] + ':':<11}{d['dtype']}" + st(f"  ({d['source']})", "dim"))
        out.line()
        out.line(st("Memory per GPU at the peak", "bold") + st(f"  phase: {mem['phase']}", "dim"))
        rows = _breakdown_rows(mem, rep["breakdown"])
        if mem["host_gib"]:
            rows.append(
                [
                    ("host (offloaded)", None),
                    (f"{mem['host_gib']:.2f}", None),
                    ("", None),
                    ("CPU RAM per process", "dim"),
                ]
            )
        out.table(["", "GiB", "", "note"], rows, right={1})
        out.line()
        parts = []
        for verdict in ("fits", "tight", "does not fit"):
            names = [
                f"{v['gpu']} ({v['usable_gib']:.0f} GiB)" for v in rep["verdicts"] if v["verdict"] == verdict
            ]
            if names:
                parts.append(st(verdict, VERDICT_STYLE[verdict]) + ": " + ", ".join(names))
        out.line(
            st("Verdict per GPU", "bold")
            + st(f" (peak {_FIGURE_LABEL[mem['fit_uses']]} vs usable memory)", "dim")
            + st(": ", "bold")
            + "; ".join(parts)
        )
        if rep["what_if"]:
            out.line("What each knob saves at the peak:")
            for w in rep["what_if"][:6]:
                out.line(f"  -{w['saves_gib']:6.1f} GiB  {w['change']}")
        out.line()
        out.line(st("Strategies and methods (peak per GPU)", "bold"))
        rows = []
        for r in rep["comparison"]:
            if hw:
                cell = (r["verdict"], VERDICT_STYLE[r["verdict"]])
                if r["gpus"] > hw["gpus"]:
                    cell = (f"{r['verdict']} (needs {r['gpus']} GPUs)", "dim")
            else:
                cell = (
                    (r["smallest_gpu"] + " or larger", "green")
                    if r["smallest_gpu"]
                    else ("none listed", "red")
                )
            rows.append(
                [
                    (METHOD_LABEL[r["method"]], None),
                    (r["layout"], None),
                    (str(r["gpus"]), None),
                    (f"{r['peak_gib']:.1f}", None),
                    cell,
                ]
            )
        out.table(["method", "layout", "GPUs", "GiB/GPU", "verdict" if hw else "fits on"], rows, right={2, 3})
        cheapest = rep["cheapest"]
        where = f" on {hw['name']}" if hw else ""
        out.line(st("Cheapest that fits" + where + ": ", "bold") + _layout_text(cheapest.get(s["method"])))
        for m in METHOD_LABEL:
            if m != s["method"]:
                out.line(f"  {METHOD_LABEL[m]}: {_layout_text(cheapest.get(m))}")
        t = rep["time"]
        if t is not None:
            out.line()
            capped = "" if t.get("real_tokens_known", True) else " counted at max_length"
            line = (
                f"Time: {t['step_time_s']:.2f} s per optimizer step, {t['tokens_per_s']:,} tokens/s{capped} "
                f"(MFU {t['mfu']:.2f}), scaling efficiency {t['scaling_efficiency']:.0%}"
            )
            if capped:  # timing.tokens_per_micro_batch: the data's length unknown, every sample at the cap
                line += "; the data's real tokens per second are unknown (its length is not given)"
            if t["hours"] is not None:
                line += f"; {t['hours']:.1f} h for {t['total_tokens']:.3g} tokens"
                if s["gpus"] > 1:
                    line += f" on {s['gpus']} GPUs, {t['hours_single_gpu']:.1f} h on one"
            out.line(line)
            for item in t.get("not_timed") or []:  # timing.not_timed: each with its reason
                out.line(f"  not timed: {item}")
        if rep["assumptions"]:
            out.line()
            out.line(st("Assumptions:", "dim"))
            for a in rep["assumptions"]:
                out.line(st(f"  - {a}", "dim"))
    return "\n".join(out.lines) + "\n"


def render_json(reports: list[dict[str, Any]], *, runs: bool) -> str:
    from advisor.core.escape import escape_value, strict_json

    payload: Any = {"version": 1, "runs": reports} if runs else reports[0]
    return strict_json(escape_value(payload)) + "\n"  # no NaN/Infinity, no raw control characters
