"""Options declared once, with one meaning on every command that takes them: --resume, --overwrite,
--skip-corrupt, and the accelerator options (--device, --precision, --compile, --channels-last, --gpus-per-trial)."""

from __future__ import annotations

from typing import Annotated

import typer

ResumeOption = Annotated[
    bool, typer.Option("--resume", help="Continue an interrupted command from <OUT>.work (keep a finished OUT).")
]
OverwriteOption = Annotated[bool, typer.Option("--overwrite", help="Delete OUT and <OUT>.work and start over.")]
SkipCorruptOption = Annotated[bool, typer.Option("--skip-corrupt", help="Skip (and count) corrupt images.")]

DeviceOption = Annotated[
    str,
    typer.Option("--device", metavar="auto|cpu|cuda|cuda:N", help="Where models compute (auto: CUDA when present)."),
]
PrecisionOption = Annotated[
    str,
    typer.Option(
        "--precision", metavar="auto|fp32|bf16", help="auto: bf16 autocast on CUDA, fp32 on the CPU (unchanged)."
    ),
]
CompileOption = Annotated[
    bool,
    typer.Option("--compile/--no-compile", metavar="", help="torch.compile the models (pays off on long GPU runs)."),
]
ChannelsLastOption = Annotated[
    str, typer.Option("--channels-last", metavar="auto|on|off", help="NHWC memory format (auto: on for CUDA).")
]
GpusPerTrialOption = Annotated[
    float,
    typer.Option(
        "--gpus-per-trial",
        min=0.0,
        metavar="N",
        help="Ray: GPUs each run/trial reserves (fractional shares a GPU; 0: none).",
    ),
]
