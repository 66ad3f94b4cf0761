"""Learner options (`-o KEY=VALUE`) checked at the boundary: known names, values of the declared type."""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import json
import re
import textwrap
import types
import typing
import warnings
from collections.abc import Mapping
from typing import Any

from lifelong.core.errors import UsageError
from lifelong.core.suggest import did_you_mean


class OptionError(UsageError):
    """A `-o` option a learner does not take (`value` unset) or a value of the wrong type; `for_learner(name)`
    words it for the command line."""

    def __init__(self, message: str, key: str, known: list[str], expected: str = "", default: Any = None) -> None:
        super().__init__(message)
        self.key, self.known, self.expected, self.default = key, known, expected, default
        self.value: Any = None

    def for_learner(self, name: str) -> str:
        see = f"see `lifelong learners {name}`"
        if not self.expected:
            return (
                f"unknown learner option {self.key!r} for --learner {name}{did_you_mean(self.key, self.known)}; {see}"
            )
        return (
            f"--learner {name}: option {self.key}={_example(self.value)} must be {self.expected} (default "
            f"{_example(self.default)}); e.g. -o {self.key}={_example(self.default)}; {see}"
        )


def option_type(annotation: Any) -> str:
    """An option's type in short CLI words: int, float, bool, text, list, null (alternatives joined by ' or ')."""
    short = {"a whole number": "int", "a number": "float", "a string": "text", "a list": "list"}
    text = _describe(annotation).replace("true or false", "bool")
    return " or ".join(short.get(part, part) for part in text.split(" or "))


def option_help(name: str, schema: type) -> str:
    """The help of option `name` of the config class `schema`: the docstring under its field (the nearest along the
    class's bases, so a subclass may say it anew), else the sentences of a class docstring that begin with
    `` `name` ``; whitespace collapsed, backquotes dropped; '-' when nothing documents it."""
    for cls in schema.__mro__:
        text = _field_docs(cls).get(name)
        if text:
            return text
    for cls in schema.__mro__:
        doc = " ".join((inspect.getdoc(cls) or "").split()) if "__doc__" in vars(cls) else ""
        said = [s for s in re.split(r"(?<=\.)\s+(?=[`A-Z])", doc) if s.startswith(f"`{name}`")]
        if said:
            return " ".join(said).replace("`", "")
    return "-"


