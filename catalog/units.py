"""Unit conversions every package shares (one definition each): tokens per million, joules per kWh, W per kW, %."""

TOKENS_PER_MILLION = 1_000_000.0
J_PER_KWH = 3_600_000.0
W_PER_KW = 1000.0
PCT = 100.0
