"""lifelong's public Python API: the one place a script or notebook imports the toolkit's workflows from.

Every workflow a `lifelong` command offers is a function here over a typed spec (a dataclass whose fields are the
command's options), returning objects (dataclasses, arrays, DataFrames) and printing nothing:

    from lifelong import api

    summary = api.execute(api.RunSpec(stream="mini", learner="nearest-mean", out="runs"))
    frame = api.results("runs")  # one row per (run, event, metric): run, system, stream, learner, seed, task, ...

Long work takes `progress=`: False (nothing), True (a bar on the terminal) or a callback `(description, done,
total)`. Errors are the toolkit's own (`lifelong.core.errors`: UsageError, DataError, ResumeRefused, Interrupted),
with the messages the command line prints. Ctrl-C raises `Interrupted`; the same spec with `resume=True` continues.
The `lifelong` command is built on these same functions (`lifelong.cli`, thin adapters).
"""

from __future__ import annotations

from lifelong.commands.bench_api import (
    BenchCheckResult,
    BenchCheckSpec,
    BenchCreateResult,
    BenchCreateSpec,
    BenchImportResult,
    BenchImportSpec,
    BenchSortResult,
    BenchSortSpec,
    BenchStatusResult,
    BenchStatusSpec,
    bench_check,
    bench_create,
    bench_import,
    bench_sort,
    bench_status,
)
from lifelong.commands.bench_compare import BenchCompareResult, BenchCompareSpec, bench_compare
from lifelong.commands.bench_experiments import (
    BenchBeyondResult,
    BenchBeyondSpec,
    BenchBuildZooResult,
    BenchBuildZooSpec,
    BenchExperimentResult,
    BenchExperimentSpec,
    bench_beyond,
    bench_build_zoo,
    bench_experiment,
)
from lifelong.commands.bench_models import (
    BenchAddModelResult,
    BenchAddModelSpec,
    BenchPlanModelSpec,
    bench_add_model,
    bench_plan_model,
)
from lifelong.commands.bench_samples import (
    BenchAddSamplesResult,
    BenchAddSamplesSpec,
    BenchPlanSamplesResult,
    BenchPlanSamplesSpec,
    bench_add_samples,
    bench_plan_samples,
)
from lifelong.commands.cog_compare import CogCompareResult, CogCompareSpec, cog_compare
from lifelong.commands.cog_install import (
    CogInstallArtPlan,
    CogInstallArtResult,
    CogInstallArtSpec,
    cog_install_art,
    cog_install_art_plan,
)
from lifelong.commands.cog_levels import CogLevelsResult, CogLevelsSpec, cog_levels
from lifelong.commands.cog_pretrain import CogPretrainResult, CogPretrainSpec, cog_pretrain
from lifelong.commands.cog_run import CogRunResult, CogRunSpec, cog_run
from lifelong.commands.data_api import (
    DataInspectResult,
    DataInspectSpec,
    DataStatusResult,
    DataStatusSpec,
    data_inspect,
    data_status,
)
from lifelong.commands.data_fetch import (
    DataFetchError,
    DataFetchPlan,
    DataFetchResult,
    DataFetchSpec,
    DataListResult,
    DataListSpec,
    data_fetch,
    data_list,
)
from lifelong.commands.facts_api import FactsSplitResult, FactsSplitSpec, facts_split
from lifelong.commands.listing_api import (
    LearnerInfo,
    LearnerOptions,
    StreamOptions,
    learner_options,
    learners,
    stream_options,
    streams,
)
from lifelong.commands.models_api import (
    ModelsFeaturesResult,
    ModelsFeaturesSpec,
    ModelsInfoResult,
    ModelsInfoSpec,
    ModelsListResult,
    ModelsPredictResult,
    ModelsPredictSpec,
    models_features,
    models_info,
    models_list,
    models_predict,
)
from lifelong.commands.results_api import (
    MatrixSummary,
    MatrixSummarySpec,
    ReportSpec,
    ResultsList,
    ResultsListSpec,
    matrix_summary,
    report,
    results_list,
)
from lifelong.commands.runner import RunSpec, execute
from lifelong.commands.runs_api import RunsSpec, run
from lifelong.commands.training_api import (
    PretrainResult,
    PretrainSpec,
    PretrainSslResult,
    PretrainSslSpec,
    TransferMatrixResult,
    TransferMatrixSpec,
    pretrain,
    pretrain_ssl,
    transfer_matrix,
)
from lifelong.core.errors import DataError, Interrupted, LifelongError, ResumeRefused, UsageError
from lifelong.core.progress import Progress
from lifelong.results.frame import results

