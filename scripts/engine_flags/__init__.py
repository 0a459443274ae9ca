"""Helpers of scripts/engine_flags.py: engine parsers in venvs, source extractors, the advisor's command shapes."""
