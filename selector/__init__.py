"""The engine and quantization advisor: rules as data over the catalog's GPUs, models and engines, no Streamlit."""

from selector.advice import Advice, Decision
from selector.advisor import advise
from selector.context import gpu_class
from selector.errors import SelectorError
from selector.figures import memory_fit_figure
from selector.gates import Gate, gate
from selector.inputs import (
    LABELS,
    AdviceRequest,
    Deploy,
    Ecosystem,
    Priority,
    Workload,
    YesNo,
    names_worded_by,
    nearest_params,
)
from selector.launch import LaunchCommand
from selector.memory import MemoryFit
from selector.rules import load_rules
from selector.speculative import Speculative

__all__ = [
    "LABELS",
    "Advice",
    "AdviceRequest",
    "Decision",
    "Deploy",
    "Ecosystem",
    "Gate",
    "LaunchCommand",
    "MemoryFit",
    "Priority",
    "SelectorError",
    "Speculative",
    "Workload",
    "YesNo",
    "advise",
    "gate",
    "gpu_class",
    "load_rules",
    "memory_fit_figure",
    "names_worded_by",
    "nearest_params",
]
