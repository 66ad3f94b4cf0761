"""Run ids: one name per setup, computed in one place (runs, Ray remote runs, cog runs, seed groups, reports).

A run id reads `<stream>[-<labels>]-<learner>[-<hash>]-seed<N>[-final]`:

- `mini-independent-seed0`: a run with no options keeps the plain name;
- `clear-mini-iid-finetune-seed0`: a temporal stream spells its protocol (the only option: no hash needed);
- `clear-mini-iid-finetune-3fa2b1c9-seed0`: with any other option (`-o`, `-s`), 8 hex digits of the sha256 of
  the setup's canonical JSON (stream, learner, evaluation split and every option, keys sorted) tell setups apart,
  so `-o epochs=1` and `-o epochs=2` land in two folders and `-o b=1 -o a=2` names the same run as `-o a=2 -o b=1`.
  A few short option values are spelled for reading (protocol, split, level, shots); the hash decides.

The seed is never hashed: the runs of one setup over several seeds share everything up to `-seed<N>`, which
`group_id` strips to name the group.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from lifelong.suites.names import stream_label

HASH_LENGTH = 8
# Options spelled in the id (value only, in this order) when their value is a short word.
SPELLED_OPTIONS = ("protocol", "split", "levels", "shots")
_WORD = re.compile(r"^[A-Za-z0-9_.]{1,16}$")
_SEED = re.compile(r"-seed\d+(?=(-final)?$)")


def _canonical(value: Any) -> Any:
    """A value as compared for the hash: whole floats as ints (`epochs=1.0` is `epochs=1`), tuples as lists."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def setup_hash(setup: Mapping[str, Any]) -> str:
    """The first 8 hex digits of the sha256 of the setup's canonical JSON (keys sorted)."""
    text = json.dumps(_canonical(setup), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_LENGTH]


def _spelled(key: str, value: Any) -> str | None:
    text = str(value)
    if not _WORD.match(text) or text.startswith("."):
        return None
    if key == "shots" and text.isdigit():
        return f"{text}shot"
    return text


def run_id(
    stream: str,
    learner: str,
    seed: int,
    *,
    eval_split: str = "dev_test",
    stream_options: Mapping[str, Any] | None = None,
    learner_options: Mapping[str, Any] | None = None,
) -> str:
    """The id (and folder name) of the run of `learner` over `stream` with these options and seed."""
    stream_options = dict(stream_options or {})
    learner_options = dict(learner_options or {})
    label = stream_label(stream)
    parts = [label]
    parts += [s for key in SPELLED_OPTIONS if key in stream_options and (s := _spelled(key, stream_options[key]))]
    parts.append(learner)
    protocol_only = set(stream_options) <= {"protocol"} and _spelled("protocol", stream_options.get("protocol", ""))
    if learner_options or (stream_options and not protocol_only):
        setup = {
            "stream": label,
            "learner": learner,
            "eval_split": eval_split,
            "stream_options": stream_options,
            "learner_options": learner_options,
        }
        parts.append(setup_hash(setup))
    parts.append(f"seed{seed}")
    if eval_split == "test":
        parts.append("final")
    return "-".join(parts).replace("/", "_")


def group_id(run_id: str) -> str:
    """The run id without its seed: the name of the group of seeds of one setup."""
    return _SEED.sub("", run_id)
