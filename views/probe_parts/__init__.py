"""The sections of the live probe page (views/probe.py), one module each."""
