"""Result files of other benchmark tools read as runs: one module per format, each by the tool's own definitions."""
