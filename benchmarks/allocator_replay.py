"""Replay one simulated training step's allocations through a model of PyTorch's CUDA caching allocator over
a sequence of batch lengths: how far max_memory_reserved() rises above the live set on unpadded batches.

Issue 21 section 2 (allocator growth on variable-length batches). Outside the check path, like
benchmarks/simulate.py, whose fake-tensor step it records (torch, transformers, peft needed for --model).

The trace: every storage the step creates and frees, in order, at two lengths (L0 and 2 L0); each
allocation's size is affine in the length (the same op sequence at every length), so one trace is scaled to
any length. The allocator (c10/cuda/CUDACachingAllocator.cpp, pytorch@001074d; torch 2.1 defaults: no
max_split_size, no expandable segments), as its header comment (lines 53-72) and constants state:
* sizes round up to 512 B (kMinBlockSize); requests <= 1 MiB (kSmallSize) use the small pool, in 2 MiB
  segments (kSmallBuffer); larger ones the large pool: < 10 MiB (kMinLargeAlloc) map a 20 MiB segment
  (kLargeBuffer), others their size rounded up to 2 MiB (kRoundLarge);
* a request takes the smallest free block of its pool that holds it (best fit), split when the rest is
  > 1 MiB (large pool) or >= 512 B (small pool); a freed block merges with free neighbours of its segment;
* no free block holds it: a new segment; when that would pass the device's memory, every unsplit cached
  segment is returned first (release_cached_blocks) and the request retried.
Not modelled: streams and events (one stream), CUDA graphs, the allocator's garbage-collection threshold.

Run:
    python3 benchmarks/allocator_replay.py --model Qwen/Qwen2-7B --method lora --gc --layers 4 \
        --cap 4096 --mean 3234 --sd 2547 --samples 1000 --seeds 3
"""

from __future__ import annotations

import argparse
import bisect
import gc
import math
import random
import sys
import weakref
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

GIB = 2**30
MIB = 2**20
MIN_BLOCK = 512  # kMinBlockSize
SMALL_SIZE = 1 * MIB  # kSmallSize
SMALL_BUFFER = 2 * MIB  # kSmallBuffer
LARGE_BUFFER = 20 * MIB  # kLargeBuffer
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc
ROUND_LARGE = 2 * MIB  # kRoundLarge

Event = tuple[str, int, int]  # ("a", token, bytes) | ("f", token, 0)


class _Block:
    __slots__ = ("addr", "free", "next", "prev", "seg", "size", "small")

    def __init__(self, seg: int, addr: int, size: int, small: bool) -> None:
        self.seg, self.addr, self.size, self.small = seg, addr, size, small
        self.free = True
        self.prev: _Block | None = None
        self.next: _Block | None = None


