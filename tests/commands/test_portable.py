"""Portable mode (`lifelong run --portable`, LIFELONG_PORTABLE=1): the same numbers whatever the CPU offers.

One machine cannot be two CPUs, but the libraries can be told to use less than the CPU offers: a child process
that inherits ATEN_CPU_CAPABILITY=avx512, oneDNN's AVX-512 ISA and numpy's full dispatch computes like an AVX-512
machine, one that inherits the plain kernels, oneDNN's SSE4.1 and numpy without AVX2 like an old one. In portable
mode both must give the same bits (the mode overrides what they inherit); in the default mode they differ, which
shows the training below is sensitive to the kernels (and that a portable mode doing nothing would fail).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lifelong.commands import portable
from lifelong.commands.runner import RunSpec, execute
from lifelong.commands.runs_api import RunsSpec
from lifelong.core.errors import ResumeRefused, UsageError

# A tiny training with the toolkit's own pieces: textures drawn with numpy's float64 sin/cos, augmentation, a
# ResNet trained 3 SGD steps, its logits, and kNN votes on its features (numpy float64 GEMM). Prints one digest.
TRAINING = """
import hashlib, sys
if sys.argv[1] == "portable":
    from lifelong.commands import portable
    portable.enable()  # first: before numpy and torch load
import numpy as np
import torch
import torch.nn.functional as F
from lifelong.data.sources.builtin import textures
from lifelong.training.inputs import augment, to_input_tensor
from lifelong.training.models import resnet_mini
from lifelong.training.relatedness import knn_votes
if sys.argv[1] == "portable":
    portable.ensure()
torch.set_num_threads(1)
data = textures(n_per_class=4, seed=0, size=16)
images, labels = np.asarray(data.images), np.asarray(data.labels)
x, y = to_input_tensor(images), torch.as_tensor(labels)
model = resnet_mini(int(labels.max()) + 1, seed=0)
optimiser = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
generator = torch.Generator().manual_seed(0)
for _ in range(3):
    loss = F.cross_entropy(model(augment(x, generator)), y, label_smoothing=0.1)
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
model.eval()
with torch.no_grad():
    logits, features = model(x), model.features(x).numpy()
votes = knn_votes(features[::2], labels[::2], features[1::2], kind="multi-class", num_classes=int(labels.max()) + 1)
digest = hashlib.sha256(images.tobytes())
for array in (*(p.detach().numpy() for p in model.parameters()), logits.numpy(), votes):
    digest.update(array.tobytes())
