"""The sections of the probe runs page (views/runs.py), one module each."""
