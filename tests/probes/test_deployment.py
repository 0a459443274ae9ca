"""The deployment a run measured: one definition (settings, flags, form, stored run), forgiving catalog names,
refusals that name the field, stored runs that keep loading, and detection from a real HTTP server."""

import asyncio
import io

import pytest
from pydantic import ValidationError

from catalog import get_engine
from fakeserver import serve_in_thread
from probes import ProbeRun, RunSettings, run_probe
from probes.cli import EXIT_USAGE, parse_options, run_cli
from probes.cli_options import CliOptions
from probes.deployment import STORED, Deployment, deployment_fields, deployment_text
from probes.detect import (
    ENGINE_METRIC_PREFIXES,
    detect,
    engine_from_metrics,
    engine_from_owner,
    model_from_names,
)
from probes.form import ProbeForm
from probes.options import ProbeOptions
from probes.sink import MemorySink
from tests.probes.conftest import FAST, settings_for
from ui.params import to_params, validate_params

FULL = Deployment(gpu="h100-80gb-sxm", gpu_count=2, model="llama3.1-8b", engine="vllm", quant="fp8")


# -- settings ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "given", "stored"),
    [
        ("gpu", "H100", "h100-80gb-sxm"),
        ("gpu", "NVIDIA A800 80GB", "a800-80gb-sxm"),
        ("model", "meta-llama/Llama-3.1-8B-Instruct", "llama3.1-8b"),
        ("model", "llama-3.1-8b", "llama3.1-8b"),
        ("engine", "trtllm", "tensorrt-llm"),
        ("engine", "SGLang", "sglang"),
        ("quant", "AWQ", "awq"),
        ("quant", "smoothquant", "w8a8-int8"),
        ("gpu", "  ", None),
    ],
)
def test_names_are_matched_as_the_advisor_matches_them_and_stored_as_catalog_ids(
    field: str, given: str, stored: str | None
) -> None:
    assert getattr(Deployment(**{field: given}), field) == stored


