"""Saved scenarios: a page's query parameters stored under a name and a short id (?s=<id>)."""

import json
import secrets
import string
from datetime import UTC, datetime

from sqlalchemy import DateTime, Engine, String, Text, delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from db.base import Base
from db.engine import rowcount, session_factory

SHORT_ID_ALPHABET = string.ascii_lowercase + string.digits
SHORT_ID_LENGTH = 6
MAX_NAME_CHARS = 200


class Scenario(Base):
    """A named set of query parameters for one page."""

    __tablename__ = "scenarios"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    page: Mapped[str] = mapped_column(String(32), index=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME_CHARS))
    params_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    @property
    def params(self) -> dict[str, str]:
        return dict(json.loads(self.params_json))


def _new_id() -> str:
    return "".join(secrets.choice(SHORT_ID_ALPHABET) for _ in range(SHORT_ID_LENGTH))


def save_scenario(engine: Engine, page: str, name: str, params: dict[str, str]) -> Scenario:
    """Store params under a fresh short id and return the saved row."""
    clean_name = name.strip()[:MAX_NAME_CHARS] or "untitled"
    for _ in range(10):
        row = Scenario(
            id=_new_id(),
            page=page,
            name=clean_name,
            params_json=json.dumps(params, sort_keys=True),
            created_at=datetime.now(UTC),
        )
        try:
            with session_factory(engine)() as session, session.begin():
                session.add(row)
            return row
        except IntegrityError:  # an id collision: draw again
            continue
    raise RuntimeError("could not allocate a scenario id")


def get_scenario(engine: Engine, scenario_id: str, page: str | None = None) -> Scenario | None:
    """The scenario with this id (and page, if given), or None."""
    with session_factory(engine)() as session:
        row = session.get(Scenario, scenario_id.strip().lower())
        if row is None or (page is not None and row.page != page):
            return None
        return row


def list_scenarios(engine: Engine, page: str) -> list[Scenario]:
    """Scenarios of one page, newest first."""
    with session_factory(engine)() as session:
        query = select(Scenario).where(Scenario.page == page).order_by(Scenario.created_at.desc())
        return list(session.scalars(query))


def delete_scenario(engine: Engine, scenario_id: str) -> bool:
    """Delete a scenario; True if it existed."""
    with session_factory(engine)() as session, session.begin():
        result = session.execute(delete(Scenario).where(Scenario.id == scenario_id))
        return rowcount(result) > 0
