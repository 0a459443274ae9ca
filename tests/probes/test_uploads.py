"""Uploaded workload files are kept by content, so a stored run's settings still name a file that exists."""

from pathlib import Path

from probes.uploads import keep_upload


def test_the_same_content_is_one_file_and_other_content_another(tmp_path: Path) -> None:
    first = keep_upload(b'{"timestamp": 0}\n', "my trace.JSONL", tmp_path / "uploads")
    again = keep_upload(b'{"timestamp": 0}\n', "renamed.jsonl", tmp_path / "uploads")
    other = keep_upload(b'{"timestamp": 1}\n', "my trace.jsonl", tmp_path / "uploads")
    assert first == again != other
    assert first.parent == tmp_path / "uploads" and first.suffix == ".jsonl"
    assert first.read_bytes() == b'{"timestamp": 0}\n' and other.read_bytes() == b'{"timestamp": 1}\n'
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == sorted([first.name, other.name])


def test_the_users_file_name_is_not_used_beyond_a_plain_suffix(tmp_path: Path) -> None:
    kept = keep_upload(b"x", "../../etc/evil.sh;rm -rf", tmp_path, default_suffix=".csv")
    assert kept.parent == tmp_path and kept.suffix == ".csv" and ".." not in kept.name
    assert keep_upload(b"y", "trace.csv", tmp_path).suffix == ".csv"
