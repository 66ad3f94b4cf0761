"""Converters for images stored as numbers: MATLAB / HDF5 arrays, index arrays over image files, text rows.

Each writes PNG files under out/images/ (or lists existing image files) and returns labels.csv rows.

- `mat` / `hdf5` (`array_rows`): `files = {split = "glob"}` with keys `images` and `labels` in the same file, or
  `arrays = [{split = ..., images = {file = "glob", key = "x"}, labels = {file = "glob", key = "y"}}]`; `axes`
  orders the image array (N items; H, W, C), e.g. "HWCN" for SVHN, "NCWH" for STL-10; `shape` reshapes flattened
  items first (`order = "F"` for MATLAB's column-major, `flat = "columns"` when each item is a column),
  `channels` keeps and orders channels ([2, 1, 0] turns BGR into RGB), `range = [low, high]` maps values onto
  0-255; `label_map` renames. Raw `.bin` files
  (STL-10) are read as one uint8 array.
- `mat_table` (`mat_table_rows`): image files listed by MATLAB arrays. `mats = [{split = ..., file = "glob",
  index = "trnid"}]` picks 1-based image numbers formatted by `path_template` ("jpg/image_{:05d}.jpg"), labelled
  by `labels = {file = "glob", key = "labels"}` (indexed by number) or `label_every = 80` ((n - 1) // 80); or
  `mats = [{split = ..., file = "glob", paths = "file_list", labels = "labels"}]` lists the paths and labels
  themselves (under `path_root`); `struct = "annotations"` reads those fields from one struct array, with
  `split = {field = "test", values = {"0" = "train", "1" = "test"}}` a per-element split; `label_matrix = {file,
  key, above = 0}` in a part makes each path multi-label: the (0-based) columns of its row above the threshold.
- `text_rows` (`text_rows`): one image per text line: `files = {split = "glob"}`, `format` "dense" (numbers
  separated by `delimiter`, default whitespace; `label` the label's column, default the last, or
  `label_columns = [start, stop]` a one-hot block) or "libsvm" (`label idx:value ...`, 1-based indices), `shape`
  of the image, `channels` to keep, `range = [low, high]` of the values (mapped to 0-255), `header`, `label_map`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lifelong.data.fetch.conversion import IMAGES, Conversion, Row, save_png


def read_arrays(job: Conversion, path: Path, keys: list[str]) -> dict[str, np.ndarray]:
    """Named arrays of a .mat (v5) or HDF5 (.h5, .hdf5, .mat v7.3) file; a raw .bin file is one array (any key)."""
    if path.suffix.lower() == ".bin":
        return dict.fromkeys(keys, np.fromfile(path, dtype=np.uint8))
    if path.suffix.lower() == ".mat":
        from scipy.io import loadmat

        try:
            content = loadmat(path, squeeze_me=False)
            return {k: np.asarray(content[k]) for k in keys}
        except NotImplementedError:
            pass  # a v7.3 .mat file is HDF5
        except KeyError as exc:
            raise job.fail(f"{path.name} has no array {exc.args[0]!r}") from None
        except (ValueError, OSError) as exc:
            raise job.fail(f"{path.name} is not a readable .mat file: {exc}") from None
    try:
        import h5py
    except ImportError:
        raise job.fail(f"{path.name} is HDF5: install h5py (pip install 'lifelong[fetch]')") from None
    with h5py.File(path, "r") as f:
        missing = [k for k in keys if k not in f]
        if missing:
            raise job.fail(f"{path.name} has no dataset {missing[0]!r} (has {sorted(f)})")
        return {k: np.asarray(f[k]) for k in keys}


def _label_text(value: Any, label_map: dict[str, str]) -> str:
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[0] if value.size else ""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        value = int(value)
    text = str(value.item() if hasattr(value, "item") else value)
    return label_map.get(text, text)


def to_nhwc(options: dict[str, Any], images: np.ndarray) -> np.ndarray:
    """Images as [N, H, W(, C)]: flattened items reshaped (`shape`, `order`; `flat = "columns"` when items are
    columns), the axes reordered (`axes`), the channels kept (`channels`)."""
    item = options.get("shape")
    if item:
        size = int(np.prod(item))
        flat = images.reshape(size, -1).T if options.get("flat") == "columns" else images.reshape(-1, size)
        images = np.stack([row.reshape(item, order=options.get("order", "C")) for row in flat])
    axes = options.get("axes") or ("N" + ("HW" if images.ndim == 3 else "HWC"))
    images = np.transpose(images, [axes.index(a) for a in "NHWC" if a in axes])
    if options.get("channels") is not None:
        images = images[..., list(options["channels"])]
    if options.get("range") is not None:  # values such as 0/1 silhouettes onto 0-255
        low, high = options["range"]
        images = np.clip(np.round((images.astype(np.float64) - low) / (high - low) * 255), 0, 255)
    return images


CHUNK = 2048  # images read at a time from an HDF5 file (PatchCamelyon's training set is 7 GB)


def image_chunks(job: Conversion, path: Path, key: str, options: dict[str, Any]):
    """The images of one file as [N, H, W(, C)] arrays: HDF5 item-first arrays chunk by chunk, others whole."""
    axes = options.get("axes") or "N"
    if path.suffix.lower() in (".h5", ".hdf5") and axes.startswith("N") and not options.get("shape"):
        import h5py

        with h5py.File(path, "r") as f:
            if key not in f:
                raise job.fail(f"{path.name} has no dataset {key!r} (has {sorted(f)})")
            data = f[key]
            for start in range(0, len(data), CHUNK):
                yield to_nhwc(options, np.asarray(data[start : start + CHUNK]))
        return
    yield to_nhwc(options, read_arrays(job, path, [key])[key])


def array_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    parts = options.get("arrays") or [
        {"split": s, "images": {"file": g, "key": options["images"]}, "labels": {"file": g, "key": options["labels"]}}
        for s, g in options["files"].items()
    ]
    rows: list[Row] = []
    for part in parts:
        images_file = job.find(part["images"]["file"])
        labels_file = job.find(part["labels"]["file"])
        if len(images_file) != len(labels_file):
            raise job.fail(f"{len(images_file)} image files but {len(labels_file)} label files for {part}")
        for image_path, label_path in zip(images_file, labels_file, strict=True):
            labels = read_arrays(job, label_path, [part["labels"]["key"]])[part["labels"]["key"]].reshape(-1)
            split = part.get("split")
            folder = f"{IMAGES}/{split or 'all'}/{image_path.stem}"
            count = 0
            for images in image_chunks(job, image_path, part["images"]["key"], {**options, **part}):
                for pixels in images:
                    if count >= len(labels):
                        raise job.fail(f"{image_path.name}: more images than the {len(labels)} labels")
                    relative = save_png(job, pixels, f"{folder}/{count:06d}.png")
                    rows.append((relative, _label_text(labels[count], options.get("label_map", {})), split))
                    count += 1
            if count != len(labels):
                raise job.fail(f"{image_path.name}: {count} images but {len(labels)} labels")
    return rows


def _cells(array: np.ndarray) -> list[Any]:
    """The elements of a MATLAB vector or cell array, each reduced to a scalar or a string."""
    out = []
    for item in np.asarray(array, dtype=object).reshape(-1):
        while isinstance(item, np.ndarray) and item.size == 1:
            item = item.reshape(-1)[0]
        out.append(item)
    return out


def mat_table_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    from lifelong.data.fetch.converters_tables import place

    base = job.unpacked().resolve()
    label_map = options.get("label_map", {})
    labels_by_number = None
    if "labels" in options and isinstance(options["labels"], dict):
        spec = options["labels"]
        (file,) = job.find(spec["file"])[:1]
        labels_by_number = _cells(read_arrays(job, file, [spec["key"]])[spec["key"]])
    rows: list[Row] = []
    placed: dict[Path, str] = {}
    for part in options["mats"]:
        (file,) = job.find(part["file"])[:1]
        splits: list[str | None] | None = None
        if part.get("struct"):  # one MATLAB struct array: a field per column (Stanford Cars' annotations)
            record = read_arrays(job, file, [part["struct"]])[part["struct"]]
            arrays = {name: record[name] for name in record.dtype.names or ()}
            if isinstance(part.get("split"), dict):
                values = part["split"]["values"]
                splits = [values[_label_text(v, {})] for v in _cells(arrays[part["split"]["field"]])]
        else:
            keys = [k for k in (part.get("index"), part.get("paths"), part.get("labels")) if k]
            arrays = read_arrays(job, file, keys)
        if part.get("index"):
            numbers = [int(n) for n in _cells(arrays[part["index"]])]
            paths = [options["path_template"].format(n) for n in numbers]
            if labels_by_number is not None:
                labels = [labels_by_number[n - 1] for n in numbers]
            else:
                labels = [(n - 1) // int(options["label_every"]) for n in numbers]
        else:
            paths = [str(p).strip() for p in _cells(arrays[part["paths"]])]  # char matrices pad with blanks
            labels = _cells(arrays[part["labels"]]) if part.get("labels") else [None] * len(paths)
        if part.get("label_matrix"):  # multi-label: the columns of each path's row above a threshold
            spec = part["label_matrix"]
            (matrix_file,) = job.find(spec["file"])[:1]
            matrix = read_arrays(job, matrix_file, [spec["key"]])[spec["key"]]
            if len(matrix) != len(paths):
                raise job.fail(f"{matrix_file.name}: {len(matrix)} rows for {len(paths)} images")
            above = float(spec.get("above", 0))
            labels = [[str(j) for j in np.flatnonzero(np.asarray(row, dtype=float) > above)] for row in matrix]
        if any(label is None for label in labels):
            raise job.fail(f"{file.name}: mats entries need labels, label_every or label_matrix")
        root = job.inside_unpacked(options.get("path_root", "."), "option path_root", base)
        splits = splits or [part.get("split")] * len(paths)
        for path, label, split in zip(paths, labels, splits, strict=True):
            image = job.inside_unpacked(path, f"image path in {file.name}", root)
            if not image.is_file():
                raise job.fail(f"{file.name}: image {path!r} is not in the artefacts")
            if image not in placed:
                placed[image] = place(job, image, base)
            text = label if isinstance(label, list) else _label_text(label, label_map)
            rows.append((placed[image], text, split))
    return rows


def _parse_line(job: Conversion, line: str, options: dict[str, Any], where: str) -> tuple[np.ndarray, str]:
    shape = tuple(options["shape"])
    size = int(np.prod(shape))
    if options.get("format", "dense") == "libsvm":
        label, *pairs = line.split()
        values = np.zeros(size, dtype=np.float64)
        for pair in pairs:
            index, _, value = pair.partition(":")
            values[int(index) - 1] = float(value)
    else:
        delimiter = options.get("delimiter")
        cells = [c for c in (line.split(delimiter) if delimiter else line.split()) if c.strip() != ""]
        if "label_columns" in options:
            start, stop = options["label_columns"]
            block = [float(c) for c in cells[start:stop]]
            label = str(int(np.argmax(block)))
            cells = cells[:start] + cells[stop:]
        else:
            at = int(options.get("label", -1))
            label = cells.pop(at).strip()
        values = np.asarray([float(c) for c in cells], dtype=np.float64)
    if values.size != size:
        raise job.fail(f"{where}: {values.size} values, an image of {shape} needs {size}")
    low, high = options.get("range", [0, 255])
    pixels = np.clip(np.round((values - low) / (high - low) * 255), 0, 255).reshape(shape)
    if options.get("channels") is not None:
        pixels = pixels[..., list(options["channels"])]
    return pixels.astype(np.uint8), label


def text_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    label_map = options.get("label_map", {})
    rows: list[Row] = []
    for split, pattern in options["files"].items():
        for file in job.find(pattern):
            lines = file.read_text(errors="replace").splitlines()[1 if options.get("header") else 0 :]
            for n, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                pixels, label = _parse_line(job, line, options, f"{file.name}:{n}")
                label = label_map.get(label, label)
                relative = save_png(job, pixels, f"{IMAGES}/{split}/{file.stem}/{n:06d}.png")
                rows.append((relative, label, None if split == "all" else split))
    return rows
