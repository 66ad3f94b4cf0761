"""Test-wide settings.

- One torch thread per process: runs are reproducible per thread count, and two threads spin against each other
  on a loaded 2-core machine.
- The CPU in fp32 unless a test picks an accelerator itself: many tests compare with CPU references to tight
  tolerances, and on a GPU machine the default accelerator would be CUDA with bf16. Device-parametrised tests
  enter `accelerator_scope` for each of `available_devices()`; a RunSpec's own device applies inside its run.
- A feature cache of each test's own ($LIFELONG_CACHE under tmp_path): no test reads features another test (or
  the user) cached.
- No test writes into the user's cache folders: for the whole session (child processes included) every cache
  location the code or its libraries use ($XDG_CACHE_HOME: fact vectors, text embeddings, WordNet's layout,
  matplotlib; $HF_HOME, $TORCH_HOME) is a fresh temporary folder. The emoji artwork the user installed there is
  still read, through $LIFELONG_EMOJI_DIR.
- A missing prerequisite skips, or fails under LIFELONG_REQUIRE_PREREQS=1 (tests/_prereq.py).
"""

import os
import shutil
import tempfile

import pytest
from _prereq import check_marks

from lifelong.data.sources.emoji_art import EMOJI_DIR_ENV, default_emoji_dir
from lifelong.training.devices import Accelerator, accelerator_scope
from lifelong.training.loop import set_torch_threads

set_torch_threads(1)

CACHE_HOMES = ("XDG_CACHE_HOME", "HF_HOME", "TORCH_HOME")  # each set to a folder of the session's own
# Set by a user, these would still point into their cache folders: unset, they fall under the homes above.
CACHE_OVERRIDES = (
    "LIFELONG_FACT_VECTORS_CACHE",
    "LIFELONG_TEXT_CACHE",
    "LIFELONG_WORDNET_CACHE",
    "HF_HUB_CACHE",
    "HF_DATASETS_CACHE",
    "TRANSFORMERS_CACHE",
    "SENTENCE_TRANSFORMERS_HOME",
)
SAVED_ENV = pytest.StashKey[dict[str, str | None]]()
CACHE_ROOT = pytest.StashKey[str]()


def pytest_configure(config):
    config.addinivalue_line("markers", "prereq(reason): needs a prerequisite; reason=None when it is present")
    config.stash[SAVED_ENV] = {name: os.environ.get(name) for name in (EMOJI_DIR_ENV, *CACHE_HOMES, *CACHE_OVERRIDES)}
    config.stash[CACHE_ROOT] = tempfile.mkdtemp(prefix="lifelong-test-caches-")
    _own_cache_folders(config.stash[CACHE_ROOT])


def pytest_unconfigure(config):
    shutil.rmtree(config.stash[CACHE_ROOT], ignore_errors=True)
    for name, value in config.stash[SAVED_ENV].items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _own_cache_folders(root: str) -> None:
    """Point every cache location under `root` (set before any test module imports a library that reads one)."""
    if not os.environ.get(EMOJI_DIR_ENV) and default_emoji_dir().is_dir():
        os.environ[EMOJI_DIR_ENV] = str(default_emoji_dir())  # read only: no test runs install-art for real
    for name in CACHE_HOMES:
        os.environ[name] = os.path.join(root, name.lower())
    for name in CACHE_OVERRIDES:
        os.environ.pop(name, None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    check_marks(item)


@pytest.fixture(autouse=True)
def _cpu_fp32_unless_chosen():
    with accelerator_scope(Accelerator(device="cpu")):
        yield


@pytest.fixture(autouse=True)
def _own_feature_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LIFELONG_CACHE", str(tmp_path_factory.mktemp("lifelong-cache")))
