"""The probe refuses link-local and cloud-metadata targets unless allowed, and honours PROBE_ALLOWED_HOSTS."""

import pytest

from probes.config import RunSettings, check_run_settings
from probes.endpoint import list_models, run_sync
from probes.errors import ProbeSettingsError
from probes.safety import host_refusal, parse_allowed_hosts
from settings import Settings

NONE: frozenset[str] = frozenset()


@pytest.mark.parametrize(
    "host",
    [
        "169.254.169.254",
        "169.254.1.1",
        "fe80::1",
        "[fd00:ec2::254]",
        "fd00:ec2::254",
        "::ffff:169.254.169.254",
        "100.100.100.200",
        "metadata.google.internal",
        "METADATA",
        "instance-data",
    ],
)
def test_metadata_and_link_local_hosts_are_refused(host: str) -> None:
    refusal = host_refusal(host, NONE, resolver=lambda _h: [])
    assert refusal is not None and "PROBE_ALLOWED_HOSTS" in refusal


def test_a_name_resolving_to_the_metadata_address_is_refused() -> None:
    refusal = host_refusal("innocent.example", NONE, resolver=lambda _h: ["10.0.0.5", "169.254.169.254"])
    assert refusal is not None and "169.254.169.254" in refusal


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "gpu-box.internal", "10.1.2.3", "::1"])
def test_ordinary_hosts_are_allowed_by_default(host: str) -> None:
    assert host_refusal(host, NONE, resolver=lambda _h: ["10.1.2.3"]) is None


def test_allowed_hosts_restrict_and_can_name_a_metadata_host_explicitly() -> None:
    allowed = parse_allowed_hosts(" gpu-box.internal, 169.254.169.254 ,")
    assert allowed == {"gpu-box.internal", "169.254.169.254"}
    assert host_refusal("gpu-box.internal", allowed) is None
    assert host_refusal("169.254.169.254", allowed) is None
    refusal = host_refusal("127.0.0.1", allowed)
    assert refusal is not None and "not in PROBE_ALLOWED_HOSTS" in refusal


def test_run_settings_and_connection_check_refuse_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = RunSettings(base_url="http://169.254.169.254/v1", model="m", concurrency=(1,), requests_per_level=1)
    with pytest.raises(ProbeSettingsError, match="cloud-metadata"):
        check_run_settings(settings, Settings())
    check_run_settings(settings, Settings(probe_allowed_hosts="169.254.169.254"))  # explicitly allowed
    with pytest.raises(ProbeSettingsError, match="cloud-metadata"):
        run_sync(list_models("http://169.254.169.254/v1"))
    monkeypatch.setenv("PROBE_ALLOWED_HOSTS", "gpu-box.internal")
    from settings import get_settings

    get_settings.cache_clear()
    try:
        with pytest.raises(ProbeSettingsError, match="not in PROBE_ALLOWED_HOSTS"):
            run_sync(list_models("http://127.0.0.1:9/v1"))
    finally:
        get_settings.cache_clear()
