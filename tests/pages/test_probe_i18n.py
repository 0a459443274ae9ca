"""/probe and /runs in Chinese (lang=zh): the form, live progress, results (closed loop, sessions, trace replay),
failures, and the stored runs listed, opened, compared and deleted, with no text left in English; lang=en unchanged."""

import json
import re
import time
from collections.abc import Iterator
from functools import partial
from urllib.parse import parse_qsl

import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from db import init_db, make_engine
from db.recorder import RunRecorder
from db.run_queries import get_run, list_runs
from fakeserver import Behaviour, FakeServer, serve_in_thread
from i18n import translate
from probes import ProbeRun, RunSettings, Timeouts
from probes.wording import MAX_LEVELS, SEARCH_STOPPED, TOO_MANY_FAILED, UNCALIBRATED, note_text
from tests.pages.apptest import (
    KEPT_WORDS,
    english_leftovers,
    finish_probe,
    metric,
    newest_list,
    open_page,
    open_result_tab,
    open_tab,
    runs_grid,
    texts,
)
from tests.support import free_port

ZH = {"lang": "zh"}
_CJK = re.compile(r"[\u4e00-\u9fff]")
_ICON = re.compile(r":material/[a-z_]+:")
_WORD = re.compile(r"\b[A-Za-z][a-z]{2,}\b")  # as english_leftovers counts words


@pytest.fixture(autouse=True)
def _fresh_db(database_url: str) -> None:
    from ui.resources import get_engine

    get_engine.clear()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=8), max_running=None) as server:
        yield server


def _engine(database_url: str) -> Engine:
    engine = make_engine(database_url)
    init_db(engine)
    return engine


def _leftovers(at: AppTest) -> list[str]:
    """english_leftovers, a run's heading read without its status icon (`:material/check_circle:`, not words)."""
    found = []
    for text in english_leftovers(at):
        plain = _ICON.sub(" ", text)
        if len([w for w in _WORD.findall(plain) if w not in KEPT_WORDS]) >= 2:
            found.append(text)
    return found


