"""Learner options (`-o KEY=VALUE`) checked at the boundary: known names, values of the declared type."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any


def configure(config_class: type, config: Any | None, options: dict, who: str) -> Any:
    """`config` (default: `config_class()`) with `options` applied; unknown options and mistyped values raise.

    Each value must match its field's annotation (an int field takes no 1.5 and no "abc"; a float field takes
    ints too); errors name the option, the value given and what it takes.
    """
    config = config or config_class()
    if not isinstance(config, config_class):
        raise TypeError(f"{who} needs a {config_class.__name__}, got {type(config).__name__}")
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ValueError(f"unknown {who} option(s) {unknown}; known options: {sorted(fields)}")
    hints = typing.get_type_hints(config_class)
    for name, value in options.items():
        expected = hints.get(name)
        if expected is not None and not _matches(value, expected):
            raise ValueError(
                f"{who} option {name}={value!r} must be {_describe(expected)} (default {getattr(config, name)!r}); "
                f"e.g. -o {name}={_example(getattr(config, name))}"
            )
    try:
        return dataclasses.replace(config, **options) if options else config
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{who} options {options}: {exc}") from exc


def _alternatives(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _matches(value: Any, annotation: Any) -> bool:
    """Whether `value` (parsed from JSON or given in Python) fits `annotation`; unknown kinds of annotation pass."""
    for option in _alternatives(annotation):
        origin = typing.get_origin(option) or option
        if option is type(None):
            if value is None:
                return True
        elif origin is bool:
            if isinstance(value, bool):
                return True
        elif origin is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return True
        elif origin is float:
            if isinstance(value, int | float) and not isinstance(value, bool):
                return True
        elif origin is str:
            if isinstance(value, str):
                return True
        elif origin in (tuple, list):
            if isinstance(value, tuple | list):
                return True
        else:
            return True  # a type this check does not know (a Mapping, a class): the config validates it
    return False


def _describe(annotation: Any) -> str:
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "a string", type(None): "null"}
    parts = []
    for option in _alternatives(annotation):
        origin = typing.get_origin(option) or option
        parts.append(
            names.get(origin, "a list" if origin in (tuple, list) else getattr(origin, "__name__", str(origin)))
        )
    return " or ".join(parts)


def _example(default: Any) -> str:
    if isinstance(default, bool):
        return "true" if default else "false"
    if default is None:
        return "null"
    if isinstance(default, tuple | list):
        return "'[" + ", ".join(repr(v) if isinstance(v, str) else str(v) for v in default) + "]'"
    return str(default)
