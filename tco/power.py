"""A power budget as people write it: '800', '800 kW' or '2 MW' (kilowatts when no unit is given)."""

import re

KW_PER_MW = 1000.0
MAX_POWER_KW = 10_000_000.0  # 10 GW: more than any site draws
_POWER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(kw|mw)?\s*$", re.IGNORECASE)


def parse_power_kw(text: str) -> float:
    """'800', '800 kW' or '2 MW' -> kilowatts; ValueError names what is allowed."""
    match = _POWER.match(text)
    if match is None:
        raise ValueError(f"'{text}' is not a power; give kW or MW, e.g. 800 kW or 2 MW")
    value = float(match.group(1)) * (KW_PER_MW if (match.group(2) or "kw").lower() == "mw" else 1.0)
    if not 0 < value <= MAX_POWER_KW:
        raise ValueError(f"a power budget is above 0 and at most {MAX_POWER_KW / KW_PER_MW:,.0f} MW")
    return value


def power_text(kw: float) -> str:
    """Kilowatts as the link writes them: '800kW', or '2MW' from a whole megawatt up."""
    if kw >= KW_PER_MW:
        return f"{kw / KW_PER_MW:.6g}MW"
    return f"{kw:.6g}kW"
