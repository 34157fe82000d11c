"""Determined's examples/tutorials/mnist_pytorch as Determined users run it: model.py's network,
train.py's MNistTrial (NLLLoss, Adadelta, a batch of 64 split across the slots, evaluate_batch's
Python-number metrics), under det.pytorch.Trainer. Transcribed here (the project copies no code);
the one change is data.py's: MNIST read from the IDX files in `data` (no torchvision, no
download), then ToTensor's and Normalize's arithmetic. run_examples.py runs it beside the dtl port
(examples/determined/mnist_pytorch/train.cpp)."""
import gzip
import os

import numpy as np
import torch
from torch import nn

from determined import pytorch


# model.py
class Flatten(nn.Module):
    def forward(self, *args, **kwargs):
        assert len(args) == 1
        x = args[0]
        assert isinstance(x, torch.Tensor)
        return x.contiguous().view(x.size(0), -1)


def build_model(hparams):
    return nn.Sequential(
        nn.Conv2d(1, hparams["n_filters1"], 3, 1),
        nn.ReLU(),
        nn.Conv2d(hparams["n_filters1"], hparams["n_filters2"], 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Dropout2d(hparams["dropout1"]),
        Flatten(),
        nn.Linear(144 * hparams["n_filters2"], 128),
        nn.ReLU(),
        nn.Dropout2d(hparams["dropout2"]),
        nn.Linear(128, 10),
        nn.LogSoftmax(),
    )


# data.py, reading the IDX files (torchvision's MNIST, then ToTensor and Normalize).
def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return torch.from_numpy(np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape).copy())


def get_dataset(data_dir, train):
    prefix = "train" if train else "t10k"
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = images.unsqueeze(1).to(dtype=torch.float32).div(255)  # ToTensor
    mean = torch.as_tensor((0.1307,), dtype=x.dtype)
    std = torch.as_tensor((0.3081,), dtype=x.dtype)
    x = x.sub_(mean.view(-1, 1, 1)).div_(std.view(-1, 1, 1))  # Normalize
    return torch.utils.data.TensorDataset(x, labels.to(torch.int64))


# train.py
class MNistTrial(pytorch.PyTorchTrial):
    def __init__(self, context, hparams):
        self.context = context

        # Trial-level constants.
        self.data_dir = "data"

        self.batch_size = 64
        self.per_slot_batch_size = self.batch_size // self.context.distributed.get_size()

        # Define loss function.
        self.loss_fn = nn.NLLLoss()

        # Define model.
        self.model = self.context.wrap_model(build_model(hparams=hparams))

        # Configure optimizer.
        self.optimizer = self.context.wrap_optimizer(
            torch.optim.Adadelta(self.model.parameters(), lr=hparams["learning_rate"])
        )

    def build_training_data_loader(self):
        train_data = get_dataset(self.data_dir, train=True)
        return pytorch.DataLoader(train_data, batch_size=self.per_slot_batch_size)

    def build_validation_data_loader(self):
        validation_data = get_dataset(self.data_dir, train=False)
        return pytorch.DataLoader(validation_data, batch_size=self.per_slot_batch_size)

    def train_batch(self, batch, epoch_idx, batch_idx):
        batch_data, labels = batch

        output = self.model(batch_data)
        loss = self.loss_fn(output, labels)

        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)

        return {"loss": loss}

    def evaluate_batch(self, batch, batch_idx):
        batch_data, labels = batch

        output = self.model(batch_data)
        validation_loss = self.loss_fn(output, labels).item()

        pred = output.argmax(dim=1, keepdim=True)
        accuracy = pred.eq(labels.view_as(pred)).sum().item() / len(batch_data)

        return {"validation_loss": validation_loss, "accuracy": accuracy}

