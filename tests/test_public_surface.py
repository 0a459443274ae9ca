"""Each package's public surface: what its `__init__` exports, pinned by name, every name real."""

import importlib
import types

import pytest

SURFACE: dict[str, tuple[str, ...]] = {
    "catalog": (
        "AUTO",
        "CUSTOM_MODEL",
        "default_max_num_seqs",
        "engine_release",
        "EngineLimit",
        "find_engine",
        "find_gpu",
        "find_model",
        "find_quant",
        "get_engine",
        "get_quant",
        "Gpu",
        "gpu_platform",
        "GpuLookupError",
        "Handbook",
        "InputError",
        "kv_bytes_per_token",
        "kv_bytes_per_token_per_gpu",
        "load_engine_limits",
        "load_engines",
        "load_gpus",
        "load_handbook",
        "load_models",
        "load_quant_methods",
        "ModelSpec",
        "NameLookupError",
        "QuantMethod",
        "ServingEngine",
        "UnknownEngineError",
        "UnknownModelError",
        "UnknownQuantizationError",
        "weights_gb",
    ),
    "db": (
        "calibration",
        "calibration_runs",
        "CalibrationLevel",
        "CalibrationRun",
        "confirm_served_model",
        "delete_run",
        "delete_scenario",
        "Engine",
        "get_run",
        "get_scenario",
        "import_of",
        "imports",
        "imports_of",
        "ImportStoreError",
        "init_db",
        "INTERRUPTED_WITHIN_S",
        "is_imported",
        "list_runs",
        "list_scenarios",
        "make_engine",
        "model_confirmed",
        "prices",
        "recorder",
        "recover_interrupted_runs",
        "recover_orphaned_runs",
        "replace_prices",
        "run_queries",
        "RunRecorder",
        "safe_url",
        "save_scenario",
        "Scenario",
        "scenarios",
        "session_factory",
        "start_recovery",
        "stop_sweeper",
        "store_imported",
        "StoredImport",
        "StoredPrice",
        "stored_prices",
        "StoredRun",
    ),
    "fakeserver": (
        "Batching",
        "Behaviour",
        "FakeServer",
        "FAULTS",
        "LOOPBACK_HOSTS",
        "main",
        "PREFIX_BLOCK_WORDS",
        "RequestRecord",
        "serve_in_thread",
        "WORDS",
    ),
    "i18n": (
        "BABEL_LOCALES",
        "DEFAULT_LANGUAGE",
        "identity",
        "Language",
        "LANGUAGE_NAMES",
        "LANGUAGES",
        "LOCALE_DIR",
        "N_",
        "parse_language",
        "Translate",
        "translate",
        "translations",
    ),
    "perf": (
        "Band",
        "Basis",
        "Calibration",
        "ENGINE_FAMILIES",
        "Estimate",
        "estimate",
        "Layout",
        "LevelEstimate",
        "MeasuredLevel",
        "NoEstimateError",
        "Percentiles",
        "PerfError",
        "PerfRequest",
        "request_from_advice",
        "Slo",
    ),
    "probes": (
        "ApiKind",
        "best_concurrency_within_slo",
        "check_connection",
        "check_run_settings",
        "ConnectionReport",
        "Deployment",
        "EndpointResponseError",
        "EndpointUnreachableError",
        "ErrorKind",
        "LevelResult",
        "list_models",
        "MemorySink",
        "NullSink",
        "prepare_run",
        "ProbeError",
        "ProbeOptions",
        "ProbeRun",
        "ProbeSettingsError",
        "Progress",
        "redact_url",
        "RequestSample",
        "run_probe",
        "run_sync",
        "RunResult",
        "RunSettings",
        "RunSink",
        "RunStatus",
        "ServerMetrics",
        "SloOutcome",
        "SloTargets",
        "Stats",
        "summarize_level",
        "Timeouts",
        "TokenSource",
        "WorkloadError",
        "WorkloadKind",
    ),
    "selector": (
        "Advice",
        "AdviceRequest",
        "advise",
        "Decision",
        "Deploy",
        "Ecosystem",
        "Gate",
        "gate",
        "gpu_class",
        "LABELS",
        "LaunchCommand",
        "load_rules",
        "memory_fit_figure",
        "MemoryFit",
        "names_worded_by",
        "nearest_params",
        "Priority",
        "SelectorError",
        "Speculative",
        "Workload",
        "YesNo",
    ),
    "tco": (
        "Capacity",
        "capacity",
        "convert",
        "Currency",
        "CUSTOM_GPU",
        "estimate",
        "Fleet",
        "fleet",
        "format_money",
        "lever_chain",
        "LeverChain",
        "LeverStep",
        "TcoInputs",
        "TcoResult",
    ),
}


@pytest.mark.parametrize("package", sorted(SURFACE))
def test_each_package_exports_its_entry_points_and_nothing_else(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__doc__, f"{package}/__init__.py needs its one-line docstring"
    exported = set(getattr(module, "__all__", ()))
    assert exported == set(SURFACE[package]), (
        f"{package}'s public surface changed: added {sorted(exported - set(SURFACE[package]))}, "
        f"removed {sorted(set(SURFACE[package]) - exported)}; update SURFACE and docs/extending.md if it is meant"
    )


@pytest.mark.parametrize("package", sorted(SURFACE))
def test_every_exported_name_is_defined(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in SURFACE[package] if not hasattr(module, name)]
    assert not missing, f"{package} lists names it does not define: {missing}"


def test_the_exports_are_entry_points_not_whole_modules_except_the_database_tables() -> None:
    """db/ re-exports its query modules on purpose (their tables register with the schema); nothing else does."""
    modules = [
        f"{package}.{name}"
        for package, names in SURFACE.items()
        for name in names
        if isinstance(getattr(importlib.import_module(package), name), types.ModuleType)
    ]
    assert all(name.startswith("db.") for name in modules), modules