def _clean(at: AppTest) -> None:
    """No exception, no error, nothing left in English."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert _leftovers(at) == []


def _figure(at: AppTest, index: int) -> dict[str, object]:
    return json.loads(at.get("plotly_chart")[index].proto.spec)  # type: ignore[no-any-return]


def _figure_texts(figure: dict[str, object]) -> str:
    """Every title, axis title and legend name of a plotly figure, joined."""
    layout = figure["layout"]
    assert isinstance(layout, dict)
    found = [str(layout.get("title", {}).get("text", ""))]
    found += [str(a.get("text", "")) for a in layout.get("annotations", [])]
    for name, axis in layout.items():
        if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            found.append(str(axis.get("title", {}).get("text", "")))
    data = figure["data"]
    assert isinstance(data, list)
    found += [str(trace.get("name", "")) for trace in data]
    return " | ".join(found)


@pytest.mark.parametrize("workload", ["seed", "synthetic", "shared_prefix", "file", "trace", "sessions"])
def test_the_form_reads_in_chinese_for_every_workload(workload: str) -> None:
    at = open_page("probe", {**ZH, "workload": workload})
    _clean(at)
    assert at.title[0].value == "实际能跑多快？"
    requests = at.number_input(key="probe.requests")
    assert requests.label == "每档请求数" and "允许值：1–100000。" in requests.help
    assert (requests.min, requests.max) == (1, 100_000)  # the limits are the field's, whatever the language
    levels = at.text_input(key="probe.levels")
    assert levels.label == "并发档位" and "1–32 个互不相同的档位" in levels.help
    assert at.selectbox(key="probe.workload").label == "负载"
    assert "Trace 回放（到达时间与长度）" in at.selectbox(key="probe.workload").options
    assert at.button(key="probe.start").label == "开始压测"
    assert {e.label for e in at.expander} >= {"负载与生成", "SLO 目标", "超时", "请求速率（开环）"}
    assert at.query_params["lang"] in ("zh", ["zh"])  # the link keeps the language


def test_english_stays_as_it_was() -> None:
    at = open_page("probe", {"lang": "en", "workload": "sessions"})
    assert not at.exception and not at.error
    assert at.title[0].value == "How fast is it really?"
    assert at.number_input(key="probe.requests").label == "Requests per level"
    assert "Allowed: 1–100000." in at.number_input(key="probe.requests").help
    assert at.selectbox(key="probe.session_variant").options == ["Chat", "Agent (long tool context, short answers)"]
    assert not any(_CJK.search(t) for t in texts(at.caption) + [e.label for e in at.expander])


def test_a_run_in_chinese_shows_progress_results_figures_and_downloads(fake: FakeServer, database_url: str) -> None:
    at = open_page("probe", {**ZH, "url": fake.base_url, "model": "fake", "levels": "1,2", "requests": "4"})
    at.button(key="probe.start").click().run()
    assert not at.exception and not at.error
    finish_probe(at)
    _clean(at)
    assert at.subheader[0].value == "结果"
    assert metric(at, "满足 SLO 的最高并发") == "2"
    assert float(metric(at, "输出 tok/s").replace(",", "")) > 0
    assert any(c.startswith("从并发 1") and "手册的基线" in c for c in texts(at.caption))
    assert [t.label for t in at.tabs] == ["档位", "延迟", "吞吐", "错误"]
    levels = next(d.value for d in at.dataframe if "并发" in d.value.columns)
    assert {"请求数", "输出 tok/s", "TTFT p50（ms）", "满足 SLO"} <= set(levels.columns)
    assert list(levels["并发"]) == [1, 2]
    latency = _figure(open_result_tab(at, "延迟"), 0)  # lazy tabs: a chart runs once its tab is opened
    throughput = _figure(open_result_tab(at, "吞吐"), 0)
    shown = _figure_texts(latency)
    assert "延迟随并发的变化" in shown and "TTFT（首 token 延迟）" in shown and "并发" in shown
    assert "吞吐随并发的变化" in _figure_texts(throughput) and "满足 SLO 的最高档" in _figure_texts(throughput)
    labels = sorted(b.proto.label for b in at.get("download_button"))
    assert labels == ["下载 JSON", "下载档位 CSV", "下载请求 CSV"]
    cost = next(p for p in at.get("page_link") if p.proto.label == "计算成本")
    assert set(dict(parse_qsl(cost.proto.query_string))) >= {"tps", "out_tokens", "in_tokens"}  # parameters stay
    assert any(p.proto.label == "在压测记录中打开" for p in at.get("page_link"))
    level = next(s for s in at.selectbox if s.label == "用于计算成本的档位")
    assert level.format_func(1).startswith("并发 2：") and "满足 SLO 的最高档" in level.format_func(1)
    (row,) = list_runs(_engine(database_url))
    assert row.status == "completed"  # stored values stay English


def test_live_progress_and_cancel_read_in_chinese(fake: FakeServer, database_url: str) -> None:
    slow = "fake:ttft_ms=20,tpot_ms=40,tokens=30"  # about 1.2 s per request
    at = open_page("probe", {**ZH, "url": fake.base_url, "model": slow, "levels": "1,2", "requests": "6"})
    at.button(key="probe.start").click().run()
    deadline = time.monotonic() + 20
    while not any(re.search(r"本档位：已完成 [1-9]", bar.proto.text) for bar in at.get("progress")):
        assert time.monotonic() < deadline, "no progress in Chinese"
        time.sleep(0.2)
        at.run()
    assert not at.exception and not at.error
    assert any(bar.proto.text.startswith("整体：已完成") for bar in at.get("progress"))
    assert at.button(key="probe.cancel").label == "取消压测"
    assert _leftovers(at) == []
    at.button(key="probe.cancel").click().run()
    finish_probe(at)
    _clean(at)
    assert any("压测已取消" in w for w in texts(at.warning))


def test_sessions_show_their_turns_in_chinese(fake: FakeServer) -> None:
    at = open_page(
        "probe", {**ZH, "url": fake.base_url, "model": "fake", "workload": "sessions", "sessions": "2", "turns": "3"}
    )
    at.button(key="probe.start").click().run()
    finish_probe(at)
    _clean(at)
    assert metric(at, "SLO") == "达标"
    assert [t.label for t in at.tabs] == ["档位", "延迟", "吞吐", "错误", "按轮次"]
    open_result_tab(at, "按轮次")
    assert any(m == "**按轮次**" for m in texts(at.markdown))
    assert any("前缀缓存命中率" in c for c in texts(at.caption))
    turns = next(d.value for d in at.dataframe if "轮次" in d.value.columns)
    assert list(turns["轮次"]) == [1, 2, 3] and "prompt token 数（平均）" in turns.columns
    assert "会话：随历史增长，各轮的首 token 延迟" in _figure_texts(_figure(at, 0))
    assert "下载轮次 CSV" in [b.proto.label for b in at.get("download_button")]


def test_a_trace_replay_shows_its_figures_in_chinese(fake: FakeServer) -> None:
    at = open_page(
        "probe",
        {
            **ZH,
            "url": fake.base_url,
            "model": "fake",
            "workload": "trace",
            "trace": "azure-code",
            "trace_limit": "10",
            "trace_speed": "50",
        },
    )
    _clean(at)
    assert at.selectbox(key="probe.trace").format_func("azure-code") == "Azure 2023 代码（8,819 个请求，57 分钟）"
    at.button(key="probe.start").click().run()
    finish_probe(at)
    _clean(at)
    open_result_tab(at, "时间线")
    assert metric(at, "回放的请求数") == "10"
    assert metric(at, "发送延迟 p50").endswith(" ms")
    timeline = _figure_texts(_figure(at, 0))
    assert "Trace 回放：各请求随时间的 TTFT 与 E2E" in timeline and "到达时间（距回放开始的秒数）" in timeline


def test_failures_are_said_in_chinese(database_url: str) -> None:
    refused = open_page("probe", {**ZH, "url": "http://127.0.0.1:9/v1", "model": "", "requests": "2"})
    refused.button(key="probe.start").click().run()
    assert not refused.exception and _leftovers(refused) == []
    (error,) = texts(refused.error)
    assert error.startswith("压测未能开始：")
    url = f"http://127.0.0.1:{free_port()}/v1"
    at = open_page("probe", {**ZH, "url": url, "model": "m", "levels": "1", "requests": "2", "connect_timeout": "2"})
    at.button(key="probe.start").click().run()
    finish_probe(at)
    assert not at.exception and _leftovers(at) == []
    (error,) = texts(at.error)
    assert error.startswith("压测失败：无法连通 ") and "**测试连接**" in error


def _record(engine: Engine, fake: FakeServer, model: str, label: str = "", levels: tuple[int, ...] = (1, 2)) -> str:
    """A real probe run against the fake server, stored as the page stores it."""
    settings = RunSettings(
        base_url=fake.base_url,
        model=model,
        label=label,
        concurrency=levels,
        requests_per_level=3,
        timeouts=Timeouts(connect_s=2, ttft_s=5, stall_s=5),
    )
    recorder = RunRecorder(engine)
    run = ProbeRun(settings, sink=recorder).start()
    assert run.wait(30)
    return recorder.run_id


def test_runs_list_filters_open_compare_and_delete_in_chinese(fake: FakeServer, database_url: str) -> None:
    empty = open_page("runs", ZH)
    _clean(empty)
    assert any("没有符合条件的压测记录" in i for i in texts(empty.info))
    engine = _engine(database_url)
    first = _record(engine, fake, "fake:tokens=8", label="eight")
    second = _record(engine, fake, "fake:tokens=4", label="four", levels=(1, 4))

    listed = open_page("runs", ZH)
    _clean(listed)
    assert listed.title[0].value == "压测记录"
    assert [s.label for s in listed.sidebar.selectbox] == ["接口地址", "模型"]  # the filters (the import form: its own)
    assert listed.selectbox(key="runs.model").format_func("") == "全部模型"
    assert "| 开始时间 | 状态 | 名称 |" in newest_list(listed)
    table = runs_grid(listed)
    assert {"开始时间", "状态", "名称", "满足 SLO 的最高并发", "id"} <= set(table.columns)
    assert set(table["状态"]) == {"已完成"} and set(table["id"]) == {first, second}
    assert listed.multiselect(key="runs.runs").label == "打开压测"

    one = open_page("runs", {**ZH, "runs": first})
    _clean(one)
    assert metric(one, "满足 SLO 的最高并发") == "2"
    assert any(" · 模型 fake" in c and " · 负载 seed · " in c and "，每档 3 个请求" in c for c in texts(one.caption))
    assert sorted(b.proto.label for b in one.get("download_button")) == [
        "下载 JSON",
        "下载 llm-d 基准报告",
        "下载 vLLM 结果 JSON",
        "下载档位 CSV",
        "下载请求 CSV",
    ]
    assert one.button(key=f"runs.delete.{first}").label == "删除压测…"
    one.button(key=f"runs.delete.{first}").click().run()
    _clean(one)
    assert any("此操作无法撤销" in w for w in texts(one.warning))
    assert one.button(key=f"runs.keep.{first}").label == "保留"
    one.button(key=f"runs.confirm_delete.{first}").click().run()
    _clean(one)
    assert any(s.startswith("已删除压测") for s in texts(one.success))

    third = _record(engine, fake, "fake:tokens=8", label="again")
    compared = open_page("runs", {**ZH, "runs": f"{second},{third}"})
    _clean(compared)
    assert any(s == "对比 2 次压测" for s in texts(compared.subheader))
    assert [t.label for t in compared.tabs][2:5] == ["档位并排对比", "延迟", "吞吐"]  # after the list's two
    side = next(d.value for d in compared.dataframe if "并发" in d.value.columns)
    assert {"压测", "并发", "输出 tok/s"} <= set(side.columns) and len(side) == 4
    assert "延迟随并发的变化" in _figure_texts(_figure(open_tab(compared, "runs.compare.tab", "延迟"), 0))


def test_runs_in_english_stay_as_they_were(fake: FakeServer, database_url: str) -> None:
    run_id = _record(_engine(database_url), fake, "fake:tokens=8")
    at = open_page("runs", {"lang": "en", "runs": run_id})
    assert not at.exception and not at.error
    assert at.title[0].value == "Probe runs"
    assert newest_list(at).startswith("| started | status | label |")
    assert {"started", "status", "label", "id"} <= set(runs_grid(at).columns)
    assert metric(at, "Max concurrency in SLO") == "2"
    assert [t.label for t in at.tabs][2:6] == ["Levels", "Latency", "Throughput", "Errors"]  # after the list's


def test_a_bad_link_and_a_bad_input_are_named_in_chinese() -> None:
    linked = open_page("probe", {**ZH, "levels": "0,4", "model": "m"})
    assert not linked.exception and _leftovers(linked) == []
    (warning,) = texts(linked.warning)
    assert "`levels`" in warning and "并发档位" in warning
    at = open_page("probe", {**ZH, "model": "m"})
    at.text_input(key="probe.levels").input("abc").run()
    assert not at.exception and _leftovers(at) == []
    (error,) = texts(at.error)
    assert "请检查这些输入；全部有效后才能开始压测。" in error and "并发档位" in error
    assert at.button(key="probe.start").disabled


def _connection_result(at: AppTest) -> str:
    """The Test connection result drawn beside the button (`:green[✓] …` or `:red[✗] …`)."""
    (shown,) = [m for m in texts(at.markdown) if m.startswith((":green[✓]", ":red[✗]"))]
    return shown


def test_test_connection_says_its_result_in_chinese(fake: FakeServer) -> None:
    at = open_page("probe", {**ZH, "url": fake.base_url, "model": "fake"})
    at.button(key="probe.test").click().run()
    _clean(at)
    assert _connection_result(at).startswith(":green[✓] 正常：首个 token 用时 ")
    at.text_input(key="probe.model").set_value("other").run()
    at.button(key="probe.test").click().run()
    _clean(at)
    shown = _connection_result(at)
    assert shown.startswith(":red[✗] 该服务端不提供模型 ") and "提供的模型：fake" in shown
    at.text_input(key="probe.model").set_value("").run()
    at.button(key="probe.test").click().run()
    _clean(at)
    assert _connection_result(at) == ":green[✓] 可以连通；提供 1 个模型"
    down = open_page("probe", {**ZH, "url": f"http://127.0.0.1:{free_port()}/v1", "model": "fake"})
    down.button(key="probe.test").click().run()
    _clean(down)
    assert _connection_result(down).startswith(":red[✗] 无法连接到 ")


def test_test_connection_in_english_stays_as_it_was(fake: FakeServer) -> None:
    at = open_page("probe", {"lang": "en", "url": fake.base_url, "model": "fake"})
    at.button(key="probe.test").click().run()
    assert not at.exception and not at.error
    assert _connection_result(at).startswith(":green[✓] OK\\: first token after ")  # escaped Markdown


def _open_tab(at: AppTest, key: str, label: str) -> None:
    """Open a run's tab by its English label (lazy tabs draw only the open one)."""
    at.session_state[key] = translate("zh", label)
    at.run()


