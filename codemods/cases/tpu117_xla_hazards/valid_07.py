import torch


def same(a, b):
    return a is b


class Store:
    def storage(self, name):
        return name


s = Store().storage('x')
