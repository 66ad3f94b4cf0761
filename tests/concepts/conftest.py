"""WordNet for the concept tests: Debian's WordNet 3.0 laid out once per session in a temporary cache."""

from __future__ import annotations

import os

import _prereq
import pytest

from lifelong.concepts import taxonomy
from lifelong.concepts.corpus import corpus_with
from lifelong.concepts.wnids import imagenet1k


@pytest.fixture(scope="session", autouse=True)
def wordnet_cache(tmp_path_factory):
    """Every test builds nltk's WordNet layout in a session folder, never in the user's ~/.cache."""
    old = os.environ.get("LIFELONG_WORDNET_CACHE")
    os.environ["LIFELONG_WORDNET_CACHE"] = str(tmp_path_factory.mktemp("wordnet-cache"))
    yield os.environ["LIFELONG_WORDNET_CACHE"]
    if old is None:
        del os.environ["LIFELONG_WORDNET_CACHE"]
    else:
        os.environ["LIFELONG_WORDNET_CACHE"] = old


@pytest.fixture(scope="session")
def wordnet(wordnet_cache):
    """nltk's reader over the local WordNet 3.0, or a skip naming the Debian package to install."""
    return _prereq.wordnet()


@pytest.fixture(scope="session")
def tax(wordnet):
    """The default corpus (IN-21K fall 2011 + ImageNet-1K's teddy bear) with its WordNet ancestors."""
    corpus, _ = corpus_with(("seen", imagenet1k()))
    return taxonomy(corpus)
