import torch

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = f(x)
torch.cuda.nvtx.range_push('fwd')
stats = torch.cuda.memory_summary()
