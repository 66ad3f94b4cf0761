"""Lifelong fact learning (docs/protocols/facts.md): facts <S>, <S,P>, <S,P,O> and their split into tasks.

So far: `lifelong.facts.splits` (semantic single/average/complete-linkage and random splits, saved as CSV) over
`lifelong.facts.linkage` (exact single linkage through a minimum spanning tree, never an n x n matrix).
Also: `facts` (the Fact type, parsing, facts CSVs), `topk` (wildcard-aware top-K) and `vectors` (word vectors of
fact parts, t(f)); these are exported here. The splits are not (they import scipy's clustering: import them directly).
"""

from lifelong.facts.facts import (
    UNDEFINED,
    Fact,
    FactTable,
    distinct_facts,
    fact_from_parts,
    images_per_fact,
    parse_fact,
    read_facts_csv,
)
from lifelong.facts.topk import topk_accuracy, topk_chance, topk_correct
from lifelong.facts.vectors import (
    OOV_MODES,
    PHRASE_RULE,
    WordVectors,
    cached_part_vectors,
    embed_parts,
    fact_matrix,
    read_word_vectors,
    sentence_vectors,
)

__all__ = [
    "OOV_MODES",
    "PHRASE_RULE",
    "UNDEFINED",
    "Fact",
    "FactTable",
    "WordVectors",
    "cached_part_vectors",
    "distinct_facts",
    "embed_parts",
    "fact_from_parts",
    "fact_matrix",
    "images_per_fact",
    "parse_fact",
    "read_facts_csv",
    "read_word_vectors",
    "sentence_vectors",
    "topk_accuracy",
    "topk_chance",
    "topk_correct",
]
