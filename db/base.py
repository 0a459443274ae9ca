"""The declarative base every table derives from."""

from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    """Base class of the project's tables."""
