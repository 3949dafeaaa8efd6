from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, train_set, kwargs):
        self.loader = DataLoader(train_set, batch_size=16, drop_last=False)
        self.bucketed = DataLoader(train_set, batch_sampler=BucketSampler(train_set))
        self.other = DataLoader(train_set, **kwargs)

    def fit(self):
        for batch in self.loader:
            self.model(batch).backward()
        for batch in self.bucketed:
            self.model(batch).backward()
        for batch in self.other:
            self.model(batch).backward()
