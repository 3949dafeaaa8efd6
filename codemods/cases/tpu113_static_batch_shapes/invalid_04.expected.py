from torch.utils.data import DataLoader


class Trainer:
    def __init__(self, train_set, kwargs):
        # TODO(tpu-migrate): TPU233 drop_last=False keeps the partial last batch of this training loader: it recompiles every epoch
        self.loader = DataLoader(train_set, batch_size=16, drop_last=False)
        # TODO(tpu-migrate): TPU233 the batch_sampler makes the batches of this training loader: make it drop the partial last batch
        self.bucketed = DataLoader(train_set, batch_sampler=BucketSampler(train_set))
        # TODO(tpu-migrate): TPU233 training loader built from **kwargs: pass drop_last=True unless they hold it
        self.other = DataLoader(train_set, **kwargs)

    def fit(self):
        for batch in self.loader:
            self.model(batch).backward()
        for batch in self.bucketed:
            self.model(batch).backward()
        for batch in self.other:
            self.model(batch).backward()