print(digest.hexdigest())
"""
# What an AVX-512 machine offers, and what an old one does; portable mode must override both.
OFFERS_ALL = {"ATEN_CPU_CAPABILITY": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE", "NPY_DISABLE_CPU_FEATURES": ""}
OFFERS_LITTLE = {
    "ATEN_CPU_CAPABILITY": "default",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "MKL_CBWR": "SSE4_2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
}


def _env(extra: dict[str, str]) -> dict[str, str]:
    names = (portable.ENV_VAR, "NPY_DISABLE_CPU_FEATURES", *portable.ENVIRONMENT)
    return {**{k: v for k, v in os.environ.items() if k not in names}, "OMP_NUM_THREADS": "1", **extra}


def _digests(jobs: list[tuple[str, dict[str, str]]]) -> list[str]:
    """Run TRAINING once per (mode, inherited variables), side by side; each one's digest."""
    started = [
        subprocess.Popen(
            [sys.executable, "-c", TRAINING, mode], env=_env(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for mode, extra in jobs
    ]
    digests = []
    for job in started:
        out, err = job.communicate(timeout=300)
        assert job.returncode == 0, err.decode()[-3000:]
        digests.append(out.decode().strip())
    return digests


def test_portable_training_has_the_same_bits_whatever_the_cpu_offers():
    if portable.cpu_offers() not in ("AVX2", "AVX-512"):
        pytest.skip(f"portable mode needs an x86-64 CPU with AVX2 (this one: {portable.cpu_offers()})")
    portable_all, portable_little, default_all, default_little = _digests(
        [("portable", OFFERS_ALL), ("portable", OFFERS_LITTLE), ("default", OFFERS_ALL), ("default", OFFERS_LITTLE)]
    )
    assert default_all != default_little, "the training does not depend on the kernels: the test proves nothing"
    assert portable_all == portable_little


LATE = """
import sys, numpy, torch
from lifelong.commands import portable
(torch.ones(64, 300) @ torch.ones(300, 10)).exp()  # torch computes (MKL starts) before portable mode
portable.enable()
try:
    portable.ensure()
except ValueError as refused:
    print(type(refused).__name__, refused)
"""


def test_portable_mode_switched_on_after_torch_computed_is_refused():
    if portable.cpu_offers() not in ("AVX2", "AVX-512"):
        pytest.skip(f"portable mode needs an x86-64 CPU with AVX2 (this one: {portable.cpu_offers()})")
    done = subprocess.run([sys.executable, "-c", LATE], env=_env({}), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("UsageError"), done.stdout
    assert "LIFELONG_PORTABLE=1" in done.stdout and "before importing numpy or torch" in done.stdout


DEFAULT_IN_PORTABLE = """
import sys
from lifelong.commands import portable
portable.enable()
from lifelong.commands.runner import RunSpec, execute
try:
    execute(RunSpec(learner="nearest-mean", out=sys.argv[1], portable=False))
except ValueError as refused:
    print(type(refused).__name__, refused)
"""


def test_a_default_run_in_a_portable_process_is_refused(tmp_path):
    """The mode cannot be left once the libraries have loaded: a default run there would be mislabelled."""
    if portable.cpu_offers() not in ("AVX2", "AVX-512"):
        pytest.skip(f"portable mode needs an x86-64 CPU with AVX2 (this one: {portable.cpu_offers()})")
    command = [sys.executable, "-c", DEFAULT_IN_PORTABLE, str(tmp_path)]
    done = subprocess.run(command, env=_env({}), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("UsageError this process computes in portable mode"), done.stdout
    assert not (tmp_path / "mini-nearest-mean-seed0").exists()


def test_run_portable_records_what_decides_the_numbers(tmp_path):
    """`lifelong run --portable` end to end: the flag (seen before numpy loads), the check, run.json."""
    if portable.cpu_offers() not in ("AVX2", "AVX-512"):
        pytest.skip(f"portable mode needs an x86-64 CPU with AVX2 (this one: {portable.cpu_offers()})")
    command = [sys.executable, "-m", "lifelong.cli", "run", "--learner", "nearest-mean", "--out", str(tmp_path)]
    done = subprocess.run([*command, "--portable"], env=_env(OFFERS_ALL), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads((tmp_path / "mini-nearest-mean-seed0" / "run.json").read_text())
    numerics = info["numerics"]
    assert info["config"]["portable"] is True and numerics["portable"] is True
    assert numerics["aten_cpu_capability"] == "AVX2"
    assert not numerics["mkldnn_enabled"] and not numerics["nnpack_enabled"]
    assert numerics["mkl_cbwr"] == "COMPATIBLE" and numerics["onednn_max_cpu_isa"] == "AVX2"
    assert not [name for name in numerics["numpy_simd"] if "512" in name or name == "X86_V4"], numerics
    assert numerics["threads"] == 1 and numerics["cpu_offers"] in ("AVX2", "AVX-512")
    assert set(numerics["reference"].values()) <= {"matches", "unchecked"}, numerics


def test_a_default_run_records_its_kernels_and_keeps_its_run_id(tmp_path):
    spec = RunSpec(learner="nearest-mean", out=str(tmp_path), portable=False)
    assert spec.run_id == RunSpec(learner="nearest-mean", portable=True).run_id == "mini-nearest-mean-seed0"
    execute(spec)
    numerics = json.loads((tmp_path / spec.run_id / "run.json").read_text())["numerics"]
    assert numerics["portable"] is False and numerics["reference"] == {}
    assert {"aten_cpu_capability", "mkldnn_enabled", "mkl_cbwr", "threads", "fingerprint"} <= set(numerics)


def test_a_resume_in_the_other_mode_is_refused(tmp_path):
    first = RunSpec(learner="nearest-mean", out=str(tmp_path), stop_after=2, portable=False)
    execute(first)
    with pytest.raises(ResumeRefused, match="portable False -> True"):  # refused before the mode switches on
        execute(RunSpec(learner="nearest-mean", out=str(tmp_path), resume=True, portable=True))
    assert not portable.active()


def test_the_environment_variable_is_the_default(monkeypatch):
    monkeypatch.setenv("LIFELONG_PORTABLE", "1")
    assert RunsSpec().portable and RunSpec().portable and RunsSpec().run_specs()[0].portable
    monkeypatch.setenv("LIFELONG_PORTABLE", "0")
    assert not RunsSpec().portable
    monkeypatch.setenv("LIFELONG_PORTABLE", "maybe")
    with pytest.raises(UsageError, match="LIFELONG_PORTABLE='maybe' is not a yes or no"):
        RunSpec()


@pytest.mark.parametrize(
    ("argv", "asks"),
    [
        (["run", "--portable"], True),
        (["run", "--stream", "nevis-mini", "--portable", "--seeds", "3"], True),
        (["run"], False),
        (["streams", "--portable"], False),
        (["run", "--", "--portable"], False),
        ([], False),
    ],
)
def test_the_command_line_is_read_for_run_portable_before_numpy_loads(argv, asks):
    assert portable._asks_run_portable(argv) is asks


def test_portable_runs_are_cpu_runs_in_fp32(tmp_path):
    for options, said in (({"precision": "bf16"}, "--precision bf16"), ({"compile": True}, "--compile")):
        spec = RunSpec(learner="nearest-mean", out=str(tmp_path), portable=True, **options)
        with pytest.raises(UsageError, match=f"--portable is for CPU runs in fp32.*got {said}"):
            execute(spec)
    assert not portable.active() and not (Path(tmp_path) / "mini-nearest-mean-seed0").exists()
