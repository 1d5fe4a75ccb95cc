"""What a trial must leave as it found it: grad mode, default dtype and every RNG state."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def user_state_kept() -> Iterator[None]:
    """Restore grad mode, the default dtype and the Python, NumPy, torch CPU and CUDA RNG
    states on exit, whatever happened inside."""
    import torch

    grad = torch.is_grad_enabled()
    dtype = torch.get_default_dtype()
    py_state = random.getstate()
    np_state = _numpy_state()
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
        random.setstate(py_state)
        if np_state is not None:
            import numpy

            numpy.random.set_state(np_state)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)


def _numpy_state() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy.random.get_state()


def seeded(seed: int = 0) -> None:
    """The same random stream for the original and each fix, so outputs can be compared."""
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
