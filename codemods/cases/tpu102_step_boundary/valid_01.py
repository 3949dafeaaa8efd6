class Counter:
    def __init__(self):
        self.n = 0

    def step(self):
        self.n += 1


opt = Counter()
for i in range(10):
    opt.step()