LAST = "_probe.last_run_id"  # the finished run the page shows (views/probe.py)


def test_a_replay_without_usage_says_its_lengths_are_uncalibrated_in_chinese(
    fake: FakeServer, database_url: str
) -> None:
    params = {**ZH, "url": fake.base_url, "model": "fake:usage=false", "workload": "trace", "trace": "azure-code"}
    at = open_page("probe", {**params, "trace_limit": "5", "trace_speed": "50"})
    at.button(key="probe.start").click().run()
    finish_probe(at)
    _clean(at)
    if not any("未经校准" in i for i in texts(at.info)):
        _open_tab(at, f"probe.result.{at.session_state[LAST]}.tab", "Timeline")
        _clean(at)
    assert any(i.startswith("服务端没有报告 prompt 的 token 用量") and "未经校准" in i for i in texts(at.info))
    stored = get_run(_engine(database_url), at.session_state[LAST])
    assert stored is not None and stored.notes == [UNCALIBRATED]  # the stored note stays English


def test_a_rate_search_says_why_it_stopped_in_chinese(fake: FakeServer, database_url: str) -> None:
    link = {**ZH, "url": fake.base_url, "model": "fake", "rate": "20", "requests": "4"}
    at = open_page("probe", {**link, "find_max_rate": "true", "search_max_levels": "2"})
    at.button(key="probe.start").click().run()
    finish_probe(at)
    _clean(at)
    (best,) = [m for m in at.metric if m.label == "满足 SLO 的最高请求速率"]
    assert "搜索：档位数预算（2）已用完。" in best.proto.help
    stored = get_run(_engine(database_url), at.session_state[LAST])
    assert stored is not None and stored.rate_search is not None
    assert stored.rate_search.stop_detail == "the level budget (2) ran out"  # JSON and CLI stay English


