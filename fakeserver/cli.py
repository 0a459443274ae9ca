"""`python -m fakeserver`: serve the test server on a loopback port until interrupted."""

import argparse
import asyncio
import contextlib

from fakeserver.behaviour import Batching, Behaviour
from fakeserver.server import LOOPBACK_HOSTS, FakeServer

DESCRIPTION = (
    "A fast OpenAI-compatible test server on raw asyncio (HTTP/1.1, keep-alive, chunked SSE)"
    " with known timing and faults."
)


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The command line's flags: the server's defaults and options."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    parser.add_argument("--host", default="127.0.0.1", choices=LOOPBACK_HOSTS)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--ttft-ms", type=float, default=Behaviour.ttft_ms)
    parser.add_argument("--tpot-ms", type=float, default=Behaviour.tpot_ms)
    parser.add_argument("--tokens", type=int, default=Behaviour.tokens)
    parser.add_argument("--tokens-per-chunk", type=int, default=Behaviour.tokens_per_chunk)
    parser.add_argument("--no-usage", action="store_true")
    parser.add_argument("--no-role-chunk", action="store_true")
    parser.add_argument("--reasoning-tokens", type=int, default=0)
    parser.add_argument("--model", action="append", help="model name(s) to serve (default: fake)")
    parser.add_argument("--api-key", default=None, help="require this bearer key")
    parser.add_argument("--max-running", type=int, default=None, help="queue requests beyond this many")
    parser.add_argument("--slots", type=int, default=0, help="load-dependent mode: run at most this many at once")
    parser.add_argument(
        "--tpot-per-running-ms", type=float, default=0.0, help="load-dependent mode: token gap added per other request"
    )
    parser.add_argument("--no-metrics", action="store_true")
    parser.add_argument(
        "--dcgm-gpus", type=int, default=0, help="also expose DCGM-exporter power and energy of this many fake GPUs"
    )
    parser.add_argument("--engine", choices=("vllm", "sglang"), default="vllm", help="whose metric names to expose")
    parser.add_argument("--no-records", action="store_true", help="do not keep per-token records")
    return parser


def main(argv: list[str] | None = None, prog: str = "python -m fakeserver") -> None:
    """Command line: serve until interrupted."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    try:
        _, batching = Batching.split(f"slots={args.slots},tpot_per_running_ms={args.tpot_per_running_ms}", Batching())
    except ValueError as exc:
        parser.error(str(exc))
    defaults = Behaviour(
        ttft_ms=args.ttft_ms,
        tpot_ms=args.tpot_ms,
        tokens=args.tokens,
        tokens_per_chunk=args.tokens_per_chunk,
        usage=not args.no_usage,
        role_chunk=not args.no_role_chunk,
        reasoning_tokens=args.reasoning_tokens,
    )

    async def serve() -> None:
        server = FakeServer(
            args.host,
            args.port,
            defaults=defaults,
            models=tuple(args.model or ["fake"]),
            api_key=args.api_key,
            metrics=not args.no_metrics,
            max_running=args.max_running,
            keep_records=not args.no_records,
            engine=args.engine,
            batching=batching,
            dcgm_gpus=args.dcgm_gpus,
        )
        await server.start()
        print(f"fake OpenAI server on {server.base_url}", flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
