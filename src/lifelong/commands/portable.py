"""Portable numbers: the same command and seed give the same numbers on any x86-64 CPU with AVX2, Intel or AMD,
AVX2 or AVX-512 (docs/run.md#portable-numbers).

Beside the code and the thread count, what decides a CPU run's float results is which kernels the libraries pick
for the CPU they find: ATen's vectorised kernels (its CPU capability), oneDNN's convolutions (instruction set and
blockings from the CPU's cache sizes), NNPACK's (blockings from cache sizes), MKL's GEMM code path, numpy's SIMD
dispatch and OpenBLAS's kernels. Portable mode pins each: ATen at AVX2, convolutions on ATen + MKL's GEMM (oneDNN
and NNPACK off), MKL on its COMPATIBLE branch (the one conditional-numerical-reproducibility branch Intel documents
for Intel and non-Intel CPUs alike: SSE2, no approximate reciprocals), numpy at X86_V3 (AVX2) and OpenBLAS at
Haswell. Threads stay `--threads`: the same count gives the same numbers, as in the default mode.

The libraries read their variables once, as they load or first compute, so `enable()` must come before numpy loads
and before torch computes: the `lifelong` command does it first thing (LIFELONG_PORTABLE=1, or `run --portable`);
from Python, call `enable()` before importing numpy or torch (or start Python with the variables set). `ensure()`
then switches torch's own flags and checks that the mode took: the CPU capability in use, and a small fixed
computation (a convolution net's forward and backward, GEMMs, numpy's float64 maths) whose bits must equal those
recorded for the pinned torch and this numpy. This module imports nothing heavy at load time.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

ENV_VAR = "LIFELONG_PORTABLE"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")

# What the libraries read as they start. Every value overrides the caller's own (ATEN_CPU_CAPABILITY=avx512 set
# by hand does not survive portable mode).
ENVIRONMENT = {
    "ATEN_CPU_CAPABILITY": "avx2",  # ATen's vectorised kernels: the AVX2 build on AVX2 and AVX-512 CPUs alike
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN is off for convolutions (ensure()); whatever else calls it stays AVX2
    "MKL_CBWR": "COMPATIBLE",  # MKL's GEMM: the branch that gives the same bits on Intel and AMD
    "MKL_DYNAMIC": "FALSE",  # MKL and OpenMP use exactly the threads torch asks for
    "OMP_DYNAMIC": "FALSE",
    "OPENBLAS_CORETYPE": "Haswell",  # numpy's and scipy's OpenBLAS: the AVX2 kernels and blockings everywhere
}
# numpy's SIMD dispatch above AVX2 (its AVX-512 float64 exp, log, ... round differently): names by numpy version.
_NUMPY_ABOVE_AVX2 = "X86_V4 AVX512_ICL AVX512_SPR"  # numpy >= 2.4 groups x86 features by level
_NUMPY_ABOVE_AVX2_BEFORE_2_4 = (
    "AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
)

# sha256 prefixes of `fingerprint()` in portable mode, by library, version, OS and machine. A CPU that computes
# these bits otherwise would not give the docs' portable numbers; a version not listed is not checked.
REFERENCE = {
    ("torch", "2.13.0+cpu", "linux", "x86_64"): "75d52b77eb11f39f",
    ("numpy", "2.4.6", "linux", "x86_64"): "1ee084562d1da955",
}

_state = {"enabled": False}
_TOO_LATE = (
    f"The mode must be on before numpy loads and torch computes: {ENV_VAR}=1 in the environment of `lifelong`, or, "
    "from Python, lifelong.commands.portable.enable() before importing numpy or torch"
)


def requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether LIFELONG_PORTABLE asks for portable mode (1, true, yes, on; unset, empty, 0, false, no, off: not)."""
    value = environ.get(ENV_VAR, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    from lifelong.core.errors import UsageError

    raise UsageError(f"{ENV_VAR}={environ[ENV_VAR]!r} is not a yes or no; set it to 1 (portable mode) or 0 (default)")


def active() -> bool:
    """Whether this process has switched to portable mode (it cannot switch back: the libraries have loaded)."""
    return _state["enabled"]


def enable() -> None:
    """Switch this process to portable mode: set the variables the math libraries read as they load.

    Call it before numpy loads and before torch computes anything; `ensure()` checks that it came in time. Child
    processes (Ray workers started from here, subprocesses) inherit the mode through the environment.
    """
    _check_cpu()
    os.environ.update(ENVIRONMENT)
    os.environ["NPY_DISABLE_CPU_FEATURES"] = _numpy_features_above_avx2()
    os.environ[ENV_VAR] = "1"
    _state["enabled"] = True


def enable_early(argv: list[str]) -> None:
    """The `lifelong` command's first step: portable mode on when LIFELONG_PORTABLE=1 or the command is `run
    --portable`, before anything imports numpy or torch (typer parses `--portable` later, by then too late).

    Never raises: a bad LIFELONG_PORTABLE value or an unsupported CPU is said by `ensure()` (or the option parser)
    through the command's error handling.
    """
    try:
        if requested() or _asks_run_portable(argv):
            enable()
    except ValueError:  # UsageError: said again where the command handles errors
        return


def _asks_run_portable(argv: list[str]) -> bool:
    """Whether `lifelong ARGV` is `run ... --portable ...` (options before `run` and anything after `--` aside)."""
    words = argv[: argv.index("--")] if "--" in argv else list(argv)
    commands = [w for w in words if not w.startswith("-")]
    return bool(commands) and commands[0] == "run" and "--portable" in words


def ensure() -> dict[str, Any]:
    """Portable mode for the work about to start: enable() if not yet, torch's flags, then the check; returns
    `describe()`. Raises UsageError when the mode cannot hold in this process (too late, or an unsupported CPU)."""
    from lifelong.core.errors import UsageError

    if not active():
        enable()
    import torch

    torch.backends.mkldnn.enabled = False  # convolutions on ATen's im2col + MKL GEMM, not oneDNN's blockings
    torch.backends.nnpack.set_flags(False)  # NNPACK blocks its convolutions by the CPU's cache sizes
    capability = torch.backends.cpu.get_cpu_capability()
    if capability != "AVX2":
        raise UsageError(
            f"portable mode needs torch's AVX2 kernels, but this process runs its {capability} ones. {_TOO_LATE}"
        )
    found = describe()
    differ = [name for name, verdict in found["reference"].items() if verdict == "differs"]
    if differ:
        seen = ", ".join(f"{name} {found['fingerprint'][name]}" for name in differ)
        raise UsageError(
            f"portable mode is not in effect: the fingerprint differs from the reference ({seen}). {_TOO_LATE}; "
            "if it was, this CPU computes differently even so, and its numbers are not comparable with the docs'"
        )
    return found


def ensure_if_requested() -> None:
    """`ensure()` when LIFELONG_PORTABLE asks for portable mode (raising UsageError for a value that is no yes or no):
    what the `lifelong` command does before any command, so that every command computes in the mode."""
    if requested():
        ensure()


def describe() -> dict[str, Any]:
    """What decides this process's numbers, for run.json: the mode, torch's kernels and switches, MKL's branch,
    the threads, numpy's dispatch, OpenBLAS's kernels, the C library, what the CPU offers, and the fingerprint."""
    import numpy as np
    import torch

    prints = fingerprint()
    return {
        "portable": active(),
        "torch": torch.__version__,
        "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "mkldnn_enabled": bool(torch.backends.mkldnn.enabled),
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "all"),
        "nnpack_enabled": bool(torch._C._get_nnpack_enabled()),
        "mkl_cbwr": os.environ.get("MKL_CBWR", "off"),
        "threads": torch.get_num_threads(),
        "numpy": np.__version__,
        "numpy_simd": _numpy_simd(),
        "openblas_core": _openblas_core(),
        "libc": " ".join(platform.libc_ver()).strip() or None,  # scalar exp, log, sin... come from its libm
        "cpu_offers": cpu_offers(),
        "fingerprint": prints,
        "reference": _verdicts(prints, {"torch": str(torch.__version__), "numpy": np.__version__}) if active() else {},
    }


