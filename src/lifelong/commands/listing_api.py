"""`lifelong streams` and `lifelong learners` as functions: what `stream=` and `learner=` accept, and their options.

Option rows are dicts with `name`, `type`, `default` and `help` (as `--json` prints them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lifelong.core.errors import UsageError


def streams() -> list[dict[str, Any]]:
    """Every stream `--stream` takes: name, tasks, meta_train, meta_test, multi_label, missing, years, description.

    A stream read from a data folder that is not there (e.g. clear) has `-` counts and `[no data]` in its description.
    """
    from lifelong.suites import describe_stream, get_stream, stream_descriptions

    rows = []
    for stream, desc in stream_descriptions().items():
        try:  # listed by the name `--stream` takes (a temporal stream's own name adds its protocol)
            rows.append({**describe_stream(get_stream(stream)), "name": stream, "description": desc})
        except FileNotFoundError:
            empty = dict.fromkeys(("tasks", "meta_train", "meta_test", "multi_label"), "-")
            rows.append({"name": stream, **empty, "missing": None, "years": None, "description": desc + " [no data]"})
    return rows


@dataclass(frozen=True)
class StreamOptions:
    """One stream's description and its `-s` options."""

    name: str
    description: str
    options: list[dict[str, Any]]


def stream_options(name: str) -> StreamOptions:
    """The `-s` options of stream `name`; an unknown name raises UsageError (with the closest names)."""
    from lifelong.core.suggest import did_you_mean
    from lifelong.suites import stream_descriptions
    from lifelong.suites import stream_options as options_of

    descriptions = stream_descriptions()
    if name not in descriptions:
        raise UsageError(f"unknown stream {name!r}{did_you_mean(name, descriptions)}; see `lifelong streams`")
    return StreamOptions(name, descriptions[name], options_of(name))


@dataclass(frozen=True)
class LearnerInfo:
    """A learner `--learner` takes, with its one-line description."""

    name: str
    description: str


def learners() -> list[LearnerInfo]:
    """Every registered learner (built-in and plug-in), in the order `lifelong learners` lists them."""
    from lifelong.learners import describe_learners

    return [LearnerInfo(name, description) for name, description in describe_learners()]


@dataclass(frozen=True)
class LearnerOptions:
    """One learner's `-o` options."""

    name: str
    options: list[dict[str, Any]]


def learner_options(name: str) -> LearnerOptions:
    """The `-o` options of learner `name`; an unknown name raises UsageError (with the closest names)."""
    from lifelong.core.suggest import did_you_mean
    from lifelong.learners import LEARNERS
    from lifelong.learners import learner_options as options_of

    names = LEARNERS.names()
    if name not in names:
        raise UsageError(f"unknown learner {name!r}{did_you_mean(name, names)}; see `lifelong learners`")
    return LearnerOptions(name, options_of(name))


__all__ = ["LearnerInfo", "LearnerOptions", "StreamOptions", "learner_options", "learners", "stream_options", "streams"]
