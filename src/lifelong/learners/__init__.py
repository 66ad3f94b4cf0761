"""Learners by name, registered as entry points of the group `lifelong.learners` (the built-ins too).

Entries are import paths, resolved on use, so that listing or using a torch-free learner never imports torch.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any

from lifelong.core.learner import Learner
from lifelong.core.plugins import LEARNERS as GROUP
from lifelong.core.plugins import Registry
from lifelong.core.suggest import did_you_mean
from lifelong.learners.options import OptionError, option_example, option_help, option_type, same_run_options

LEARNERS = Registry(GROUP, "learner", listing="lifelong learners")


def learner_class(name: str) -> type:
    """The class registered as `name`."""
    return LEARNERS.load(name)


def make_learner(name: str, **options: Any) -> Learner:
    """Build the learner registered as `name`, passing `options` to its constructor."""
    cls = learner_class(name)
    try:
        return cls(**options)
    except OptionError as exc:
        raise ValueError(exc.for_learner(name)) from exc
    except TypeError as exc:
        known = [row["name"] for row in learner_options(name)]
        unknown = [key for key in options if key not in known] or sorted(options)
        raise ValueError(
            f"unknown learner option {unknown[0]!r} for --learner {name}{did_you_mean(unknown[0], known)}; see "
            f"`lifelong learners {name}`"
        ) from exc


def _option_schema(cls: type) -> type | None:
    """The dataclass whose fields are `cls`'s `-o` options: its `config_class`, its `config` parameter's
    annotation, or `cls` itself when it is a dataclass; None when it has none (options are its keywords)."""
    config = getattr(cls, "config_class", None)
    if dataclasses.is_dataclass(config):
        return config
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # noqa: BLE001  (an annotation this module cannot resolve: fall back to the signature)
        hints = {}
    for option in typing.get_args(hints.get("config")) or (hints.get("config"),):
        if dataclasses.is_dataclass(option):
            return option
    return cls if dataclasses.is_dataclass(cls) else None


def learner_options(name: str) -> list[dict[str, str]]:
    """The `-o` options of the learner registered as `name`: name, type, default and help (plain text)."""
    cls = learner_class(name)
    schema = _option_schema(cls)
    rows = []
    if schema is None:
        for key, param in inspect.signature(cls).parameters.items():
            if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
                continue
            default = None if param.default is param.empty else param.default
            annotation = param.annotation if param.annotation is not param.empty else type(default)
            rows.append({"name": key, "type": option_type(annotation), "default": option_example(default), "help": "-"})
        return rows
    hints = typing.get_type_hints(schema)
    defaults = schema() if schema is not cls else None
    for field in dataclasses.fields(schema):
        if not field.init:
            continue
        if defaults is not None:
            default = getattr(defaults, field.name)
        elif field.default is not dataclasses.MISSING:
            default = field.default
        else:
            default = None
        rows.append(
            {
                "name": field.name,
                "type": option_type(hints.get(field.name, type(default))),
                "default": "-" if default is None else option_example(default),
                "help": option_help(field.name, schema),
            }
        )
    return sorted(rows, key=lambda row: row["name"])


def run_options(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options of a run of the learner registered as `name` as its run id spells them (renamed options under
    their former names, `lifelong.learners.options.same_run_options`): either spelling names one run. Options of a
    learner that is not registered are returned as given (the run is refused elsewhere, in CLI words)."""
    if not options:
        return dict(options)
    try:
        schema = _option_schema(learner_class(name))
    except Exception:  # noqa: BLE001  (an unknown or broken learner: `make_learner` says what is wrong)
        return dict(options)
    return same_run_options(schema, options)


def describe_learners() -> list[tuple[str, str]]:
    """(name, one-line description) of every registered learner, sorted by name."""
    described = []
    for name in sorted(LEARNERS.names()):
        doc = (learner_class(name).__doc__ or "").strip()
        described.append((name, doc.splitlines()[0] if doc else "(no description)"))
    return described


__all__ = ["LEARNERS", "describe_learners", "learner_class", "learner_options", "make_learner", "run_options"]