def fingerprint() -> dict[str, str]:
    """sha256 prefixes of a small fixed computation: torch (two convolutions with batch norm, pooling, a linear
    layer, log-softmax, backward; a GEMM) and numpy (float64 exp, log1p, a GEMM, norms). No random numbers drawn."""
    import numpy as np
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the reference's thread count, whatever the run's
    try:
        torch_bits = _torch_bits()
    finally:
        torch.set_num_threads(threads)
    a = (np.arange(64 * 300) * 0.6180339887498949 % 1.0 - 0.5).reshape(64, 300)
    b = (np.arange(300 * 10) * 0.4142135623730950 % 1.0 - 0.5).reshape(300, 10)
    t = np.linspace(-3.0, 3.0, 1001)
    digest = hashlib.sha256()
    for array in (np.exp(t), np.log1p(t + 3.5), a @ b, np.linalg.norm(a, axis=1)):
        digest.update(np.ascontiguousarray(array).tobytes())
    return {"torch": torch_bits, "numpy": digest.hexdigest()[:16]}


def _torch_bits() -> str:
    """The torch half of `fingerprint()`: a small convolution net's logits, loss and gradients, and a GEMM."""
    import torch
    import torch.nn.functional as F

    with torch.enable_grad():
        x = _spread(16, 3, 16, 16, scale=2.0)
        w1 = _spread(8, 3, 3, 3, scale=0.6).requires_grad_()
        w2 = _spread(8, 8, 3, 3, scale=0.3).requires_grad_()
        fc = _spread(10, 8, scale=0.5).requires_grad_()
        h = F.relu(F.batch_norm(F.conv2d(x, w1, padding=1), None, None, training=True))
        h = F.conv2d(F.max_pool2d(h, 2), w2, padding=1, stride=2)
        logits = F.linear(F.adaptive_avg_pool2d(h, 1).flatten(1), fc)
        loss = -F.log_softmax(logits, dim=1)[torch.arange(16), torch.arange(16) % 10].mean()
        loss.backward()
        gemm = _spread(64, 300, scale=1.0) @ _spread(300, 10, scale=1.0)
    digest = hashlib.sha256()
    for tensor in (logits, loss, w1.grad, w2.grad, fc.grad, gemm):
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def _spread(*shape: int, scale: float) -> Any:
    """A float32 tensor of `shape` spread evenly over [-scale/2, scale/2) (the golden-ratio sequence), no RNG."""
    import math

    import torch

    golden = torch.arange(math.prod(shape), dtype=torch.float64).mul_(0.6180339887498949).frac_().sub_(0.5)
    return golden.mul_(scale).to(torch.float32).reshape(shape)


