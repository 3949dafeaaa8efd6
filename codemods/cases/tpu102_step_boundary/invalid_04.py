import torch

opt_d = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
for epoch in range(25):
    for i, (real, _) in enumerate(dataloader):
        netD.zero_grad()
        fake = netG(noise)
        errD = criterion(netD(real), ones) + criterion(netD(fake.detach()), zeros)
        errD.backward()
        opt_d.step()
        netG.zero_grad()
        errG = criterion(netD(fake), ones)
        errG.backward()
        optimizerG.step()
        if i % 50 == 0:
            print(errD.item(), errG.item())
