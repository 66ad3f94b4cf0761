"""Named sizes of the long commands (`--preset quick|full`; the facts stream's `-s preset=`): a preset sets the
defaults of the options it names, and an option given explicitly still wins. `full` is what each command does
without a preset (the sizes behind the documented headline figures); `quick` finishes in a few minutes on 2 cores
with a table to compare with the one in the docs. A spec field left at None takes its preset's value
(`preset_values`); the command records the preset beside its other settings, and `--resume` refuses another one.
The facts stream's sizes are a stream option's, `lifelong.suites.facts.PRESET_SIZES`, under the same names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lifelong.core.errors import ResumeRefused, UsageError
from lifelong.suites.cog import SEEN_DRAWS

PRESETS = ("quick", "full")
DEFAULT = "full"

# command -> preset -> {spec field: value}; the options' CLI names are in OPTIONS
SIZES: dict[str, dict[str, dict[str, Any]]] = {
    "bench build-zoo": {
        "full": {"models": 120, "test_samples": 2000},
        "quick": {"models": 20, "test_samples": 250},
    },
    "bench compare": {
        "full": {"seeds": 10, "budgets": "10,30,100,1000"},
        "quick": {"seeds": 3, "budgets": "10,30,100"},
    },
    "cog pretrain": {
        "full": {"epochs": 30},
        "quick": {"epochs": 4},
    },
    "cog run": {
        "full": {"seeds": 5, "probe": "reference", "seen_draws": SEEN_DRAWS},
        "quick": {"seeds": 1, "probe": "fast", "seen_draws": 1},
    },
}
OPTIONS = {"test_samples": "--test-samples", "seen_draws": "--seen-draws"}  # the others: --<field>
PRESET_HELP = "Named size: quick (minutes on 2 cores) or full (the default); options given explicitly win."


def check_preset(preset: str | None) -> str:
    """The preset's name (None: `full`), or a UsageError naming the presets."""
    from lifelong.core.suggest import did_you_mean

    if preset is None:
        return DEFAULT
    if preset not in PRESETS:
        raise UsageError(f"unknown --preset {preset!r}{did_you_mean(preset, PRESETS)}; choose {' or '.join(PRESETS)}")
    return preset


def preset_values(command: str, preset: str | None, given: Mapping[str, Any]) -> dict[str, Any]:
    """The values `preset` gives the fields of `command`'s spec that were not given (None in `given`)."""
    sizes = SIZES[command][check_preset(preset)]
    return {name: value for name, value in sizes.items() if given.get(name) is None}


def preset_help(command: str, field: str, text: str) -> str:
    """An option's help with its default under each preset: "Models in the zoo. Default 120; --preset quick: 20."."""
    sizes = SIZES[command]
    quick = ", ".join(f"--preset {p}: {sizes[p][field]}" for p in PRESETS if p != DEFAULT)
    return f"{text.rstrip('.')}. Default {sizes[DEFAULT][field]}; {quick}."


def option(field: str) -> str:
    """A spec field's command-line option: `--test-samples` for test_samples."""
    return OPTIONS.get(field, "--" + field.replace("_", "-"))


def check_recorded(recorded: str | None, preset: str, what: str) -> None:
    """Refuse to resume `what`, made with the preset `recorded` (None: made before presets were recorded, not
    checked), under another `preset`."""
    if recorded is not None and recorded != preset:
        raise ResumeRefused(
            f"{what} was made with --preset {recorded}, not {preset}: add --preset {recorded} to resume it, "
            "--overwrite to start it over with this preset, or pick another output folder"
        )


def preset_table(command: str) -> str:
    """The docs' Markdown table of `command`'s presets: one row per option, a column per preset (docs/*.md hold it
    verbatim; tests/commands/test_presets.py checks that they still do)."""
    sizes = SIZES[command]
    lines = ["| option | " + " | ".join(f"`{p}`" for p in PRESETS) + " |", "|---" * (len(PRESETS) + 1) + "|"]
    for name in sizes[DEFAULT]:
        lines.append(f"| `{option(name)}` | " + " | ".join(str(sizes[p][name]) for p in PRESETS) + " |")
    return "\n".join(lines)


def apply_preset(spec: Any, command: str, keep: tuple[str, ...] = ()) -> None:
    """Resolve a frozen spec at construction: its `preset` (None: full) checked and set, and each of the preset's
    fields the caller left at None set to the preset's value (fields in `keep` stay as given)."""
    preset = check_preset(spec.preset)
    object.__setattr__(spec, "preset", preset)
    given = {name: getattr(spec, name) for name in SIZES[command][preset]}
    for name, value in preset_values(command, preset, given).items():
        if name not in keep:
            object.__setattr__(spec, name, value)
