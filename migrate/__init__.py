"""tpu-migrate: move PyTorch training code to idiomatic torch_xla, and prove nothing changed."""

__version__ = "0.1.0"
