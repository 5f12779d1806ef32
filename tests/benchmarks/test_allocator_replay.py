"""The caching-allocator model of benchmarks/allocator_replay.py follows the allocator's stated rules
(c10/cuda/CUDACachingAllocator.cpp header comment, pytorch@001074d lines 53-72, and its constants):

    // - The allocator attempts to find the smallest cached block that will fit the
    //   requested size. If the block is larger than the requested size, it may be
    //   split. If no block is found, the allocator will delegate to cudaMalloc.
    // - If the cudaMalloc fails, ... the allocator will attempt to free all cached blocks
    //   that are not split and retry the allocation.
    // - Large (>1MB) and small allocations are stored in separate pools.
    //   Small requests are packed into 2MB buffers. ...
    // - To reduce fragmentation, requests between 1MB and 10MB will allocate and
    //   split a 20MB block, if no free block of sufficient size is available.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import allocator_replay as R

MIB = 2**20
BIG = 1 << 40


def _steps(*sizes_mib: float) -> list[list[R.Event]]:
    """One step per size: allocate a block of that size, then free it."""
    return [[("a", 1, int(s * MIB)), ("f", 1, 0)] for s in sizes_mib]


def test_a_repeated_length_reuses_its_segment() -> None:
    a = R.replay(_steps(100, 100, 100), BIG)
    assert a.peak_reserved == 100 * MIB and a.segments_mapped == 1


def test_a_new_longest_batch_maps_a_new_segment_and_the_old_one_stays() -> None:
    a = R.replay(_steps(100, 102, 104), BIG)
    assert a.peak_reserved == (100 + 102 + 104) * MIB
    assert a.peak_allocated == 104 * MIB  # the live set never grew past the longest step


def test_a_shorter_batch_splits_a_cached_block() -> None:
    a = R.replay(_steps(100, 50, 99), BIG)
    assert a.peak_reserved == 100 * MIB and a.segments_mapped == 1  # freed halves merge back


def test_pool_sizes() -> None:
    assert R.CachingAllocator.round_size(1) == 512 and R.CachingAllocator.round_size(513) == 1024
    assert R.CachingAllocator.allocation_size(1000) == 2 * MIB  # small pool buffer
    assert R.CachingAllocator.allocation_size(5 * MIB) == 20 * MIB  # 1-10 MiB share a 20 MiB block
    assert R.CachingAllocator.allocation_size(11 * MIB + 1) == 12 * MIB  # rounded up to 2 MiB
    a = R.CachingAllocator(BIG)
    a.malloc(1, 1000)
    a.malloc(2, 5 * MIB)
    a.malloc(3, 3 * MIB)  # fits the 20 MiB block's remainder: no new segment
    assert a.reserved == 22 * MIB and a.segments_mapped == 2


def test_at_the_device_limit_cached_segments_are_returned_not_an_oom() -> None:
    a = R.replay(_steps(100, 102, 104), 150 * MIB)
    # each new longest step first returns the unsplit cached segment of the one before
    assert a.peak_reserved == 104 * MIB and a.segments_mapped == 3
    with pytest.raises(MemoryError):
        R.replay(_steps(160), 150 * MIB)


def test_scaling_is_affine_in_the_length() -> None:
    short = [("a", 1, 1000 + 256 * 10), ("f", 1, 0)]
    long = [("a", 1, 1000 + 512 * 10), ("f", 1, 0)]
    assert R.scale(short, long, 256, 1024) == [("a", 1, 1000 + 1024 * 10), ("f", 1, 0)]
    with pytest.raises(ValueError):
        R.scale(short, long[:1], 256, 1024)


def test_lengths_respect_the_cap() -> None:
    xs = R.lognormal_lengths(3234.4, 2547.5, 2048, 500, seed=0)
    assert len(xs) == 500 and max(xs) <= 2048 and min(xs) >= 1
