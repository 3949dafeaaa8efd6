import torch
import torch.multiprocessing as mp

if __name__ == '__main__':
    model = Net().to(device)
    model.share_memory()  # gradients are allocated lazily, so they are not shared
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, device))
        p.start()
        processes.append(p)
