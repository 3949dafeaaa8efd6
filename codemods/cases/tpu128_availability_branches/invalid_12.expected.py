import torch


def main():
    print('GPU run')
    return 0