@pytest.mark.parametrize(
    ("field", "given", "said"),
    [
        ("gpu", "H1000", "GPU 'H1000' is not in the catalog; did you mean: h100-80gb-sxm"),
        ("model", "gpt-9", "model 'gpt-9' is not in the catalog"),
        ("engine", "x", "engine 'x' is not in the catalog. Allowed: vllm, sglang, tensorrt-llm"),
        ("quant", "int3", "quantization 'int3' is not in the catalog"),
    ],
)
def test_an_unknown_name_is_refused_naming_the_field_and_the_allowed_values(field: str, given: str, said: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Deployment(**{field: given})
    (error,) = caught.value.errors()
    assert error["loc"] == (field,) and said in error["msg"] and "Allowed:" in error["msg"]


def test_a_bad_gpu_is_named_by_its_flag_its_url_parameter_and_its_label() -> None:
    err = io.StringIO()
    code = run_cli(["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--gpu", "H1000", "--no-db"], err=err)
    assert code == EXIT_USAGE
    assert err.getvalue().startswith("error: --gpu: GPU 'H1000' is not in the catalog; did you mean: h100-80gb-sxm")
    form, messages, rejected = validate_params(ProbeForm, {"model": "m", "gpu": "H1000"})
    assert list(rejected) == ["gpu"] and form.gpu is None
    assert messages[0].startswith("URL parameter `gpu` (GPU type): GPU 'H1000' is not in the catalog")
    _, typed, _ = validate_params(ProbeForm, {"gpu_count": 0}, source="form")
    assert typed[0].startswith("GPU count:")


def test_the_flags_the_form_and_the_stored_settings_come_from_one_definition() -> None:
    options = deployment_fields()
    assert options == {
        "gpu": "gpu",
        "gpu_count": "gpu_count",
        "model": "deploy_model",
        "engine": "engine",
        "quant": "quant",
    }
    for name, option in options.items():
        source, field = Deployment.model_fields[name], ProbeOptions.model_fields[option]
        assert field.alias == option and field.title == source.title and field.description == source.description
        assert field.default is None and CliOptions.model_fields[option].alias == option


def test_the_cli_flags_round_trip_to_the_stored_settings_and_the_form_link() -> None:
    argv = ["--base-url", "http://h:8000/v1", "--model", "served-name", "--gpu", "H100", "--gpu-count", "2"]
    argv += ["--deploy-model", "meta-llama/Llama-3.1-8B-Instruct", "--engine", "vLLM", "--quant", "FP8"]
    settings = parse_options(argv, environ={}).run_settings()
    assert settings.model == "served-name" and settings.deployment == FULL
    stored = RunSettings.model_validate_json(settings.model_dump_json())
    assert stored.deployment == FULL
    params = to_params(ProbeForm(model="served-name", **{o: getattr(FULL, n) for n, o in deployment_fields().items()}))
    assert {k: params[k] for k in ("gpu", "gpu_count", "deploy_model", "engine", "quant")} == {
        "gpu": "h100-80gb-sxm",
        "gpu_count": "2",
        "deploy_model": "llama3.1-8b",
        "engine": "vllm",
        "quant": "fp8",
    }
    form, messages, _ = validate_params(ProbeForm, params)
    assert not messages and form.run_settings().deployment == FULL
    assert parse_options(["--base-url", "http://h/v1", "--model", "m"], environ={}).run_settings().deployment == (
        Deployment()
    )


def test_runs_stored_before_the_deployment_existed_and_names_the_catalog_dropped_still_load() -> None:
    old = '{"base_url": "http://127.0.0.1:9/v1", "model": "m", "concurrency": [1, 4]}'
    assert RunSettings.model_validate_json(old).deployment == Deployment()
    gone = '{"base_url": "http://h/v1", "model": "m", "deployment": {"gpu": "retired-gpu", "engine": "vllm"}}'
    with pytest.raises(ValidationError):
        RunSettings.model_validate_json(gone)
    loaded = RunSettings.model_validate_json(gone, context={STORED: True})
    assert loaded.deployment.gpu == "retired-gpu" and loaded.deployment.engine == "vllm"


def test_the_deployment_reads_in_one_line_saying_what_was_detected() -> None:
    assert deployment_text(Deployment()) == ""
    detected = FULL.model_copy(update={"source": {"engine": "metrics"}})
    assert deployment_text(detected) == (
        "2 × H100 80GB SXM · Llama-3.1-8B-Instruct · vLLM · FP8 W8A8 (detected: engine from metrics)"
    )
    assert deployment_text(Deployment(engine="sglang")) == "gpu unknown · model unknown · SGLang · quant unknown"


# -- detection, pure ----------------------------------------------------------------------------------------------


def test_every_metric_prefix_names_a_catalog_engine() -> None:
    for _, engine in ENGINE_METRIC_PREFIXES:
        assert get_engine(engine).id == engine


@pytest.mark.parametrize(
    ("text", "engine"),
    [
        ("# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n",
         "vllm"),
        ('sglang:num_running_reqs{model_name="m"} 1\npython_gc_objects_collected_total 3\n', "sglang"),
        ("lmdeploy_requests_total 2\n", "lmdeploy"),
        ("trtllm_kv_cache_hit_rate 0.5\n", "tensorrt-llm"),
        ('tensorrt_llm_request_latency_seconds_sum{x="y"} 1\n', "tensorrt-llm"),
        ("tgi_request_count 4\n", "tgi"),
        ("llamacpp:prompt_tokens_total 12\n", "llama.cpp"),
        ("process_cpu_seconds_total 1\nhttp_requests_total 2\n", None),
        ("vllm:num_requests_running 0\nsglang:num_running_reqs 0\n", None),  # two engines: tells nothing
        ('[{"iter": 1, "gpuMemUsage": 3}]', None),  # trtllm-serve's JSON stats
        ("", None),
    ],
)  # fmt: skip
def test_the_engine_is_read_from_metric_names_only_when_one_engine_has_them(text: str, engine: str | None) -> None:
    assert engine_from_metrics(text) == engine


@pytest.mark.parametrize(
    ("owner", "engine"),
    [("vllm", "vllm"), ("sglang", "sglang"), ("llamacpp", "llama.cpp"), ("fake", None), (None, None)],
)
def test_the_model_list_owner_names_an_engine_only_exactly(owner: str | None, engine: str | None) -> None:
    assert engine_from_owner(owner) == engine


@pytest.mark.parametrize(
    ("names", "found"),
    [
        (["Qwen/Qwen2.5-7B-Instruct"], ("qwen2.5-7b", None)),
        (["/models/Qwen2.5-7B-Instruct", "qwen"], ("qwen2.5-7b", None)),  # path stripped; 'qwen' names nothing
        (["Qwen/Qwen2.5-7B-Instruct-AWQ"], ("qwen2.5-7b", "awq")),  # a published quantized checkpoint
        (["Qwen/Qwen2.5-7B-Instruct-GGUF"], ("qwen2.5-7b", None)),  # GGUF holds several quantizations
        (["qwen2.5:0.5b"], ("qwen2.5-0.5b", None)),  # an Ollama tag
        (["llama3.1-8b", "Qwen/Qwen2.5-7B-Instruct"], (None, None)),  # two models: ambiguous
        (["Qwen2.5-7B-Inst"], (None, None)),  # a prefix is not a name: nobody confirmed a forgiving match
        (["fake"], (None, None)),
    ],
)
def test_the_model_is_read_from_served_names_only_when_exactly_one_catalog_model_fits(
    names: list[str], found: tuple[str | None, str | None]
) -> None:
    assert model_from_names(names) == found


def test_detection_fills_only_blank_fields_and_says_where_from() -> None:
    listing = {"data": [{"id": "m", "root": "Qwen/Qwen2.5-7B-Instruct-AWQ", "owned_by": "sglang"}]}
    metrics = "vllm:num_requests_running 0\n"
    assert detect(Deployment(), "m", listing, metrics) == Deployment(
        model="qwen2.5-7b", engine="vllm", quant="awq", source={"engine": "metrics", "model": "/v1/models",
                                                                "quant": "/v1/models"}
    )  # fmt: skip
    given = Deployment(engine="sglang", quant="bf16", gpu="b200")
    assert detect(given, "m", listing, metrics) == given.model_copy(
        update={"model": "qwen2.5-7b", "source": {"model": "/v1/models"}}
    )
    assert detect(Deployment(), "m", listing, None).engine == "sglang"  # no metrics: the owner
    assert detect(Deployment(), "other", listing, None) == Deployment()  # the served model is not listed
    assert detect(Deployment(model="llama3.1-8b"), "m", listing, None).quant is None  # another model's checkpoint


# -- detection against a real HTTP server on 127.0.0.1 ---------------------------------------------------------------


def test_a_run_detects_engine_model_and_quantization_from_the_server() -> None:
    roots = {"served": "Qwen/Qwen2.5-7B-Instruct-AWQ"}
    with serve_in_thread(defaults=FAST, models=("served", "other"), engine="sglang", roots=roots) as server:
        told = MemorySink()
        result = asyncio.run(run_probe(settings_for(server, "served"), sink=told))
    expected = Deployment(
        model="qwen2.5-7b",
        engine="sglang",
        quant="awq",
        source={"engine": "metrics", "model": "/v1/models", "quant": "/v1/models"},
    )
    assert told.deployments == [expected] and result.settings.deployment == expected
    assert result.levels and result.levels[0].completed == 2


def test_without_metrics_the_engine_comes_from_the_model_list_and_given_fields_stay() -> None:
    with serve_in_thread(defaults=FAST, metrics=False, owned_by="vllm") as server:
        given = Deployment(gpu="H100", gpu_count=1, quant="bf16")
        result = asyncio.run(run_probe(settings_for(server, deployment=given)))
    assert result.settings.deployment == given.model_copy(update={"engine": "vllm", "source": {"engine": "/v1/models"}})


def test_nothing_is_detected_when_the_server_tells_nothing_clear_or_everything_was_given() -> None:
    with serve_in_thread(defaults=FAST) as server:  # vLLM metrics, a model called 'fake'
        told = MemorySink()
        result = asyncio.run(run_probe(settings_for(server, scrape_metrics=False), sink=told))
        assert told.deployments == [] and result.settings.deployment == Deployment()
        result = asyncio.run(run_probe(settings_for(server, deployment=FULL), sink=told))
        assert told.deployments == [] and result.settings.deployment == FULL
        result = asyncio.run(run_probe(settings_for(server)))
        assert result.settings.deployment == Deployment(engine="vllm", source={"engine": "metrics"})


def test_the_worker_hands_the_detected_deployment_to_its_sink_before_any_level() -> None:
    with serve_in_thread(defaults=FAST, roots={"fake": "meta-llama/Llama-3.1-8B-Instruct"}) as server:
        sink = MemorySink()
        run = ProbeRun(settings_for(server), sink=sink).start()
        assert run.wait(30)
    events = sink.events
    assert events[:2] == ["started", "deployment"] and events.count("level") == 1 and events[-1] == "finished"
    assert [(d.engine, d.model) for d in sink.deployments] == [("vllm", "llama3.1-8b")]
    assert run.result() is not None and run.result().settings.deployment.model == "llama3.1-8b"


def test_a_blank_trace_in_a_link_is_no_trace_and_the_link_round_trips() -> None:
    """Found by tests/ui/test_params_property.py: `trace=%20` became '' and its own link then read as None."""
    form, messages, _ = validate_params(ProbeForm, {"trace": " "})
    assert form.trace is None and not messages
    assert to_params(form) == {} and validate_params(ProbeForm, to_params(form))[0] == form