def _verdicts(prints: dict[str, str], versions: dict[str, str]) -> dict[str, str]:
    """Per library: matches, differs, or unchecked (no reference for its version, this OS and this machine)."""
    found = {}
    for name, value in prints.items():
        expected = REFERENCE.get((name, versions[name], sys.platform, platform.machine()))
        found[name] = "unchecked" if expected is None else "matches" if value == expected else "differs"
    return found


def cpu_offers() -> str:
    """The widest vector instructions this CPU offers (Linux's /proc/cpuinfo flags): AVX-512, AVX2, or older."""
    flags = _cpu_flags()
    if flags is None:
        return "unknown"
    if "avx512f" in flags:
        return "AVX-512"
    return "AVX2" if {"avx2", "fma"} <= flags else "below AVX2"


def _cpu_flags() -> set[str] | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def _check_cpu() -> None:
    """Portable mode is for x86-64 CPUs with AVX2 and FMA (Intel since Haswell, AMD since Zen).

    The error is imported only to be raised: lifelong.core loads numpy, which must not load before enable()."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        from lifelong.core.errors import UsageError

        raise UsageError(f"portable mode is for x86-64 CPUs with AVX2; this machine is {machine}: run without it")
    if cpu_offers() == "below AVX2":
        from lifelong.core.errors import UsageError

        raise UsageError(
            "portable mode needs a CPU with AVX2 and FMA (Intel since 2013, AMD since 2017): run without it"
        )


def _numpy_features_above_avx2() -> str:
    """NPY_DISABLE_CPU_FEATURES for the installed numpy (read from its metadata: numpy must not load yet)."""
    try:
        major, minor = (int(part) for part in metadata.version("numpy").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return _NUMPY_ABOVE_AVX2
    return _NUMPY_ABOVE_AVX2 if (major, minor) >= (2, 4) else _NUMPY_ABOVE_AVX2_BEFORE_2_4


def _numpy_simd() -> list[str]:
    """numpy's SIMD targets in use beyond its baseline (e.g. X86_V3; X86_V4 and AVX512_* on AVX-512)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


def _openblas_core() -> str | None:
    """The kernels numpy's OpenBLAS runs (threadpoolctl, a dependency of scikit-learn), or None if not found."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    cores = [str(info.get("architecture")) for info in threadpool_info() if info.get("internal_api") == "openblas"]
    return ", ".join(sorted(set(cores))) or None


__all__ = [
    "ENVIRONMENT",
    "ENV_VAR",
    "active",
    "describe",
    "enable",
    "enable_early",
    "ensure",
    "ensure_if_requested",
    "fingerprint",
    "requested",
]
