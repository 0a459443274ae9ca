"""The KV handoff between a prefill and a decode replica: a request's KV bytes over the link, plus its fixed latency."""

from catalog import Gpu
from catalog.kvcache import kv_bytes_per_sequence
from catalog.links import NVLINK, KvLink, find_kv_link
from catalog.models import ModelSpec
from perf.errors import PerfError

AUTO_LINK = "auto"


def pool_link(name: str, gpu: Gpu, total_gpus: int) -> KvLink:
    """The link named; 'auto': NVLink inside one NVLink domain, else InfiniBand (Ethernet off the datacenter)."""
    if name != AUTO_LINK:
        try:
            return find_kv_link(name)
        except ValueError as exc:
            raise PerfError(f"link: {exc}") from exc
    if gpu.interconnect_gb_s and total_gpus <= gpu.nvlink_domain:
        return find_kv_link(NVLINK)
    return find_kv_link("infiniband" if gpu.kind == "datacenter" else "ethernet")


def kv_bytes_per_request(model: ModelSpec, kv_dtype: str, input_tokens: int) -> int:
    """The KV the prefill replica hands over: the whole prompt's, at the KV dtype (sliding windows counted)."""
    return kv_bytes_per_sequence(model, kv_dtype, input_tokens)


def kv_transfer_ms(kv_bytes: int, link: KvLink, gpu: Gpu, lanes: int) -> float:
    """Bytes over `lanes` GPUs sending in parallel (each its share of the heads or layers), plus the link's latency."""
    gb_s = link.gb_s(gpu)
    if gb_s is None:
        raise PerfError(f"link: {gpu.name} has no NVLink; choose infiniband, roce or ethernet")
    return kv_bytes / (gb_s * 1e9 * max(lanes, 1)) * 1000 + link.latency_ms
