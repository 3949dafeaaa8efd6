import torch
import torch_xla
import torch_xla.core.xla_model as xm

for epoch in range(2):
    running_loss = 0.0
    for i, (inputs, labels) in enumerate(trainloader):
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

        running_loss += loss.detach()
        if i % 2000 == 1999:
            xm.add_step_closure(lambda i, running_loss: print(f"[{epoch + 1}, {i + 1:5d}] loss: {float(running_loss) / 2000:.3f}"), args=(i, running_loss))
            running_loss = 0.0
        torch_xla.sync()
