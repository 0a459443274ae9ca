"""Disaggregated serving: the two-pool estimate, the KV handoff, the ratio search and the CLI's JSON contract."""

import json

import pytest

from catalog import find_gpu, find_model
from catalog.kvcache import kv_bytes_per_sequence
from catalog.links import find_kv_link, load_kv_links
from perf.cli import main
from perf.coefficients import family_for
from perf.disagg import estimate_topology
from perf.inputs import PerfRequest, Slo
from perf.kv_transfer import kv_transfer_ms
from perf.levels import UNBOUNDED_MS, poisson_level, prompts_in_step
from perf.readout import TTFT_TERMS
from perf.resolve import resolve
from perf.simulate import Workload
from perf.topology import TopologyOptions, min_gain

LONG_TIGHT = PerfRequest(
    gpu="H200",
    gpus=8,
    model="qwen3-32b",
    engine="trtllm",
    quant="fp8",
    input_tokens=4000,
    output_tokens=500,
    slo=Slo(ttft_p50_ms=300, ttft_p99_ms=2000, tpot_p50_ms=10),
)


def test_long_prompts_and_tight_tpot_favour_two_pools_with_more_prefill_gpus() -> None:
    result = estimate_topology(LONG_TIGHT, TopologyOptions(topology="best", total_gpus=32))
    chosen, other = result.chosen, result.alternative
    assert chosen.topology == "disagg" and other is not None and other.topology == "agg"
    assert chosen.meets_slo and chosen.output_tok_s_per_gpu > 1.3 * other.output_tok_s_per_gpu
    prefill_gpus = chosen.prefill.replicas * chosen.prefill.gpus_per_replica
    decode_gpus = chosen.decode.replicas * chosen.decode.gpus_per_replica
    assert 0.15 < prefill_gpus / (prefill_gpus + decode_gpus) < 0.85  # a sensible split, neither pool a token one
    assert chosen.gpus_used <= 32
    assert chosen.tpot_ms.p50 <= 10 and chosen.ttft_ms.p50 <= 300
    assert chosen.ttft_ms.p50 > chosen.kv_transfer_ms > 0  # TTFT includes the handoff
    assert chosen.basis.kind == "extrapolated" and "no disaggregated measurement" in chosen.basis.text
    ttft_band = chosen.bands["ttft_ms"]  # the held-out error on published disaggregated runs, not the one-pool band
    one_pool = other.bands["ttft_ms"]
    assert ttft_band.group.startswith("disaggregated")
    assert ttft_band.high_ratio / ttft_band.low_ratio > one_pool.high_ratio / one_pool.low_ratio  # and wider


def test_short_prompts_stay_in_one_pool() -> None:
    """Throughput within a TPOT limit: prefill is a sliver of the work, so a second pool buys nothing.

    The default TTFT limits hold both topologies to a closed loop's first wave (every user's prompt at once): the
    one-pool copy in its own loop, the prefill pool as its users send their prompts (perf.levels.prompts_in_step).
    """
    request = LONG_TIGHT.model_copy(update={"input_tokens": 100, "output_tokens": 1000, "slo": Slo(tpot_p50_ms=50)})
    result = estimate_topology(request, TopologyOptions(topology="best", total_gpus=16))
    assert result.chosen.topology == "agg"
    assert result.alternative is not None and result.alternative.topology == "disagg"
    assert result.alternative.output_tok_s_per_gpu <= result.chosen.output_tok_s_per_gpu * (1 + min_gain())


def test_kv_transfer_is_bytes_over_the_link_plus_its_latency() -> None:
    gpu, model = find_gpu("H200"), find_model("qwen3-32b")
    kv = kv_bytes_per_sequence(model, "fp8", 8000)
    ib, eth = find_kv_link("infiniband"), find_kv_link("ethernet")
    assert ib.gb_s_per_gpu and eth.gb_s_per_gpu
    assert kv_transfer_ms(kv, ib, gpu, 2) == pytest.approx(kv / (ib.gb_s_per_gpu * 2e9) * 1000 + ib.latency_ms)
    difference = kv_transfer_ms(kv, eth, gpu, 2) - kv_transfer_ms(kv, ib, gpu, 2)
    expected = kv / 2e9 * 1000 * (1 / eth.gb_s_per_gpu - 1 / ib.gb_s_per_gpu) + eth.latency_ms - ib.latency_ms
    assert difference == pytest.approx(expected)
    assert load_kv_links()["nvlink"].gb_s(gpu) == (gpu.interconnect_gb_s or 0) / 2


