"""Whole numbers read from forms and URLs: range-checked once, where they are parsed.

A number a visitor typed or forged must never reach the database unchecked: PostgreSQL's
integer columns overflow beyond 2**31 - 1 (an error, so a 500), and SQLite's beyond
2**63 - 1. ``parse_int`` is the one place a number from a request becomes an ``int``; a
value that is not a whole number in range is refused with the caller's message
(InvalidInput, a 400 page that says what to do).
"""

from __future__ import annotations

import re
from typing import Any

from pbem.errors import InvalidInput

DB_INT_MAX = 2**31 - 1  # the largest id or count an integer column holds on PostgreSQL
INT_RE = re.compile(r"-?[0-9]{1,12}")  # ASCII digits only: int() also takes "١٢" and "1_0"


def parse_int(value: Any, low: int, high: int, refusal: str) -> int:
    """``value`` (an int, or text of ASCII digits with an optional minus and blanks
    around) as an int between ``low`` and ``high`` inclusive; else InvalidInput
    (``refusal``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and INT_RE.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        raise InvalidInput(refusal)
    if not low <= number <= high:
        raise InvalidInput(refusal)
    return number
