"""The sections of the cost calculator page (views/tco.py), one module each."""