def test_ethernet_between_pools_adds_its_transfer_to_ttft() -> None:
    request = LONG_TIGHT.model_copy(update={"slo": Slo(ttft_p50_ms=3000, ttft_p99_ms=6000, tpot_p50_ms=10)})
    fixed = {"topology": "disagg", "total_gpus": 16, "prefill_gpus": 2, "decode_gpus": 4}
    ib = estimate_topology(request, TopologyOptions(link="infiniband", **fixed)).chosen
    eth = estimate_topology(request, TopologyOptions(link="ethernet", **fixed)).chosen
    assert ib.link == "infiniband" and eth.link == "ethernet"
    assert ib.kv_bytes_per_request == eth.kv_bytes_per_request
    gap = eth.kv_transfer_ms - ib.kv_transfer_ms
    assert gap == pytest.approx(
        ib.kv_bytes_per_request / 2e9 * 1000 * (1 / 12.5 - 1 / 50) + 5.0 - 1.0, rel=1e-3
    )  # kv_links.csv: 12.5 and 50 GB/s per GPU, 5 and 1 ms
    assert eth.ttft_ms.p50 > ib.ttft_ms.p50


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


BASE = ("--gpu", "H200", "--gpus", "8", "--model", "qwen3-32b", "--engine", "trtllm", "--quant", "fp8")
LOAD = ("--input-tokens", "4000", "--output-tokens", "500", "--ttft-p50-ms", "300", "--ttft-p99-ms", "2000")


def test_cli_json_contract_for_best(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, *BASE, *LOAD, "--tpot-p50-ms", "10", "--total-gpus", "32", "--topology", "best", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["topology"] == "disagg" and data["alternative"]["topology"] == "agg"
    for key in ("prefill", "decode"):
        assert set(data[key]) == {"replicas", "gpus_per_replica"} and data[key]["replicas"] >= 1
    assert data["kv_transfer_ms"] > 0 and data["alternative"]["kv_transfer_ms"] == 0
    assert data["output_tok_s_per_gpu"] > data["alternative"]["output_tok_s_per_gpu"] > 0
    assert data["estimate"] is True and data["model"] == "qwen3-32b"
    assert data["topology_basis"]["kind"] == "extrapolated" and set(data["topology_bands"]) == {
        "output_tok_s",
        "tpot_ms",
        "ttft_ms",
    }


def test_an_slo_no_layout_meets_reports_no_latencies(capsys: pytest.CaptureFixture[str]) -> None:
    """TPOT 1 ms is out of reach: the figures say so, with no invented 0 ms latencies or 0 tok/s lines."""
    args = (*BASE, *LOAD, "--tpot-p50-ms", "1", "--total-gpus", "32", "--topology", "best")
    code, out, _ = _run(capsys, *args, "--json")
    data = json.loads(out)
    assert code == 0 and data["meets_slo"] is False and data["alternative"]["meets_slo"] is False
    assert data["ttft_ms"] is None and data["tpot_ms"] is None and data["alternative"]["ttft_ms"] is None
    code, out, _ = _run(capsys, *args)
    assert out.count("no layout searched meets the SLO") == 2 and "TTFT p50 0 ms" not in out


def test_cli_pools_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, *BASE, *LOAD, "--topology", "disagg", "--prefill-gpus", "2", "--decode-gpus", "4", "--json"
    )
    data = json.loads(out)
    assert code == 0 and "alternative" not in data
    assert data["prefill"]["gpus_per_replica"] == 2 and data["decode"]["gpus_per_replica"] == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--topology", "disagg", "--link", "pigeon"), "link: 'pigeon' is not a link between pools"),
        (("--topology", "disagg", "--prefill-gpus", "0"), "--prefill-gpus"),
    ],
)
def test_cli_bad_topology_input_is_named(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, _, err = _run(capsys, *BASE, *LOAD, *args)
    assert code == 2 and message in err


def test_cli_unknown_topology_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*BASE, "--topology", "both"])
    assert "--topology" in capsys.readouterr().err


