"""Getting real datasets: the manifest (what to get, from where, under which licence), downloads, verification,
safe unpacking and conversion into the layouts lifelong.data.sources reads. Only `lifelong data fetch` calls it.
"""

from lifelong.data.fetch.download import DownloadError, DownloadSettings
from lifelong.data.fetch.install import FetchOutcome, FetchRequest, fetch, read_provenance
from lifelong.data.fetch.manifest import Artefact, DatasetEntry, FetchRefused, Licence, ManifestError, load_manifest
from lifelong.data.fetch.verify import ChecksumError

__all__ = [
    "Artefact",
    "ChecksumError",
    "DatasetEntry",
    "DownloadError",
    "DownloadSettings",
    "FetchOutcome",
    "FetchRefused",
    "FetchRequest",
    "Licence",
    "ManifestError",
    "fetch",
    "load_manifest",
    "read_provenance",
]
