"""One settings object, read from environment variables (DATABASE_URL and the probe's safety limits)."""

from functools import cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATA_DIR = Path("data")


class Settings(BaseSettings):
    """Configuration; every field can be set by the upper-case environment variable of the same name."""

    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    database_url: str = Field(
        default=f"sqlite:///{DEFAULT_DATA_DIR / 'llm-serving.db'}",
        description="SQLAlchemy URL; default: a SQLite file under ./data/ (created on first start)",
    )
    uploads_dir: Path = Field(
        default=DEFAULT_DATA_DIR / "uploads",
        description="where the pages keep uploaded traces, conversations and prompt files (by content), so a stored "
        "run's settings still name a file that exists",
    )
    probe_max_concurrency: int = Field(default=512, ge=1, description="highest concurrency a probe may use")
    probe_max_requests_per_run: int = Field(default=10_000, ge=1, description="most requests one probe run may send")
    probe_allowed_hosts: str = Field(
        default="", description="comma-separated hosts the probe may target; empty: any host except link-local"
    )
    prices_source: str | None = Field(
        default=None,
        description="where Refresh prices and `python -m tco prices refresh` read gpuhunt's catalogs (a directory, a "
        ".zip or a URL, e.g. a mirror inside the firewall); empty: gpuhunt's published catalogs",
    )


@cache
def get_settings() -> Settings:
    """The process-wide settings (read once)."""
    return Settings()