def test_held_out_check_estimates_measured_disaggregated_rows_with_their_own_pools() -> None:
    from perf.disagg_check import checked_rows

    rows, left = checked_rows(limit=3)
    assert len(rows) == 3 and all(r.est_ttft_ms > 0 and r.est_tpot_ms > 0 for r in rows)
    assert all(r.ttft_ms > 0 and r.tpot_ms > 0 for r in rows)
    assert sum(left.values()) >= 0


def test_the_bands_every_two_pool_estimate_shows_are_those_of_the_current_model() -> None:
    """perf/data/disagg_bands.json is the held-out check of today's model: rerun `make perf-model` when this fails."""
    from perf.disagg_check import bands, checked_rows
    from perf.topology import DISAGG_BANDS, disagg_bands

    rows, left = checked_rows()
    assert json.loads(DISAGG_BANDS.read_text(encoding="utf-8")) == bands(rows)
    # rows that do not give their pools' sizes are counted out, not read as one replica each (their TPOT was
    # estimated at about twice the measured one)
    assert left["pool sizes not given (prefill and decode workers)"] > 1000 and len(rows) > 150
    shown = disagg_bands()["ttft_ms"]
    assert (shown.low_ratio, shown.high_ratio) == tuple(bands(rows)["ttft_ms"])  # type: ignore[arg-type]


def test_inferencex_runs_on_mi300x_are_all_estimated_with_their_own_pools() -> None:
    from perf.disagg_check import inferencex_rows, ratios

    rows, left = inferencex_rows()
    assert not left and len(rows) == 16  # gpt-oss-120b MXFP4 at tensor parallel 8 included: the engines pad
    assert {r.engine for r in rows} == {"vllm"}
    assert all(r.est_ttft_ms > 0 and r.est_tpot_ms > 0 for r in rows) and len(ratios(rows)["tpot_ms"]) == 16


def test_the_decode_pool_holds_no_more_streams_than_the_ttft_limit_pays_for() -> None:
    """The decode server returns the first token, and each stream it holds costs TTFT (the fitted readout's cost per
    request in flight): wide-EP DeepSeek decode replicas could batch 20,000 users within TPOT, but not within 3 s."""
    request = PerfRequest(
        gpu="H100",
        gpus=96,
        model="deepseek-v3",
        engine="sglang",
        input_tokens=2000,
        output_tokens=200,
        slo=Slo(ttft_p50_ms=3000, ttft_p99_ms=10000, tpot_p50_ms=100),
    )
    pools = TopologyOptions(topology="disagg", prefill_gpus=32, decode_gpus=64, total_gpus=96)
    chosen = estimate_topology(request, pools).chosen
    assert chosen.meets_slo and chosen.output_tok_s_per_gpu > 0
    per_stream_ms = family_for("sglang")[0].ttft[TTFT_TERMS.index("per_in_flight_s")] * 1000
    users_per_decode = chosen.output_tok_s / chosen.tok_s_per_user / chosen.decode.replicas
    assert per_stream_ms > 0 and users_per_decode > 100
    assert chosen.kv_transfer_ms + users_per_decode * per_stream_ms <= chosen.ttft_ms.p50 <= 3000


def test_a_prefill_replica_waits_longer_the_more_users_send_their_first_wave_at_once() -> None:
    """Prompts sent as a closed loop sends them: at one rate, more users mean a longer first wave, never less wait
    than the steady Poisson arrivals alone, and 16 times the users at least twice the p99 (the last of the wave)."""
    setup = resolve(LONG_TIGHT.model_copy(update={"gpus": 1, "output_tokens": 1}))
    work = Workload(4000, 1)
    unbounded = Slo(ttft_p50_ms=UNBOUNDED_MS, ttft_p99_ms=UNBOUNDED_MS, tpot_p50_ms=UNBOUNDED_MS)
    steady = poisson_level(setup.base, work, unbounded, 1.0).ttft_ms
    few, many = (prompts_in_step(setup.base, work, users, 1.0) for users in (2, 32))
    assert steady.p50 * 0.99 <= few.p50 < many.p50
    assert (many.p99 or 0) > 2 * (few.p99 or 0) and (many.p99 or 0) > (steady.p99 or 0)
