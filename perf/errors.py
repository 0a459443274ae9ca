"""The estimator's expected failures, each with a message a user can act on."""


class PerfError(ValueError):
    """An estimate that cannot be made for these inputs (the message names the field and what is allowed)."""


class NoEstimateError(PerfError):
    """No step-time model for this engine or GPU (the CLI exits with code 2)."""
