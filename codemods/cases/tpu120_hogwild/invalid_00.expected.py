import torch
import torch.multiprocessing as mp

if __name__ == '__main__':
    model = Net().to(device)
    # TODO(tpu-migrate): TPU291 Hogwild training shares CPU memory between processes: it does not carry over to XLA, the file stays on the CPU
    model.share_memory()  # gradients are allocated lazily, so they are not shared
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, device))
        p.start()
        processes.append(p)
