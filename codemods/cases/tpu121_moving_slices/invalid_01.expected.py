import numpy as np
import torch


def train(model, series: torch.Tensor, opt, window=16):
    for t in range(0, series.size(1) - window):
        x = series.index_select(1, torch.arange(*slice(t, t + window).indices(series.size(1))).to(series.device))
        y = series.index_select(1, torch.arange(*slice(t + window, None, 2).indices(series.size(1))).to(series.device))
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        opt.step()
