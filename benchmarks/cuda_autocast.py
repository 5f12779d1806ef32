"""CUDA autocast's cast policy for the simulated step's CPU tensors (benchmarks/simulate.py; issue 21 s. 1).

The simulation runs on fake CPU tensors, so `torch.autocast("cpu")` applies CPU's op lists, which are not
CUDA's: CPU runs layer_norm, group_norm, pow, rsqrt, softmax ... in the autocast dtype where CUDA runs them
in fp32 (a GPT-NeoX LayerNorm then saves a bf16 input for backward where the GPU saves an fp32 one).
`cuda_policy()` re-registers the AutocastCPU kernels so that every op is cast as CUDA's autocast casts it:

* the ops CUDA's lists name (CUDA_POLICY) get CUDA's policy: lower_precision_fp, fp32, fp32_set_opt_dtype,
  fp32_append_dtype, promote, as the WrapFunction_ specialisations of aten/src/ATen/autocast_mode.h do
  (cast eligible floating, non-double tensors, then run the op with autocast excluded);
* an op that only CPU's lists name runs as CUDA's fallthrough runs it: not cast, autocast still on for the
  ops it is made of;
* the lower-precision ops both lists name keep CPU's own C++ kernel (the same WrapFunction_ template, with
  CPU's dtype: the run's autocast dtype).

The lists: aten/src/ATen/autocast_mode.h AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32,
AT_FORALL_FP32_SET_OPT_DTYPE, AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE (norm, fp32_append_dtype),
AT_FORALL_PROMOTE, registered for the CUDA key by aten/src/ATen/autocast_mode.cpp
`TORCH_LIBRARY_IMPL(aten, Autocast, m)` with cudnn_convolution / cudnn_convolution_transpose
(lower_precision_fp) and binary_cross_entropy (banned), as torch 2.13.0 registers them: the names are
exactly `torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCUDA")` of the installed torch
(2.13 adds rms_norm, fp32; the Dimname overloads of the header are not registered). The tests check the
table against those registrations and probe the compiled CUDA kernels' output dtypes with fake CUDA tensors
(`probe_cuda_dtype`), so a torch whose lists differ fails there instead of simulating a wrong GPU.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

_LOWER = (
    "_convolution",
    "_convolution.deprecated",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d.input",
    "conv_transpose3d.input",
    "convolution",
    "prelu",
    "addmm",
    "addmv",
    "addr",
    "matmul",
    "einsum",
    "mm",
    "mv",
    "linalg_vecdot",
    "linear",
    "addbmm",
    "baddbmm",
    "bmm",
    "chain_matmul",
    "linalg_multi_dot",
    "_thnn_fused_lstm_cell",
    "_thnn_fused_gru_cell",
    "lstm_cell",
    "gru_cell",
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "_scaled_dot_product_flash_attention",
    "scaled_dot_product_attention",
    "cudnn_convolution",
    "cudnn_convolution_transpose",
)
_FP32 = (
    "acos",
    "asin",
    "cosh",
    "erfinv",
    "exp",
    "expm1",
    "log",
    "log10",
    "log2",
    "log1p",
    "reciprocal",
    "rsqrt",
    "sinh",
    "tan",
    "pow.Tensor_Scalar",
    "pow.Tensor_Tensor",
    "pow.Scalar",
    "softplus",
    "layer_norm",
    "native_layer_norm",
    "group_norm",
    "rms_norm",
    "frobenius_norm.dim",
    "nuclear_norm",
    "nuclear_norm.dim",
    "cosine_similarity",
    "poisson_nll_loss",
    "cosine_embedding_loss",
    "nll_loss",
    "nll_loss2d",
    "hinge_embedding_loss",
    "kl_div",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "mse_loss",
    "margin_ranking_loss",
    "multilabel_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "multi_margin_loss",
    "binary_cross_entropy_with_logits",
    "dist",
    "pdist",
    "cdist",
    "renorm",
    "logsumexp",
    "upsample_nearest1d",
    "_upsample_nearest_exact1d",
    "upsample_nearest2d",
    "_upsample_nearest_exact2d",
    "upsample_nearest3d",
    "_upsample_nearest_exact3d",
    "upsample_linear1d",
    "upsample_bilinear2d",
    "_upsample_bilinear2d_aa",
    "upsample_trilinear3d",
    "upsample_bicubic2d",
    "_upsample_bicubic2d_aa",
)
_FP32_SET_OPT_DTYPE = (
    "prod",
    "prod.dim_int",
    "softmax.int",
    "log_softmax.int",
    "cumprod",
    "cumsum",
    "linalg_vector_norm",
    "linalg_matrix_norm",
    "linalg_matrix_norm.str_ord",
    "sum",
    "sum.dim_IntList",
)
# norm without a dtype redispatches to the overload with one (AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE)
_FP32_APPEND_DTYPE = {"norm.Scalar": "norm.ScalarOpt_dtype", "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype"}
_PROMOTE = (
    "addcdiv",
    "addcmul",
    "atan2",
    "bilinear",
    "cross",
    "dot",
    "vdot",
    "grid_sampler",
    "index_put",
    "tensordot",
    "scatter_add",
)
CUDA_POLICY: dict[str, str] = {
    **dict.fromkeys(_LOWER, "lower_precision_fp"),
    **dict.fromkeys(_FP32, "fp32"),
    **dict.fromkeys(_FP32_SET_OPT_DTYPE, "fp32_set_opt_dtype"),
    **dict.fromkeys(_FP32_APPEND_DTYPE, "fp32_append_dtype"),
    **dict.fromkeys(_PROMOTE, "promote"),
    "binary_cross_entropy": "banned",  # autocast_mode.cpp binary_cross_entropy_banned
}


def registrations(key: str) -> set[str]:
    """The aten ops (name.overload, no namespace) the installed torch registers a kernel for at `key`."""
    import torch

    return {
        n.removeprefix("aten::")
        for n in torch._C._dispatch_get_registrations_for_dispatch_key(key)
        if n.startswith("aten::")
    }


def _op(name: str) -> Any:
    import torch

    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _eligible(t: Any) -> bool:
    # autocast_mode.h is_eligible / is_autocast_eligible (CPU branch: these are CPU tensors)
    import torch

    return (
        isinstance(t, torch.Tensor)
        and t.device.type == "cpu"
        and t.is_floating_point()
        and t.dtype != torch.float64
    )


class _Casts:
    """cached_cast (autocast_mode.cpp): casts to the lower dtype of fp32 leaf weights that need grad are
    cached for the life of the autocast region (the C++ cache of CPU's own kernels is not reachable)."""

    def __init__(self) -> None:
        self.cache: dict[int, tuple[Any, Any]] = {}

    def cast(self, to: Any, arg: Any, lower: Any) -> Any:
        import torch

        if isinstance(arg, (list, tuple)):
            return type(arg)(self.cast(to, a, lower) for a in arg)
        if not _eligible(arg) or arg.dtype == to:
            return arg
        leaf = arg.requires_grad and arg.is_leaf and not arg._is_view()
        if to == lower and arg.dtype == torch.float32 and leaf and torch.is_autocast_cache_enabled():
            hit = self.cache.get(id(arg))
            if hit is not None and hit[0]() is arg:
                return hit[1]
            out = arg.to(to)
            self.cache[id(arg)] = (weakref.ref(arg), out)
            return out
        return arg.to(to)


def _promote_type(lower: Any, args: Any) -> Any:
    """autocast_mode.h promote_type / prioritize."""
    import torch

    current = lower
    for a in args:
        for t in a if isinstance(a, (list, tuple)) else (a,):
            if not _eligible(t):  # double tensors are ignored, as non-floating ones
                continue
            if current == torch.float32 or t.dtype == torch.float32:
                current = torch.float32
            elif not (current == lower and t.dtype == lower):
                raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


def _positional(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """Every argument of the op's schema, in order, defaults filled in."""
    out = list(args)
    for a in op._schema.arguments[len(args) :]:
        out.append(kwargs.get(a.name, a.default_value))
    return out


def _kernel(name: str, policy: str, casts: _Casts) -> Any:
    import torch

    op = _op(name)
    autocast_keys = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU).add(
        torch._C.DispatchKey.AutocastCUDA
    )
    dtype_at = next((i for i, a in enumerate(op._schema.arguments) if a.name == "dtype"), None)

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        if policy == "fallthrough":  # CUDA has no kernel: the op runs uncast, its parts still autocast
            return op.redispatch(keyset.remove(torch._C.DispatchKey.AutocastCPU), *args, **kwargs)
        if policy == "banned":
            raise RuntimeError(
                "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast "
                "(CUDA autocast refuses them: aten/src/ATen/autocast_mode.cpp binary_cross_entropy_banned)"
            )
        lower = torch.get_autocast_dtype("cpu")
        with torch._C._ExcludeDispatchKeyGuard(autocast_keys):
            if policy == "fp32_set_opt_dtype":
                if args and _eligible(args[0]) and dtype_at is not None:
                    if dtype_at < len(args):
                        if args[dtype_at] is None:
                            args = (*args[:dtype_at], torch.float32, *args[dtype_at + 1 :])
                    elif kwargs.get("dtype") is None:
                        kwargs = {**kwargs, "dtype": torch.float32}
                return op(*args, **kwargs)
            if policy == "fp32_append_dtype":
                out_type = torch.float32 if _eligible(args[0]) else args[0].dtype
                return _op(_FP32_APPEND_DTYPE[name])(*_positional(op, args, kwargs), dtype=out_type)
            to = {"lower_precision_fp": lower, "fp32": torch.float32}.get(policy)
            if to is None:  # promote
                to = _promote_type(lower, [*args, *kwargs.values()])
            args = tuple(casts.cast(to, a, lower) for a in args)
            kwargs = {k: casts.cast(to, v, lower) for k, v in kwargs.items()}
            return op(*args, **kwargs)

    return kernel


def overrides() -> dict[str, str]:
    """{op: policy} of the AutocastCPU kernels `cuda_policy` registers (see the module docstring)."""
    cpu = registrations("AutocastCPU")
    out = {n: p for n, p in CUDA_POLICY.items() if not (p == "lower_precision_fp" and n in cpu)}
    out.update({n: "fallthrough" for n in cpu - set(CUDA_POLICY)})
    return out


@contextlib.contextmanager
def cuda_policy() -> Iterator[None]:
    """While inside: CPU autocast casts every op as CUDA autocast would (the dtype stays the CPU region's)."""
    import torch

    lib = torch.library.Library("aten", "IMPL")
    casts = _Casts()
    clear = torch.clear_autocast_cache

    def clear_both() -> None:  # torch/amp/autocast_mode.py:349 (__exit__): the outermost region clears
        casts.cache.clear()
        clear()

    torch.clear_autocast_cache = clear_both
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
            for name, policy in overrides().items():
                lib.impl(name, _kernel(name, policy, casts), "AutocastCPU", with_keyset=True)
        yield
    finally:
        torch.clear_autocast_cache = clear
        casts.cache.clear()
        lib._destroy()


def probe_cuda_dtype(name: str, *args: Any, autocast: Any = None) -> Any:
    """The output dtype (or dtypes) of the installed torch's compiled AutocastCUDA kernel for `name`,
    called on fake CUDA copies of the given CPU tensors (nothing is computed; no GPU is needed)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    before = torch.get_autocast_dtype("cuda")
    if autocast is not None:
        torch.set_autocast_dtype("cuda", autocast)
    try:

        def fake(a: Any) -> Any:
            if isinstance(a, (list, tuple)):
                return type(a)(fake(x) for x in a)
            return torch.empty(a.shape, dtype=a.dtype, device="cuda") if isinstance(a, torch.Tensor) else a

        with FakeTensorMode(allow_non_fake_inputs=True):
            cuda = [fake(a) for a in args]
            out = _op(name).redispatch(torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCUDA), *cuda)
    finally:
        torch.set_autocast_dtype("cuda", before)
    if isinstance(out, (tuple, list)):
        return tuple(o.dtype for o in out)
    return out.dtype