def test_a_rate_search_that_misses_says_why_not_in_chinese(fake: FakeServer) -> None:
    link = {**ZH, "url": fake.base_url, "model": "fake:fault=500", "rate": "20", "requests": "4"}
    at = open_page("probe", {**link, "find_max_rate": "true", "search_max_levels": "2"})
    at.button(key="probe.start").click().run()
    finish_probe(at)
    _clean(at)
    (best,) = [m for m in at.metric if m.label == "满足 SLO 的最高请求速率"]
    assert best.value == "无" and "搜索：第一个速率（每秒 20 个请求）就未满足 SLO。" in best.proto.help
    levels = next(d.value for d in at.dataframe if "未达标原因" in d.value.columns)
    assert list(levels["未达标原因"]) == ["没有请求成功完成, 4 个请求中 4 个失败（超过 1%）"]


def test_why_not_and_stop_details_are_worded_from_their_english() -> None:
    zh = partial(translate, "zh")
    detail = SEARCH_STOPPED.format(detail=MAX_LEVELS.format(levels=3))
    assert note_text(detail) == detail  # English: the text itself, byte for byte
    assert note_text(detail, zh) == "速率搜索已停止：档位数预算（3）已用完"
    failed = TOO_MANY_FAILED.format(failed=3, sent=4, ratio="1%")
    assert note_text(failed, zh) == "4 个请求中 3 个失败（超过 1%）"
    assert note_text("TTFT p50 300 ms > 200 ms", zh) == "TTFT p50 300 ms > 200 ms"  # a figure, not a sentence
    assert note_text("a server's own words", zh) == "a server's own words"
