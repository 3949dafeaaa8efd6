"""Broken port of manual_sgd_cpu.py: the learning rate doubled."""

from manual_sgd_xla import main

if __name__ == "__main__":
    main(lr_scale=2.0)
