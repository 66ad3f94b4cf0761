"""The accelerator settings every workflow that trains or evaluates takes: device, precision, compile, ...

The command line declares them once (`lifelong.cli.options`); the values reach `accelerator_from`, which checks
them and makes the accelerator this process's (or, for a run, the RunSpec carries them to each worker).
"""

from __future__ import annotations

from lifelong.core.errors import UsageError

_SWITCH = {"auto": None, "on": True, "off": False}


def accelerator_specs(device: str, precision: str, compile: bool, channels_last: str) -> dict:
    """The checked specs as RunSpec / Accelerator fields; a ValueError naming the bad one."""
    from lifelong.training.devices import Accelerator

    if channels_last not in _SWITCH:
        raise UsageError(f"--channels-last {channels_last!r}: give auto, on or off")
    specs = {"device": device, "precision": precision, "compile": compile, "channels_last": _SWITCH[channels_last]}
    Accelerator(**specs)  # type: ignore[arg-type]  # checks the spelling of device and precision
    return specs


def check_ray_gpus(executor: str, device: str, gpus_per_trial: float) -> None:
    """A ValueError when Ray would hide the GPU that `--device` asks for (it hides GPUs a run does not reserve)."""
    if executor == "ray" and device.strip().lower().startswith("cuda") and not gpus_per_trial:
        raise UsageError(
            f"--device {device} with --executor ray needs --gpus-per-trial > 0: Ray hides the GPUs from runs that "
            "reserve none (e.g. --gpus-per-trial 1, or 0.5 to share a GPU between two runs)"
        )


def accelerator_from(device: str, precision: str, compile: bool, channels_last: str):  # noqa: ANN201
    """Make these options this process's accelerator (checks the device exists here) and return it."""
    from lifelong.training.devices import Accelerator, use_accelerator

    return use_accelerator(Accelerator(**accelerator_specs(device, precision, compile, channels_last)))
