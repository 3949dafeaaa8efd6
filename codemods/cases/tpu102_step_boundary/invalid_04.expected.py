import torch
import torch_xla
import torch_xla.core.xla_model as xm

opt_d = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
for epoch in range(25):
    for i, (real, _) in enumerate(dataloader):
        netD.zero_grad()
        fake = netG(noise)
        errD = criterion(netD(real), ones) + criterion(netD(fake.detach()), zeros)
        errD.backward()
        xm.optimizer_step(opt_d)
        netG.zero_grad()
        errG = criterion(netD(fake), ones)
        errG.backward()
        xm.optimizer_step(optimizerG)
        torch_xla.sync()
        if i % 50 == 0:
            print(errD.item(), errG.item())