__all__ = [
    "DataError",
    "Interrupted",
    "LifelongError",
    "Progress",
    "ResumeRefused",
    "UsageError",
    # --- runs ---
    "RunSpec",
    "execute",
    "results",
    "LearnerInfo",
    "LearnerOptions",
    "StreamOptions",
    "learner_options",
    "learners",
    "stream_options",
    "streams",
    "MatrixSummary",
    "MatrixSummarySpec",
    "ReportSpec",
    "ResultsList",
    "ResultsListSpec",
    "matrix_summary",
    "report",
    "results_list",
    "RunsSpec",
    "run",
    "PretrainResult",
    "PretrainSpec",
    "PretrainSslResult",
    "PretrainSslSpec",
    "TransferMatrixResult",
    "TransferMatrixSpec",
    "pretrain",
    "pretrain_ssl",
    "transfer_matrix",
    # --- bench ---
    "BenchAddModelResult",
    "BenchAddModelSpec",
    "BenchAddSamplesResult",
    "BenchAddSamplesSpec",
    "BenchBeyondResult",
    "BenchBeyondSpec",
    "BenchBuildZooResult",
    "BenchBuildZooSpec",
    "BenchCheckResult",
    "BenchCheckSpec",
    "BenchCompareResult",
    "BenchCompareSpec",
    "BenchCreateResult",
    "BenchCreateSpec",
    "BenchExperimentResult",
    "BenchExperimentSpec",
    "BenchImportResult",
    "BenchImportSpec",
    "BenchPlanModelSpec",
    "BenchPlanSamplesResult",
    "BenchPlanSamplesSpec",
    "BenchSortResult",
    "BenchSortSpec",
    "BenchStatusResult",
    "BenchStatusSpec",
    "bench_add_model",
    "bench_add_samples",
    "bench_beyond",
    "bench_build_zoo",
    "bench_check",
    "bench_compare",
    "bench_create",
    "bench_experiment",
    "bench_import",
    "bench_plan_model",
    "bench_plan_samples",
    "bench_sort",
    "bench_status",
    # --- cog ---
    "CogCompareResult",
    "CogCompareSpec",
    "CogInstallArtPlan",
    "CogInstallArtResult",
    "CogInstallArtSpec",
    "CogLevelsResult",
    "CogLevelsSpec",
    "CogPretrainResult",
    "CogPretrainSpec",
    "CogRunResult",
    "CogRunSpec",
    "cog_compare",
    "cog_install_art",
    "cog_install_art_plan",
    "cog_levels",
    "cog_pretrain",
    "cog_run",
    # --- facts ---
    "FactsSplitResult",
    "FactsSplitSpec",
    "facts_split",
    # --- models ---
    "ModelsFeaturesResult",
    "ModelsFeaturesSpec",
    "ModelsInfoResult",
    "ModelsInfoSpec",
    "ModelsListResult",
    "ModelsPredictResult",
    "ModelsPredictSpec",
    "models_features",
    "models_info",
    "models_list",
    "models_predict",
    # --- data ---
    "DataFetchError",
    "DataFetchPlan",
    "DataFetchResult",
    "DataFetchSpec",
    "DataInspectResult",
    "DataInspectSpec",
    "DataListResult",
    "DataListSpec",
    "DataStatusResult",
    "DataStatusSpec",
    "data_fetch",
    "data_inspect",
    "data_list",
    "data_status",
]
