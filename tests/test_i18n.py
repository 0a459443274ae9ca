"""Both languages: every marked string has its Chinese translation and every catalog entry is used; the language of a
link; numbers and money as each language writes them."""

import pytest

from i18n import LANGUAGES, parse_language, translate
from i18n.catalogs import domains, problems, read, template
from i18n.concepts import CONCEPTS
from tco.money import format_money


@pytest.mark.parametrize("domain", list(domains()))
def test_every_string_has_a_chinese_translation_and_every_entry_is_used(domain: str) -> None:
    assert problems(domain) == []


def test_every_area_of_the_app_has_a_catalog_with_strings() -> None:
    assert {"common", "tco", "selector", "compare", "probe"} <= set(domains())
    assert all(len(template(domain)) > 20 for domain in domains())


def test_placeholders_survive_translation() -> None:
    for domain in domains():
        for message in template(domain):
            if not isinstance(message.id, str) or "{" not in message.id:
                continue
            translated = translate("zh", message.id)
            names = sorted(part.split("}")[0] for part in message.id.split("{")[1:])
            assert sorted(part.split("}")[0] for part in translated.split("{")[1:]) == names, message.id


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        *[("zh", "zh"), ("zh-CN", "zh"), ("zh_Hans_CN", "zh"), ("ZH-tw", "zh"), ("en-US", "en"), ("en", "en")],
        *[("fr", None), ("", None), (None, None), ("  ", None)],
    ],
)
def test_a_language_is_read_from_a_link_or_a_browser(given: object, expected: str | None) -> None:
    assert parse_language(given) == expected


def test_english_is_the_msgid_and_chinese_comes_from_the_catalog() -> None:
    assert LANGUAGES == ("en", "zh")
    assert translate("en", "Cost per request") == "Cost per request"
    assert translate("zh", "Cost per request") == "每请求成本"
    assert translate("zh", "no such message anywhere") == "no such message anywhere"


@pytest.mark.parametrize(
    ("amount", "currency", "english", "chinese"),
    [
        (0.0014, "CNY", "0.0014 CNY", "0.0014 元"),  # the handbook's cost per request
        (10_800, "CNY", "10,800 CNY", "1.08 万元"),  # its month: in 万 from ten thousand on
        (129_600, "CNY", "129,600 CNY", "12.96 万元"),
        (310_000_000, "CNY", "310,000,000 CNY", "3.1 亿元"),
        (7.09, "CNY", "7.09 CNY", "7.09 元"),
        (0.0002, "USD", "0.00020 USD", "$0.00020"),
        (1_500, "USD", "1,500 USD", "$1,500"),
        (25_000, "USD", "25,000 USD", "$2.5 万"),
    ],
)
def test_money_reads_as_each_language_writes_it(amount: float, currency: str, english: str, chinese: str) -> None:
    assert format_money(amount, currency) == english
    assert format_money(amount, currency, language="zh") == chinese


@pytest.mark.parametrize(
    ("amount", "compact"),
    [
        (147_820_000, "147.8M CNY"),  # a fleet's year: four figures, as 1.478 亿元 keeps, so a metric card holds it
        (1_300_000, "1.300M CNY"),
        (999_960_000, "1.000B CNY"),  # rounds up into the next unit, never '1,000.0M'
        (2_450_000_000, "2.450B CNY"),
        (254_016, "254,016 CNY"),  # below a million: grouped, as without compact
    ],
)
def test_compact_money_keeps_four_figures_in_millions_and_billions(amount: float, compact: str) -> None:
    assert format_money(amount, "CNY", compact=True) == compact


def test_every_concept_names_a_handbook_section_that_exists() -> None:
    from catalog.handbook_text import handbook_sections

    sections = {s.number for s in handbook_sections()}
    assert len(CONCEPTS) == 10 and all(c.section in sections for c in CONCEPTS)


def test_a_string_reads_the_same_in_every_area() -> None:
    """A msgid two areas share has one translation: the catalogs are chained, so only one of them would show."""
    seen: dict[str, dict[str, str]] = {}
    for domain in domains():
        for message in read(domain):
            if isinstance(message.id, str) and message.id and message.string:
                seen.setdefault(message.id, {})[domain] = str(message.string)
    assert {msgid: found for msgid, found in seen.items() if len(set(found.values())) > 1} == {}


def test_csv_exports_keep_their_english_keys_and_add_labels_only_when_asked() -> None:
    from datetime import UTC, datetime
    from functools import partial

    from probes.config import RunSettings
    from probes.export import levels_csv, samples_csv
    from probes.models import RunResult, RunStatus

    run = RunResult(
        endpoint="http://h/v1",
        model="m",
        settings=RunSettings(base_url="http://h/v1", model="m"),
        status=RunStatus.COMPLETED,
        started_at=datetime.now(UTC),
    )
    plain = levels_csv(run).splitlines()
    labelled = levels_csv(run, labels=partial(translate, "zh")).splitlines()
    assert len(plain) == 1 and labelled[0] == plain[0] and plain[0].startswith("concurrency,request_rate_rps,")
    assert labelled[1].startswith("并发,") and "TTFT p50（ms）" in labelled[1] and "SLO 达成率" in labelled[1]
    assert samples_csv(run, labels=partial(translate, "en")).splitlines()[1].startswith("Level,Concurrency,Request,")


def test_the_notes_quote_the_handbooks_numbers_from_its_data_file() -> None:
    from catalog import load_handbook
    from i18n.concepts import concept, note_values

    slo = load_handbook().slo
    for language in LANGUAGES:
        for item in CONCEPTS:
            translate(language, item.note).format(**note_values())  # every placeholder has its number
        goodput = translate(language, concept("goodput").note).format(**note_values())
        assert all(f"{v:g} ms" in goodput for v in (slo.ttft_p50_ms, slo.ttft_p99_ms, slo.tpot_p50_ms))