@functools.cache
def _field_docs(cls: type) -> dict[str, str]:
    """{field: the string literal right under its annotated assignment} in `cls`'s own body (attribute docstrings,
    as editors and Sphinx read them); {} when its source cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    node = tree.body[0] if tree.body else None
    if not isinstance(node, ast.ClassDef):
        return {}
    docs = {}
    for field, after in zip(node.body, node.body[1:], strict=False):
        if not (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)):
            continue
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            docs[field.target.id] = " ".join(after.value.value.split())
    return docs


def option_example(value: Any) -> str:
    """`value` as it is written after `-o KEY=` (JSON-like: true, null, [1, 2])."""
    return _example(value)


class RenamedOptionWarning(FutureWarning):
    """An option given by its former name (a config's `option_aliases`): it still works, under its new name."""


_NOTED: set[str] = set()  # the renamed-option notes given in this process: each once, however many learners are built


def option_aliases(config_class: type | None) -> dict[str, str]:
    """{former name: name} of `config_class`'s renamed options (its `option_aliases` class attribute; {} if none)."""
    return dict(getattr(config_class, "option_aliases", None) or {})


def rename_options(config_class: type | None, options: Mapping[str, Any], *, note: bool = False) -> dict[str, Any]:
    """`options` with every former name (see `option_aliases`) replaced by its new name, in place; a ValueError if
    both names are given. `note`: warn (RenamedOptionWarning) for each former name used, once per process."""
    renamed = dict(options)
    for old, new in option_aliases(config_class).items():
        if old not in renamed:
            continue
        if new in renamed:
            raise ValueError(f"-o {old} is the former name of -o {new}: give -o {new} only")
        renamed = {new if key == old else key: value for key, value in renamed.items()}
        text = f"-o {old} is now -o {new} (the former name still works)"
        if note and text not in _NOTED:
            _NOTED.add(text)
            warnings.warn(text, RenamedOptionWarning, 3)
    return renamed


def same_run_options(config_class: type | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` as run ids spell them: a renamed option under its former name, so that a run given either name
    has one id and one folder, the folder of the runs made before the rename (a ValueError if both are given)."""
    aliases = option_aliases(config_class)
    if not aliases:
        return dict(options)
    former = {new: old for old, new in aliases.items()}
    return {former.get(key, key): value for key, value in rename_options(config_class, options).items()}


def configure(config_class: type, config: Any | None, options: dict, who: str) -> Any:
    """`config` (default: `config_class()`) with `options` applied; unknown options and mistyped values raise.

    Each value must match its field's annotation (an int field takes no 1.5 and no "abc"; a float field takes
    ints too); errors name the option, the value given and what it takes. A renamed option's former name (the
    class's `option_aliases`) still works, with a RenamedOptionWarning.
    """
    config = config or config_class()
    if not isinstance(config, config_class):
        raise TypeError(f"{who} needs a {config_class.__name__}, got {type(config).__name__}")
    options = rename_options(config_class, options, note=True)
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    unknown = sorted(set(options) - set(fields))
    if unknown:
        key = unknown[0]
        raise OptionError(
            f"unknown {who} option {key!r}{did_you_mean(key, fields)}; known options: {', '.join(sorted(fields))}",
            key,
            sorted(fields),
        )
    hints = typing.get_type_hints(config_class)
    for name, value in options.items():
        expected = hints.get(name)
        if expected is not None and not _matches(value, expected):
            default = getattr(config, name)
            error = OptionError(
                f"{who} option {name}={value!r} must be {_describe(expected)} (default {_example(default)}); "
                f"e.g. -o {name}={_example(default)}",
                name,
                sorted(fields),
                _describe(expected),
                default,
            )
            error.value = value
            raise error
    try:
        return dataclasses.replace(config, **options) if options else config
    except (TypeError, ValueError) as exc:
        given = " ".join(f"-o {key}={_example(value)}" for key, value in options.items())
        raise ValueError(f"{given}: {exc}") from exc


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
        return "'[" + ", ".join(json.dumps(v) if isinstance(v, str) else str(v) for v in default) + "]'"  # JSON
    return str(default)


@dataclasses.dataclass(frozen=True)
class FineTuneOptions:
    """How a learner fine-tunes a pretrained encoder (`lifelong.training.encoders.finetune`)."""

    finetune: str = "full"
    """How the encoder trains: frozen (features only), full (every layer group) or partial (all but the first
    frozen_groups groups)."""
    frozen_groups: int | None = None
    """The encoder's layer groups frozen from the input side; given alone, it implies finetune=partial."""
    lr_multipliers: list[float] | str | None = None
    """One learning-rate multiplier per trainable layer group, as a list or as commas (e.g. 1,2,4,10,20)."""
    head_lr_multiplier: float | None = None
    """The new head's learning-rate multiplier (unset: the last group's)."""

    def fine_tune_choice(self, explicit_mode: bool = True) -> Any:
        """The options as a `FineTune` (CLI-worded ValueError if they contradict each other); `frozen_groups`
        without an explicit `finetune` means partial."""
        from lifelong.training.encoders.finetune import FineTune  # torch: only when a learner trains an encoder

        mode = self.finetune
        if self.frozen_groups and mode == "full" and not explicit_mode:
            mode = "partial"
        return FineTune.from_options(mode, self.frozen_groups, self.lr_multipliers, self.head_lr_multiplier)

    def fine_tune_is_default(self) -> bool:
        """Whether the options leave the learner's own behaviour (a full fine-tune at one learning rate)."""
        defaults = FineTuneOptions()
        return all(getattr(self, f.name) == getattr(defaults, f.name) for f in dataclasses.fields(FineTuneOptions))
