"""The test-wide guards: a missing prerequisite skips, or fails under LIFELONG_REQUIRE_PREREQS=1; no test's cache
folder is the user's."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from _prereq import REQUIRE_ENV, check_marks, import_or_missing, missing, needs


def _item(*marks: pytest.MarkDecorator) -> SimpleNamespace:
    return SimpleNamespace(iter_markers=lambda name: [m.mark for m in marks if m.mark.name == name])


def test_a_missing_prerequisite_skips_by_default(monkeypatch):
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="WordNet absent"):
        missing("WordNet absent")
    with pytest.raises(pytest.skip.Exception, match=r"no_such_module_xyz is not installed: pip install -e '.\[x\]'"):
        import_or_missing("no_such_module_xyz", "x")


def test_a_missing_prerequisite_fails_when_prerequisites_are_required(monkeypatch):
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_ENV}=1: WordNet absent"):
        missing("WordNet absent")
    with pytest.raises(pytest.fail.Exception, match="no_such_module_xyz is not installed"):
        import_or_missing("no_such_module_xyz", "x")
    with pytest.raises(pytest.fail.Exception, match="Chromium absent"):
        check_marks(_item(needs(True, "present"), needs(False, "Chromium absent")))
    check_marks(_item(needs(True, "present")))  # a present prerequisite is no failure
    assert import_or_missing("json", "x").__name__ == "json"


def test_no_cache_folder_is_the_users():
    home_cache = Path.home() / ".cache"
    for name in ("XDG_CACHE_HOME", "HF_HOME", "TORCH_HOME"):
        folder = Path(os.environ[name])
        assert home_cache not in folder.parents and folder != home_cache, (name, folder)
    for name in ("LIFELONG_FACT_VECTORS_CACHE", "LIFELONG_TEXT_CACHE", "HF_HUB_CACHE", "HF_DATASETS_CACHE"):
        assert name not in os.environ, name
