"""One BLAS thread while a GP is fitted or an acquisition maximised."""

from __future__ import annotations

_CONTROLLER = None


def single_threaded_blas():
    """A context manager that limits BLAS to one thread: the GP's matrices are tiny, and a
    multi-threaded BLAS on a busy machine makes every small solve orders of magnitude slower."""
    global _CONTROLLER
    from threadpoolctl import ThreadpoolController

    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")