class CachingAllocator:
    """The device caching allocator's block bookkeeping (sizes only, no memory)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.reserved = self.allocated = self.peak_reserved = self.peak_allocated = 0
        self._pools: dict[bool, list[tuple[int, int]]] = {True: [], False: []}  # (size, addr) of free blocks
        self._free: dict[int, _Block] = {}  # addr -> free block
        self._live: dict[int, _Block] = {}  # token -> allocated block
        self._heads: dict[int, _Block] = {}  # segment -> its first block
        self._next_addr = 0
        self.segments_mapped = 0

    @staticmethod
    def round_size(n: int) -> int:
        return MIN_BLOCK if n < MIN_BLOCK else -(-n // MIN_BLOCK) * MIN_BLOCK

    @staticmethod
    def allocation_size(n: int) -> int:
        if n <= SMALL_SIZE:
            return SMALL_BUFFER
        if n < MIN_LARGE_ALLOC:
            return LARGE_BUFFER
        return -(-n // ROUND_LARGE) * ROUND_LARGE

    def _insert(self, b: _Block) -> None:
        bisect.insort(self._pools[b.small], (b.size, b.addr))
        self._free[b.addr] = b

    def _remove(self, b: _Block) -> None:
        pool = self._pools[b.small]
        del pool[bisect.bisect_left(pool, (b.size, b.addr))]
        del self._free[b.addr]

    def _release_cached(self) -> None:
        for seg, head in list(self._heads.items()):
            if head.free and head.next is None:
                self._remove(head)
                self.reserved -= head.size
                del self._heads[seg]

    def malloc(self, token: int, nbytes: int) -> None:
        n = self.round_size(nbytes)
        small = n <= SMALL_SIZE
        pool = self._pools[small]
        i = bisect.bisect_left(pool, (n, -1))
        if i < len(pool):
            b = self._free[pool[i][1]]
            self._remove(b)
        else:
            size = self.allocation_size(n)
            if self.reserved + size > self.capacity:
                self._release_cached()
                if self.reserved + size > self.capacity:
                    raise MemoryError(f"out of memory: {self.reserved / GIB:.2f} GiB reserved")
            self.segments_mapped += 1
            b = _Block(self.segments_mapped, self._next_addr, size, small)
            self._next_addr += size
            self._heads[b.seg] = b
            self.reserved += size
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        rest = b.size - n
        if (small and rest >= MIN_BLOCK) or (not small and rest > SMALL_SIZE):
            r = _Block(b.seg, b.addr + n, rest, small)
            r.prev, r.next = b, b.next
            if b.next is not None:
                b.next.prev = r
            b.next, b.size = r, n
            self._insert(r)
        b.free = False
        self._live[token] = b
        self.allocated += b.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)

    def free(self, token: int) -> None:
        b = self._live.pop(token)
        self.allocated -= b.size
        b.free = True
        p = b.prev
        if p is not None and p.free:
            self._remove(p)
            b = _absorb(p, b)
        nx = b.next
        if nx is not None and nx.free:
            self._remove(nx)
            _absorb(b, nx)
        if b.prev is None:
            self._heads[b.seg] = b
        self._insert(b)


def _absorb(left: _Block, right: _Block) -> _Block:
    """Merge free `right` into its free neighbour `left` (the caching allocator's coalescing on free)."""
    left.size += right.size
    left.next = right.next
    if right.next is not None:
        right.next.prev = left
    return left


def scale(short: list[Event], long: list[Event], l0: int, length: int) -> list[Event]:
    """The trace at `length` from traces at l0 and 2 * l0 of the same op sequence (sizes affine in it)."""
    if len(short) != len(long):
        raise ValueError("the two traces differ in their op sequence: the step is not length-independent")
    out: list[Event] = []
    for a, b in zip(short, long, strict=True):
        if a[0] == "a":
            out.append(("a", a[1], max(0, round(a[2] + (b[2] - a[2]) * (length - l0) / l0))))
        else:
            out.append(a)
    return out


def replay(steps: list[list[Event]], capacity: int) -> CachingAllocator:
    """Every step's events in order; what a step leaves allocated is freed before the next (a LoRA run's
    adapter gradients are negligible here)."""
    alloc = CachingAllocator(capacity)
    for j, events in enumerate(steps):
        base = (j + 1) << 32
        live: set[int] = set()
        for kind, token, nbytes in events:
            if kind == "a":
                alloc.malloc(base + token, nbytes)
                live.add(token)
            elif token in live:
                alloc.free(base + token)
                live.discard(token)
        for token in live:
            alloc.free(base + token)
    return alloc


def record_step(run: Any) -> list[Event]:
    """The storages one simulated forward + backward creates and frees, in order (benchmarks/simulate.py)."""
    import simulate as S
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map_only

    events: list[Event] = []
    tokens: dict[int, int] = {}

    def free(key: int) -> None:
        token = tokens.pop(key, None)
        if token is not None:
            events.append(("f", token, 0))

    class Recorder(TorchDispatchMode):
        def add(self, t: Any) -> None:
            st = t.untyped_storage()
            if id(st) in tokens:
                return
            tokens[id(st)] = len(events) + 1
            events.append(("a", len(events) + 1, S._round(st.nbytes())))
            weakref.finalize(st, free, id(st))

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            tree_map_only(torch.Tensor, self.add, out)
            return out

    model, fm, _ = S._materialised(run)
    for p in model.parameters():
        p.grad = None
    was = gc.isenabled()
    gc.disable()
    try:
        with fm, Recorder():
            ids = torch.zeros(run.micro_batch, run.seq, dtype=torch.long)
            ctx = torch.autocast("cpu", dtype=S._torch_dtype(run.autocast)) if run.autocast else None
            if ctx is not None:
                with ctx:
                    loss = model(input_ids=ids, labels=ids).loss
            else:
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            del loss
    finally:
        for p in model.parameters():
            p.grad = None
        if was:
            gc.enable()
    return events


def lognormal_lengths(mean: float, sd: float, cap: int, n: int, seed: int, low: int = 1) -> list[int]:
    """n lengths from a lognormal with this mean and sd, the ones above cap dropped (as ms-swift's
    truncation_strategy 'delete' does), in random order."""
    rng = random.Random(seed)
    s2 = math.log(1 + (sd / mean) ** 2)
    mu = math.log(mean) - s2 / 2
    out: list[int] = []
    while len(out) < n:
        x = int(rng.lognormvariate(mu, math.sqrt(s2)))
        if low <= x <= cap:
            out.append(x)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--method", default="lora")
    ap.add_argument("--gc", action="store_true")
    ap.add_argument(
        "--layers", type=int, default=4, help="decoder layers simulated (the growth is mostly the head's)"
    )
    ap.add_argument("--l0", type=int, default=256)
    ap.add_argument("--cap", type=int, required=True, help="the longest length kept (max_length)")
    ap.add_argument("--mean", type=float, required=True)
    ap.add_argument("--sd", type=float, required=True)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--device-gib", type=float, default=80.0)
    a = ap.parse_args(argv)
    import simulate as S

    cfg = S._catalog_config(a.model)
    runs = [
        S.SimRun(config=cfg, method=a.method, gradient_checkpointing=a.gc, seq=seq, layers=a.layers)
        for seq in (a.l0, 2 * a.l0)
    ]
    short, long = (record_step(r) for r in runs)
    cap = int(a.device_gib * GIB)
    for seed in range(a.seeds):
        lengths = lognormal_lengths(a.mean, a.sd, a.cap, a.samples, seed)
        cache: dict[int, list[Event]] = {}
        steps = [cache.setdefault(n, scale(short, long, a.l0, n)) for n in lengths]
        varied = replay(steps, cap)
        fixed = replay([scale(short, long, a.l0, max(lengths))], cap)
        work = fixed.peak_allocated
        grown = (varied.peak_reserved - fixed.peak_reserved) / max(work, 1)
        print(
            f"seed {seed}: {len(lengths)} batches, longest {max(lengths)}: reserved "
            f"{varied.peak_reserved / GIB:.2f} GiB vs {fixed.peak_reserved / GIB:.2f} GiB at the longest "
            f"alone (working set {work / GIB:.2f} GiB): growth {grown:.1f} x the working set"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
