"""One client under test at one load (the project's probe or the handbook's plain SDK loop); JSON per request out.

Run by bench/probe_fidelity.py in its own process, pinned to the client core:
    python bench/fidelity_clients.py {probe,sdk} --base-url URL --model M --concurrency C --requests N --out F
"""

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The handbook's eight fixed prompts are the probe's `seed` workload; both clients send the same ones.
MAX_TOKENS = 128
TEMPERATURE = 0.3


def _prompts() -> list[str]:
    from probes.workloads import SEED_PROMPTS

    return list(SEED_PROMPTS)


async def run_probe_client(base_url: str, model: str, concurrency: int, requests: int) -> dict[str, Any]:
    """The project's probe, as the CLI runs it (seed workload, usage asked for), one level."""
    from probes.config import RunSettings
    from probes.runner import run_probe

    settings = RunSettings(
        base_url=base_url,
        model=model,
        concurrency=[concurrency],
        requests_per_level=requests,
        max_tokens=MAX_TOKENS,
        temperature=TEMPERATURE,
        scrape_metrics=False,
    )
    result = await run_probe(settings)
    if result.error:
        raise RuntimeError(result.error)
    rows = [
        {"ttft_ms": s.ttft_ms, "tpot_ms": s.tpot_ms, "output_tokens": s.output_tokens, "error": s.error_kind}
        for s in result.samples
    ]
    level = result.levels[0]
    return {"requests": rows, "wall_s": level.duration_s}


async def run_sdk_loop(base_url: str, model: str, concurrency: int, requests: int) -> dict[str, Any]:
    """The handbook's section 2.1 loop, verbatim in substance: create(stream=True), count parsed content chunks."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="not-needed")
    prompts = _prompts()

    async def one_call(prompt: str, max_tokens: int = MAX_TOKENS) -> dict[str, Any]:
        t0 = time.perf_counter()
        first_t = None
        n_out = 0
        stream = await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            temperature=TEMPERATURE,
            stream=True,
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                if first_t is None:
                    first_t = time.perf_counter()
                n_out += 1
        t_end = time.perf_counter()
        assert first_t is not None
        return {
            "ttft_ms": (first_t - t0) * 1000,
            "tpot_ms": (t_end - first_t) * 1000 / max(n_out - 1, 1),
            "output_tokens": n_out,
            "error": None,
        }

    # Closed loop at the level's concurrency, as the probe and the public clients run it.
    free = asyncio.Semaphore(concurrency)

    async def slot(i: int) -> dict[str, Any]:
        async with free:
            return await one_call(prompts[i % len(prompts)])

    start_s = time.perf_counter()
    rows = await asyncio.gather(*(slot(i) for i in range(requests)))
    wall_s = time.perf_counter() - start_s
    await client.close()
    return {"requests": list(rows), "wall_s": wall_s}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("client", choices=["probe", "sdk"])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    run = run_probe_client if args.client == "probe" else run_sdk_loop
    got = asyncio.run(run(args.base_url, args.model, args.concurrency, args.requests))
    Path(args.out).write_text(json.dumps(got))


if __name__ == "__main__":
    main()
