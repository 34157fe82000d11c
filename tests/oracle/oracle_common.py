"""What both sides of the oracle share on the Python side: the hyperparameters, the data and the
models, built with the same torch calls tests/oracle/oracle_trials.cpp makes (the same LibTorch,
so the same numbers)."""
import math

import numpy as np
import torch
from torch import nn

TRAIN_SIZE = 96  # gbs 8: 12 batches an epoch on 1 rank, and 12 steps of 2 x 4 on 2 ranks
VAL_SIZE = 40
EPOCH_BATCHES = 12
DATA_SEED = 1234


def hparams(model, shuffle):
    return {"model": model, "shuffle": bool(shuffle), "global_batch_size": 8,
            "learning_rate": 0.1 if model == "mlp" else 0.01}


def build_model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))
    # Dropout: train_batch draws from the global generator, whose stream torch's DataLoader moves
    # each time an iterator starts (dtl's loaders make the same draws).
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.25),
                         nn.Linear(36, 5))


def datasets(kind):
    """(train, validation): inputs from a seeded generator, labels from a fixed random teacher."""
    g = torch.Generator().manual_seed(DATA_SEED)
    shape = [16] if kind == "mlp" else [1, 8, 8]
    n = TRAIN_SIZE + VAL_SIZE
    x = torch.randn([n] + shape, generator=g)
    teacher = torch.randn(math.prod(shape), 5, generator=g)
    y = (x.reshape(n, -1) @ teacher).argmax(1)
    ds = torch.utils.data.TensorDataset
    return ds(x[:TRAIN_SIZE], y[:TRAIN_SIZE]), ds(x[TRAIN_SIZE:], y[TRAIN_SIZE:])


def plain(value):
    """Metrics as JSON: numpy and torch scalars become Python floats/ints (exact)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, torch.Tensor):
        value = value.detach().numpy()
    if isinstance(value, np.ndarray):
        return plain(value.tolist()) if value.ndim else plain(value.item())
    if isinstance(value, np.generic):
        return value.item()
    return value
