"""Lifelong fact learning (spec/fact_learning.md): facts <S>, <S,P>, <S,P,O> and their split into tasks.

So far: `lifelong.facts.splits` (semantic single/average/complete-linkage and random splits, saved as CSV) over
`lifelong.facts.linkage` (exact single linkage through a minimum spanning tree, never an n x n matrix).
"""
