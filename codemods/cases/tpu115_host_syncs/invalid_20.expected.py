import torch
import torch_xla


def train(netD, netG, loader, optD, optG, criterion, ones, noise, dry_run):
    for i, (real, _) in enumerate(loader):
        output = netD(real)
        err_real = criterion(output, ones)
        err_real.backward()
        d_x = output.mean().detach()
        optD.step()
        fake_out = netD(netG(noise))
        err_g = criterion(fake_out, ones)
        err_g.backward()
        d_g_z = fake_out.mean().detach()
        optG.step()
        torch_xla.sync()
        # TODO(tpu-migrate): TPU242 per-step report of 3 device values (err_g.item(), d_x, d_g_z): 3 device->host copies every step
        print("[%d] Loss_G: %.4f D(x): %.4f D(G(z)): %.4f" % (i, err_g.item(), float(d_x), float(d_g_z)))
        if dry_run:
            break
