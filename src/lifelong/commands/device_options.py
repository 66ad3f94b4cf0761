"""The accelerator settings every workflow that trains or evaluates takes: device, precision, compile, ...

The command line declares them once (`lifelong.cli.options`); the values reach `accelerator_from`, which checks
them and makes the accelerator this process's (or, for a run, the RunSpec carries them to each worker).
"""

from __future__ import annotations

from lifelong.core.errors import UsageError

_SWITCH = {"auto": None, "on": True, "off": False}


def accelerator_specs(device: str, precision: str, compile: bool, channels_last: bool | str | None) -> dict:
    """The checked specs as RunSpec / Accelerator fields; a UsageError naming the bad one. `channels_last` is
    `--channels-last`'s word (auto, on, off) or already a field value (None, True, False)."""
    from lifelong.training.devices import Accelerator

    if channels_last is not None and not isinstance(channels_last, bool):
        if channels_last not in _SWITCH:
            raise UsageError(f"--channels-last {channels_last!r}: give auto, on or off")
        channels_last = _SWITCH[channels_last]
    specs = {"device": device, "precision": precision, "compile": compile, "channels_last": channels_last}
    try:
        Accelerator(**specs)  # type: ignore[arg-type]  # checks the spelling of device and precision
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return specs


def check_ray_gpus(executor: str, device: str, gpus_per_trial: float) -> None:
    """A ValueError when Ray would hide the GPU that `--device` asks for (it hides GPUs a run does not reserve)."""
    if executor == "ray" and device.strip().lower().startswith("cuda") and not gpus_per_trial:
        raise UsageError(
            f"--device {device} with --executor ray needs --gpus-per-trial > 0: Ray hides the GPUs from runs that "
            "reserve none (e.g. --gpus-per-trial 1, or 0.5 to share a GPU between two runs)"
        )


def accelerator_from(device: str, precision: str, compile: bool, channels_last: bool | str | None):  # noqa: ANN201
    """Make these options this process's accelerator (checks the device exists here) and return it; a UsageError
    naming what cannot be used."""
    from lifelong.training.devices import Accelerator, use_accelerator

    accelerator = Accelerator(**accelerator_specs(device, precision, compile, channels_last))
    try:
        return use_accelerator(accelerator)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
