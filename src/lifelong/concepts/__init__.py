"""Concepts: WordNet 3.0 offline, ImageNet concept lists, information content, similarity, ImageNet-CoG levels."""

from lifelong.concepts.corpus import corpus_with, lin_to_seen, similarity_to_seen, taxonomy
from lifelong.concepts.counts import count_images, read_counts
from lifelong.concepts.levels import (
    FILTERS,
    ORDERS,
    Eligible,
    EmptyLevelError,
    Levels,
    LevelSpec,
    Step,
    build_levels,
    cut_levels,
    filter_concepts,
    levels_csv,
    parse_order,
)
from lifelong.concepts.similarity import SET_SIMILARITIES, lcs_ic, pairwise
from lifelong.concepts.taxonomy import CorpusNotice, Taxonomy, build_taxonomy
from lifelong.concepts.text_similarity import TEXT_KINDS, text_to_seen
from lifelong.concepts.wnids import (
    ConceptError,
    MalformedWnidError,
    UnknownConceptError,
    cog_exclusions,
    imagenet1k,
    imagenet21k,
    read_wnids,
)
from lifelong.concepts.wordnet import WordNetNotFoundError, find_wordnet, open_wordnet

__all__ = [
    "FILTERS",
    "ORDERS",
    "SET_SIMILARITIES",
    "TEXT_KINDS",
    "ConceptError",
    "CorpusNotice",
    "Eligible",
    "EmptyLevelError",
    "LevelSpec",
    "Levels",
    "MalformedWnidError",
    "Step",
    "Taxonomy",
    "UnknownConceptError",
    "WordNetNotFoundError",
    "build_levels",
    "build_taxonomy",
    "cog_exclusions",
    "corpus_with",
    "count_images",
    "cut_levels",
    "filter_concepts",
    "find_wordnet",
    "imagenet1k",
    "imagenet21k",
    "levels_csv",
    "lcs_ic",
    "lin_to_seen",
    "open_wordnet",
    "pairwise",
    "parse_order",
    "read_counts",
    "read_wnids",
    "similarity_to_seen",
    "taxonomy",
    "text_to_seen",
]
