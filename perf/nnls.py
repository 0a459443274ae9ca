"""Non-negative least squares (Lawson and Hanson's active-set method), deterministic, in numpy."""

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]


def nnls(a: Array, b: Array, max_iter: int = 500, tol: float = 1e-12) -> Array:
    """The x >= 0 that minimises ||a x - b||."""
    n = a.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    w = a.T @ (b - a @ x)
    for _ in range(max_iter):
        candidates = ~passive & (w > tol)
        if not candidates.any():
            break
        j = int(np.argmax(np.where(candidates, w, -np.inf)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            mask = passive & (z <= 0)
            alpha = float(np.min(x[mask] / (x[mask] - z[mask])))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
        w = a.T @ (b - a @ x)
    return x
