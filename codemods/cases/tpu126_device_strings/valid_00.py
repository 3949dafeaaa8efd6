import torch

print("using cuda")
logger.info("moving the model to cuda")
stats = {"backend": "cuda", "count": 2}
def describe():
    """Runs on cuda when available."""
    return "cuda"
