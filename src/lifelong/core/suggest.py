"""Did you mean ...?" for names a user typed: streams, learners, option keys, commands."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The choices closest to `word` (difflib's ratio, cutoff 0.6), best first."""
    return difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """The suffix ` (did you mean 'x'?)` for the closest choice, or an empty string when none is close."""
    matches = close_matches(word, choices, n=1)
    return f" (did you mean {matches[0]!r}?)" if matches else ""
