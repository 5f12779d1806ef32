"""The ms-swift Benchmark.md Qwen-1 LoRA step of January 2024, written by hand from its source, replayed
through the caching-allocator model of benchmarks/allocator_replay.py over its lengths (issue 21).

The rows (benchmarks/data/heldout/SW01-SW15) ran ms-swift 1.6.0.dev0 @4312aeb (transformers >= 4.33, < 4.37;
accelerate of the time; torch 2.1.1). The step's tokens x vocab tensors, in order, per token and vocab entry:
* Qwen-1's remote LM head (Qwen-7B-Chat modeling_qwen.py, QWenLMHeadModel.forward, read from
  mapengAdam/qianwen-72B@3334bfe3 modeling_qwen.py, the same head in every Qwen-1 size): `lm_logits =
  self.lm_head(hidden_states)` (bf16, 2 B), `shift_logits = lm_logits[..., :-1, :].contiguous()` (2 B),
  CrossEntropyLoss under the Trainer's bf16 autocast: log_softmax casts to fp32 (4 B, freed after it) and
  saves its fp32 output (4 B);
* accelerate 0.25.0 accelerator.py:1277-1286 wraps the forward in convert_outputs_to_fp32
  (utils/operations.py:630-647 `tensor.float()` on every bf16 output): an fp32 copy of the logits (4 B) while
  the bf16 logits and the saved log_softmax output are live;
* swift's compute_loss (swift/trainers/trainers.py:171-195 @4312aeb) takes the token accuracy from
  `outputs.logits.argmax(dim=2)` and returns the loss only; transformers 4.36.2 trainer.py:2735/2744 then
  calls backward: the outputs are gone;
* backward: nll_loss's gradient (4 B), log_softmax's (4 B) beside the saved output, the cast back (2 B), the
  slice's zero-filled full gradient (2 B), then the head's input gradient.
Peak allocated 12 B per token x vocab (the forward's 2 + 2 + 4 + 4, and the backward's 4 + 4 + 4), as the
estimate counts. Layer tensors (checkpointed recompute, Qwen-7B shapes) are optional (--layers, slower):
they barely change the result.

Lengths: cls-fudan-news-zh, 4959 samples, 3234.4 +- 2547.5 tokens (min 91, max 19548: Benchmark.md and
the dataset table @4312aeb) as a lognormal; samples over max_length dropped (truncation_strategy 'delete');
all samples at max_length <= 2048, 1000 drawn at random above (scripts/benchmark/test_memory_time/
run_single.py train_dataset_sample); batch 1 in random order (train_sampler_random).

Run: python3 benchmarks/swift_qwen1_replay.py [--layers] [--seeds 4]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import allocator_replay as R

GIB = 2**30
QWEN_VOCAB = 151936
QWEN7B = (4096, 11008, 32)  # hidden, MLP branch width (intermediate_size // 2), layers
FUDAN = (4959, 3234.4, 2547.5, 91, 19548)  # samples, mean, sd, min, max
ROWS = ((512, -1), (1024, -1), (2048, -1), (4096, 1000), (8192, 1000))  # max_length, train_dataset_sample


def step(t: int, vocab: int, shape: tuple[int, int, int] | None = None) -> list[R.Event]:
    """One batch-1 step of t tokens: its allocations and frees in order."""
    ev: list[R.Event] = []
    n = [0]

    def a(nbytes: int) -> int:
        n[0] += 1
        ev.append(("a", n[0], nbytes))
        return n[0]

    def f(*tokens: int) -> None:
        ev.extend(("f", k, 0) for k in tokens)

    h, inter, layers = shape or (QWEN7B[0], 0, 0)
    inputs = [a(t * h * 2)]  # embeddings, the first checkpoint input
    for _ in range(layers):  # checkpointed forward (no grad): the layer's transients, its output kept
        x32 = a(t * h * 4)
        ln = a(t * h * 2)
        f(x32)
        qkv = a(t * 3 * h * 2)
        f(ln)
        att = a(t * h * 2)
        f(qkv)
        o = a(t * h * 2)
        f(att)
        r = a(t * h * 2)
        f(o)
        w1, w2 = a(t * inter * 2), a(t * inter * 2)
        s = a(t * inter * 2)
        m = a(t * inter * 2)
        f(w1, w2, s)
        mo = a(t * h * 2)
        f(m)
        inputs.append(a(t * h * 2))
        f(mo, r)
    lnf = a(t * h * 2)
    logits = a(t * vocab * 2)  # lm_head, bf16
    shift = a((t - 1) * vocab * 2)  # lm_logits[..., :-1, :].contiguous()
    cast = a((t - 1) * vocab * 4)  # autocast's fp32 input of log_softmax
    logp = a((t - 1) * vocab * 4)  # log_softmax output, saved
    f(cast, shift)
    fp32 = a(t * vocab * 4)  # accelerate convert_outputs_to_fp32
    f(logits)
    f(a(t * 8))  # swift's argmax for the token accuracy
    f(fp32)  # compute_loss returned the loss only
    g_nll = a((t - 1) * vocab * 4)
    g_logp = a((t - 1) * vocab * 4)
    f(g_nll, logp)
    g_cast = a((t - 1) * vocab * 2)
    f(g_logp)
    g_full = a(t * vocab * 2)  # SliceBackward: zeros + copy
    f(g_cast)
    gh = a(t * h * 2)
    f(g_full, lnf)
    for _ in range(layers):  # recompute with grad, then its backward, then the input's gradient
        xin = inputs.pop()
        saved = [a(t * h * 2), a(t * 3 * h * 2), a(t * h * 2), a(t * h * 2), a(t * h * 2)]
        saved += [a(t * inter * 2) for _ in range(4)]
        grads = [a(t * inter * 2), a(t * inter * 2)]
        f(*saved[5:], *grads)
        g = a(t * h * 2)
        f(*saved[:5], gh, xin)
        gh = g
    f(gh, *inputs)
    return ev


def lengths(cap: int, sample: int, seed: int) -> list[int]:
    """The kept lengths in training order: the data set drawn, subsampled, filtered at the cap, shuffled."""
    total, mean, sd, low, high = FUDAN
    rng = random.Random(seed)
    s2 = math.log(1 + (sd / mean) ** 2)
    mu = math.log(mean) - s2 / 2
    data: list[int] = []
    while len(data) < total:
        x = int(rng.lognormvariate(mu, math.sqrt(s2)))
        if low <= x <= high:
            data.append(x)
    if sample > 0:
        data = rng.sample(data, sample)
    kept = [x for x in data if x <= cap]
    rng.shuffle(kept)
    return kept


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", action="store_true", help="add Qwen-7B's checkpointed layers (slower)")
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--device-gib", type=float, default=80.0 - 14.4, help="left beside the weights")
    a = ap.parse_args(argv)
    shape = QWEN7B if a.layers else None
    cap = int(a.device_gib * GIB)
    for max_length, sample in ROWS:
        fixed = R.replay([step(max_length, QWEN_VOCAB, shape)], cap)
        grown = []
        for seed in range(a.seeds):
            cache: dict[int, list[R.Event]] = {}
            ls = lengths(max_length, sample, seed)
            varied = R.replay([cache.setdefault(n, step(n, QWEN_VOCAB, shape)) for n in ls], cap)
            grown.append((len(ls), (varied.peak_reserved - fixed.peak_reserved) / GIB))
        print(
            f"max_length {max_length}: one length: allocated {fixed.peak_allocated / GIB:.2f} GiB, reserved "
            f"{fixed.peak_reserved / GIB:.2f} GiB; the data's lengths add "
            + ", ".join(f"{g:.1f}" for _, g in grown)
            + f" GiB reserved ({grown[0][0]}-{grown[-1][0]} batches)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
