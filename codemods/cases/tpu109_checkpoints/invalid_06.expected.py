import shutil
import torch
import torch_xla.core.xla_model as xm


def save_checkpoint(state, is_best, filename='checkpoint.pth.tar'):
    xm.save(state, filename)
    if is_best:
        shutil.copyfile(filename, 'model_best.pth.tar')


def main_worker(gpu, ngpus_per_node, args):
    save_checkpoint({
        'epoch': epoch + 1,
        'state_dict': model.state_dict(),
    }, is_best)
    x = torch.ones(1)
