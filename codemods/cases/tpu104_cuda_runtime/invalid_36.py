from torch.utils.cpp_extension import load

ops = load(name='fused', sources=['fused.cpp', 'fused_kernel.cu'])
