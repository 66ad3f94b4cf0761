"""ClearMini: sizes, class balance, determinism per bucket, and a style that drifts with the bucket."""

from __future__ import annotations

import numpy as np
import pytest

from lifelong.data.sources.drifting import BACKGROUND, ClearMini
from lifelong.data.sources.glyphs import GlyphStyle, letters
from lifelong.data.temporal import TemporalSource


def test_layout_classes_and_sizes():
    source = ClearMini(n_per_class=3, unlabeled_per_bucket=7, size=12)
    assert isinstance(source, TemporalSource)
    assert source.class_names == ("A", "B", BACKGROUND, "C", "D", "E", "F", "G", "H", "I", "J")
    assert source.num_buckets == 11 and source.labeled_buckets == tuple(range(1, 11))
    assert source.windows[0] == ("2004-01-01", "2005-01-01") and source.windows[-1] == ("2014-01-01", "2015-01-01")
    assert source.domain == "ocr" and source.resolution == 12
    data = source.labeled(4)
    assert data.images.shape == (33, 12, 12, 1) and data.images.dtype == np.uint8
    assert np.bincount(data.labels, minlength=11).tolist() == [3] * 11
    assert len(set(data.ids)) == 33
    pool = source.unlabeled(0)
    assert pool.shape == (7, 12, 12, 1) and pool.dtype == np.uint8
    with pytest.raises(ValueError, match="bucket 0 has no labels"):
        source.labeled(0)
    with pytest.raises(ValueError, match="0..10"):
        source.unlabeled(11)
    assert ClearMini(n_per_class=1, unlabeled_per_bucket=0).unlabeled(3).shape == (0, 16, 16, 1)
    with pytest.raises(ValueError, match="n_per_class"):
        ClearMini(n_per_class=0)


def test_same_seed_same_bytes_whatever_the_request_order():
    alone = ClearMini(n_per_class=2, unlabeled_per_bucket=5, seed=3, cache=0)
    busy = ClearMini(n_per_class=2, unlabeled_per_bucket=5, seed=3, cache=1)
    for b in (1, 7, 2):
        busy.labeled(b)
        busy.unlabeled(b)
    a, b = alone.labeled(3), busy.labeled(3)
    assert a.images.tobytes() == b.images.tobytes() and a.labels.tolist() == b.labels.tolist()
    assert alone.unlabeled(3).tobytes() == busy.unlabeled(3).tobytes()
    assert busy.labeled(3) is busy.labeled(3)  # memoised
    other = ClearMini(n_per_class=2, unlabeled_per_bucket=5, seed=4).labeled(3)
    assert other.images.tobytes() != a.images.tobytes()


def test_consecutive_buckets_differ_and_the_style_drifts_monotonically():
    source = ClearMini(n_per_class=20, unlabeled_per_bucket=0)
    first = source.labeled(1).images
    assert first.tobytes() != source.labeled(2).images.tobytes()
    means = [source.labeled(b).images.mean() for b in (1, 4, 7, 10)]
    assert np.all(np.diff(means) > 0), f"ink and background brighten as strokes thicken and contrast falls: {means}"
    styles = [source.style(b)[1] for b in range(11)]
    assert np.all(np.diff([s.rotation_center for s in styles]) > 0)
    assert np.all(np.diff([s.contrast[0] for s in styles]) < 0)
    assert np.all(np.diff([np.mean(s.stroke) for s in styles]) >= 0)
    faces = [set(source.style(b)[0]) for b in range(11)]
    assert faces[0] != faces[10] and not faces[0] & faces[10], "old faces leave, new ones enter"


def test_glyph_style_defaults_keep_existing_images():
    plain = letters(3, seed=5)
    same = letters(3, seed=5, style={"rotation_center": 0.0, "shear_center": 0.0, "class_rotation": ()})
    assert plain.images.tobytes() == same.images.tobytes()
    turned = letters(3, seed=5, style={"class_rotation": [20.0] * 10})
    assert turned.images.tobytes() != plain.images.tobytes()
    with pytest.raises(ValueError, match="class_rotation has 2 offsets for 10 chars"):
        letters(1, style=GlyphStyle(class_rotation=(1.0, 2.0)))
