import torch


def test(model, device, test_loader):
    model.eval()
    correct = 0
    with torch.inference_mode():  # no autograd for evaluation
        for data, target in test_loader:
            output = model(data.to(device))
            correct += output.argmax(1).eq(target.to(device)).sum()
    return correct
