"""The signal that ends a run after the requested number of optimizer steps."""


class StopRun(BaseException):
    """Raised from the optimizer step hook once enough steps ran.

    A BaseException so that the script's own ``except Exception:`` blocks let it through.
    """
