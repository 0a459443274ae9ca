"""The sections of the compare page (views/compare.py), one module each."""
