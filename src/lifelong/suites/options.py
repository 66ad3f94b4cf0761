"""A stream's `-s KEY=VALUE` options: what `lifelong streams NAME` lists, and the check that names a typo.

A registered stream is a factory `(**options) -> Stream`; its options are its keyword parameters, plus those of
the builder it hands `**options` to (a built-in's builder is listed in FORWARDS; a plug-in's factory that takes
`**options` of its own is not checked). Options the run sets from its flags (`--final`, `--skip-corrupt`,
`--data-root`, `--allow-missing`) are accepted but not listed as `-s` options.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import Any

from lifelong.core.suggest import did_you_mean
from lifelong.suites.names import STREAMS, TEMPORAL_SOURCES, classify_stream

# set by the run's flags, not by -s; `defer_missing`, `variant` and `name` are internal
FROM_FLAGS = {"eval_split": "--final", "skip_corrupt": "--skip-corrupt", "data_root": "--data-root"}
FROM_FLAGS |= {"allow_missing": "--allow-missing"}
INTERNAL = {"defer_missing", "variant", "name", "self", "root", "path", "source", "cache"}

# where a built-in factory's **options go (entry point value -> "module:callable")
FORWARDS = {
    "lifelong.suites.builtin_streams:mini": ["lifelong.suites.mini:mini_stream"],
    "lifelong.suites.builtin_streams:nevis_mini": ["lifelong.suites.nevis_mini:nevis_mini_stream"],
    "lifelong.suites.builtin_streams:_nevis": ["lifelong.suites.nevis:nevis_stream"],
    "lifelong.suites.cog:cog": ["lifelong.suites.cog:cog_stream"],
    "lifelong.suites.cog:cog_mini": ["lifelong.suites.cog:cog_stream"],
    "lifelong.suites.facts:facts_mini": ["lifelong.data.sources.facts_mini:FactsMiniOptions"],
    "lifelong.suites.clear:clear_mini_source": ["lifelong.data.sources.drifting:ClearMini"],
    "lifelong.suites.clear:clear_folder_source": ["lifelong.data.sources.clear:ClearFolder"],
}
NEVIS_VARIANTS = "lifelong.suites.builtin_streams:_nevis"
TEMPORAL_STREAM = "lifelong.suites.clear:temporal_stream"  # every temporal stream's own options

HELP = {
    "split_seed": "seed of the split",
    "shuffle_seed": "shuffle the tasks within each year with this seed",
    "ablation": "meta-train ablation: remove-first[-N], remove-last[-N], no-imagenet or random-N[-seed-S]",
    "meta_test_from_year": "first year of the meta-test part",
    "protocol": "iid (70/30 per bucket) or streaming (also --protocol)",
    "resolution": "square side the images are resized to",
    "features": "features set: a name `lifelong cog run` made, or its folder",
    "levels": "levels, e.g. seen,1,2",
    "shots": "shots per concept, e.g. all,1,8",
    "tasks": "number of tasks",
    "oov": "words missing from the vectors: error, skip or random",
    "linkage": "semantic split's linkage: single, average, complete, ward, or auto (the balance criterion)",
    "distance": "semantic split's fact distance: eq2, padded, or auto (the balance criterion)",
    "centre": "subtract the mean fact vector (the authors' SUBMEAN) from targets, candidates and task similarity",
    "preset": "named size: quick (a few minutes on 2 cores) or full (the default); -s options given win",
}


def stream_flag(value: Any, name: str) -> bool:
    """A stream option's boolean (-s gives strings: true/false, 1/0, yes/no, on/off); ValueError in CLI words."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"-s {name}={value}: give true or false")


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _value_of(target: Any) -> str:
    return f"{target.__module__}:{target.__qualname__}"


def _parameters(target: Any, seen: set[str]) -> tuple[dict[str, inspect.Parameter], bool]:
    """Keyword parameters of `target` and what it forwards to; the flag says whether all are known."""
    value = _value_of(target)
    if value in seen:
        return {}, True
    seen.add(value)
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return {}, False
    params: dict[str, inspect.Parameter] = {}
    complete = True
    for name, param in signature.parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            forwards = FORWARDS.get(value)
            if forwards is None and value.startswith("lifelong.suites.builtin_streams:nevis"):
                forwards = FORWARDS[NEVIS_VARIANTS]
            if forwards is None:
                complete = False
                continue
            for path in forwards:
                more, known = _parameters(_load(path), seen)
                params = {**more, **params}
                complete = complete and known
        elif param.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            params[name] = param
    return params, complete


def _factory(stream: str) -> tuple[Any, bool]:
    name = classify_stream(stream)
    if name.kind == "named":
        return STREAMS.load(name.value), False
    if name.kind == "temporal":
        return TEMPORAL_SOURCES.load(name.value), True
    raise ValueError(f"{stream!r} is a file, not a registered stream: its options are those of its kind")


def _all_parameters(stream: str) -> tuple[dict[str, inspect.Parameter], bool]:
    factory, temporal = _factory(stream)
    params, complete = _parameters(factory, set())
    if temporal:
        own, _ = _parameters(_load(TEMPORAL_STREAM), set())
        params = {**params, **own}
    return params, complete


def _type_text(param: inspect.Parameter) -> str:
    """The option's type in CLI words: integer, number, text, true/false, list, path, null."""
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        default = param.default
        annotation = "str" if default is inspect.Parameter.empty or default is None else type(default).__name__
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None) or str(annotation)
    words = {"int": "int", "float": "float", "str": "text", "bool": "bool", "None": "null"}
    parts = []
    for part in re.split(r"\|(?![^\[]*\])", text):  # top-level alternatives only
        part = re.sub(r"\b(typing|os|collections\.abc)\.", "", part.strip())
        if re.match(r"(Sequence|tuple|list)\b", part):
            word = "list"
        elif "PathLike" in part or part == "Path":
            word = "path"
        else:
            word = words.get(part, "text")
        if word not in parts:
            parts.append(word)
    return " or ".join(parts)


def _default_text(value: Any) -> str:
    if value is inspect.Parameter.empty or value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    return str(getattr(value, "value", value))


def _help(name: str, targets: list[Any]) -> str:
    if name in HELP:
        return HELP[name]
    for target in targets:
        doc = inspect.getdoc(target) or ""
        for sentence in re.split(r"(?<=[.;])\s+", " ".join(doc.split())):
            if f"`{name}`" in sentence:
                return sentence.rstrip(".;")
    return "-"


def stream_options(stream: str) -> list[dict[str, str]]:
    """The `-s` options of a registered stream: name, type, default and help (as plain text), by name."""
    params, _ = _all_parameters(stream)
    factory, _ = _factory(stream)
    rows = []
    for name, param in sorted(params.items()):
        if name in FROM_FLAGS or name in INTERNAL:
            continue
        default = param.default
        if dataclasses.is_dataclass(default):
            default = None
        rows.append(
            {"name": name, "type": _type_text(param), "default": _default_text(default), "help": _help(name, [factory])}
        )
    return rows


def check_stream_options(stream: str, options: dict[str, Any]) -> None:
    """A ValueError in CLI words for an `-s` key the stream does not take (with the closest one)."""
    try:
        params, complete = _all_parameters(stream)
    except ValueError:
        return  # a file (manifest, CSV): its builder names what it does not take
    if not complete:
        return
    for key in options:
        if key not in params and key not in FROM_FLAGS:
            listed = [n for n in params if n not in FROM_FLAGS and n not in INTERNAL]
            raise ValueError(
                f"unknown stream option {key!r} for --stream {stream}{did_you_mean(key, listed)}; see "
                f"`lifelong streams {stream}`"
            )
