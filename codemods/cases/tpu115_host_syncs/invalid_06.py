import logging

import torch
import torch_xla.distributed.parallel_loader as pl

logger = logging.getLogger(__name__)


def fit(model, loader, optimizer, device):
    step = 0
    for batch in pl.MpDeviceLoader(loader, device):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 50 == 0:
            logger.info("step %d loss %.4f", step, float(loss))
        step += 1
