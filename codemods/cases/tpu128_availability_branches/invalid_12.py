import torch


def main():
    # Device configuration
    use_gpu = torch.cuda.is_available()

    if use_gpu:
        print('GPU run')
    else:
        # CPU fallback
        print('CPU run')
    return 0
