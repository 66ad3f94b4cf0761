"""What run.json records so that a figure can be reproduced: the config, the stream, the machine, the versions,
what decides the float results on this CPU (portable mode or not, the kernels and switches in use), and the sha256
of every file the run loads (manifest, checkpoints, encoders, CSV lists)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from lifelong.core.streams import Stream

PACKAGES = ("lifelong", "torch", "numpy", "scipy", "scikit-learn", "pillow", "ray")


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def loaded_files(config: dict[str, Any]) -> dict[str, str]:
    """sha256 of each file a run config names: the stream path, and learner or stream option values that are files."""
    candidates = [config.get("stream")]
    for options in (config.get("learner_options") or {}, config.get("stream_options") or {}):
        candidates.extend(options.values())
    files = {}
    for value in candidates:
        if isinstance(value, str) and value and Path(value).is_file():
            files[str(Path(value).resolve())] = sha256_file(value)
    return files


def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo, else platform.processor())."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(threads: int) -> dict[str, Any]:
    import torch  # the run imported it already; the count is torch's own

    return {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
    }


def _accelerator() -> dict[str, Any]:
    """The device, precision and speed options this run uses, as specs and as resolved here (GPU name)."""
    from lifelong.training.devices import current_accelerator

    return current_accelerator().describe()


def numerics() -> dict[str, Any]:
    """What decides the run's float results here: portable mode, ATen's CPU capability, oneDNN/MKL/NNPACK settings,
    threads, numpy's dispatch, OpenBLAS's kernels, what the CPU offers and a fingerprint (commands.portable)."""
    from lifelong.commands.portable import describe

    return describe()


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for package in PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found


def run_info(spec: Any, stream: Stream) -> dict[str, Any]:
    """The contents of run.json for `spec` (a RunSpec) over `stream`."""
    config = dataclasses.asdict(spec)
    return {
        "run_id": spec.run_id,
        "config": config,
        "seed": spec.seed,
        "stream": {
            "name": stream.name,
            "tasks": [t.key.to_dict() for t in stream.tasks],
            "eval_split": stream.eval_split,
            "meta_test_from_year": stream.meta_test_from_year,
            "evaluation": stream.evaluation,
            "protocol": stream.protocol,
            "metadata": json.loads(json.dumps(stream.metadata, default=str)),  # e.g. a fact stream's facts and split
        },
        "versions": versions(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": machine(spec.threads),
        "accelerator": _accelerator(),
        "numerics": numerics(),
        "files": loaded_files(config),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
