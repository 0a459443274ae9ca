"""How a level is dealt out over Ray workers: exact shares, remainders spread, arrivals thinned, nothing lost."""

import subprocess
import sys

import pytest

from probes.level import LevelPlan
from probes.ray_split import shares, split_pinned, split_plan
from tests.support import ROOT


@pytest.mark.parametrize(
    ("total", "parts", "expected"),
    [(10, 3, [4, 3, 3]), (2, 4, [1, 1, 0, 0]), (8, 4, [2, 2, 2, 2]), (0, 2, [0, 0]), (7, 1, [7])],
)
def test_shares_differ_by_at_most_one_and_add_up(total: int, parts: int, expected: list[int]) -> None:
    assert shares(total, parts) == expected


def test_a_closed_loop_level_is_split_with_its_remainder_spread_and_every_prompt_once() -> None:
    plan = LevelPlan(index=2, concurrency=5, count=11, prompt_offset=22)
    plans = split_plan(plan, [0, 1, 2], seed=0)
    assert [p.concurrency for p in plans.values()] == [2, 2, 1]
    assert [p.count for p in plans.values()] == [4, 4, 3]
    sent = [p.prompt_offset + i for p in plans.values() for i in range(p.count)]
    assert sent == list(range(22, 33))  # exactly the prompts one process would send, each once
    numbers = [p.index_offset + i for p in plans.values() for i in range(p.count)]
    assert numbers == list(range(11))
    assert {p.worker for p in plans.values()} == {0, 1, 2}


def test_a_worker_without_a_share_of_the_concurrency_sits_the_level_out() -> None:
    plans = split_plan(LevelPlan(index=0, concurrency=1, count=5), [0, 1, 2, 3], seed=0)
    assert list(plans) == [0] and plans[0].count == 5


def test_a_rate_is_thinned_over_the_workers_with_independent_arrivals() -> None:
    plans = split_plan(LevelPlan(index=1, concurrency=8, count=100, rate_rps=20.0), [3, 5], seed=7)
    assert [p.rate_rps for p in plans.values()] == [10.0, 10.0]
    assert len({p.arrival_seed for p in plans.values()}) == 2


def test_a_trace_or_sessions_level_pins_by_order_on_every_worker() -> None:
    plans = split_pinned(LevelPlan(index=0, concurrency=5, count=0), [0, 1], of_workers=2)
    assert [(p.worker, p.of_workers, p.concurrency) for p in plans.values()] == [(0, 2, 3), (1, 2, 2)]


def test_a_run_without_workers_never_imports_ray(fake) -> None:
    code = (
        "import sys\n"
        "from probes.cli import run_cli\n"
        f"code = run_cli(['--base-url', '{fake.base_url}', '--model', 'fake', '--concurrency', '1', '--requests',"
        " '2', '--quiet'])\n"
        "assert code == 0, code\n"
        "print('ray' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_workers_without_ray_installed_is_one_clear_error(fake, monkeypatch, capsys) -> None:
    from probes.cli import EXIT_USAGE, run_cli

    monkeypatch.setitem(sys.modules, "ray", None)  # imports of ray fail, as when it is not installed
    code = run_cli(["--base-url", fake.base_url, "--model", "fake", "--workers", "2", "--no-db", "--quiet"])
    assert code == EXIT_USAGE
    assert (
        "--workers needs Ray, which is not installed here: pip install -r requirements-ray.txt"
        in capsys.readouterr().err
    )
