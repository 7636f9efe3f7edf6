"""第 4 章的练习。"""
from __future__ import annotations

from . import Case, Exercise, register  # noqa: F401
