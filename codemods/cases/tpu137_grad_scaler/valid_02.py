class Scaler:
    def scale(self, x):
        return x

    def step(self, opt):
        opt.step()


scaler = Scaler()
scaler.scale(loss).backward()
scaler.step(opt)
