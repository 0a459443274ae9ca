"""The sections of the engine advisor page (views/selector.py), one module each."""
