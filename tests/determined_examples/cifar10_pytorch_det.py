"""Determined's examples/computer_vision/cifar10_pytorch (model_def.py) as Determined users run it:
the Keras-style CNN, RMSprop, cross entropy, Python-number accuracies, under det.pytorch.Trainer.
Transcribed here (the project copies no code); the one change is the data: CIFAR-10's binary
files in `data` (no torchvision, no download), then ToTensor's and Normalize's arithmetic.
run_examples.py runs it beside the dtl port (examples/determined/cifar10_pytorch/model_def.cpp)."""
import os

import numpy as np
import torch
from torch import nn

from determined.pytorch import DataLoader, PyTorchTrial

# Constants about the data set.
IMAGE_SIZE = 32
NUM_CHANNELS = 3
NUM_CLASSES = 10


def accuracy_rate(predictions, labels):
    """Return the accuracy rate based on dense predictions and sparse labels."""
    assert len(predictions) == len(labels), "Predictions and labels must have the same length."
    assert len(labels.shape) == 1, "Labels must be a column vector."
    return float((predictions.argmax(1) == labels.to(torch.long)).sum()) / predictions.shape[0]


class Flatten(nn.Module):
    def forward(self, *args, **kwargs):
        assert len(args) == 1
        x = args[0]
        assert isinstance(x, torch.Tensor)
        return x.contiguous().view(x.size(0), -1)


def cifar10(directory, train):
    """CIFAR-10's binary version (a label byte, then 3072 channel-major pixel bytes per image),
    as torchvision's CIFAR10 with ToTensor() and Normalize((0.5,) * 3, (0.5,) * 3) gives it."""
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] if train else ["test_batch.bin"]
    raw = np.concatenate([np.fromfile(os.path.join(directory, n), dtype=np.uint8) for n in names])
    raw = torch.from_numpy(raw.reshape(-1, 3073))
    labels = raw[:, 0].to(torch.int64)
    x = raw[:, 1:].reshape(-1, NUM_CHANNELS, IMAGE_SIZE, IMAGE_SIZE).to(dtype=torch.float32).div(255)
    mean = torch.as_tensor((0.5, 0.5, 0.5), dtype=x.dtype).view(-1, 1, 1)
    std = torch.as_tensor((0.5, 0.5, 0.5), dtype=x.dtype).view(-1, 1, 1)
    return torch.utils.data.TensorDataset(x.sub_(mean).div_(std), labels)


class CIFARTrial(PyTorchTrial):
    def __init__(self, context):
        self.context = context

        self.download_directory = "data"
        os.makedirs(self.download_directory, exist_ok=True)

        self.model = self.context.wrap_model(
            nn.Sequential(
                nn.Conv2d(NUM_CHANNELS, IMAGE_SIZE, kernel_size=(3, 3)),
                nn.ReLU(),
                nn.Conv2d(32, 32, kernel_size=(3, 3)),
                nn.ReLU(),
                nn.MaxPool2d((2, 2)),
                nn.Dropout2d(self.context.get_hparam("layer1_dropout")),
                nn.Conv2d(32, 64, (3, 3), padding=1),
                nn.ReLU(),
                nn.Conv2d(64, 64, (3, 3)),
                nn.ReLU(),
                nn.MaxPool2d((2, 2)),
                nn.Dropout2d(self.context.get_hparam("layer2_dropout")),
                Flatten(),
                nn.Linear(2304, 512),
                nn.ReLU(),
                nn.Dropout2d(self.context.get_hparam("layer3_dropout")),
                nn.Linear(512, NUM_CLASSES),
            )
        )

        self.optimizer = self.context.wrap_optimizer(
            torch.optim.RMSprop(
                self.model.parameters(),
                lr=self.context.get_hparam("learning_rate"),
                weight_decay=self.context.get_hparam("learning_rate_decay"),
                alpha=0.9,
            )
        )

    def train_batch(self, batch, epoch_idx, batch_idx):
        data, labels = batch

        output = self.model(data)
        loss = torch.nn.functional.cross_entropy(output, labels)
        accuracy = accuracy_rate(output, labels)

        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss, "train_error": 1.0 - accuracy, "train_accuracy": accuracy}

    def evaluate_batch(self, batch):
        data, labels = batch

        output = self.model(data)
        accuracy = accuracy_rate(output, labels)
        return {"validation_accuracy": accuracy, "validation_error": 1.0 - accuracy}

    def build_training_data_loader(self):
        trainset = cifar10(self.download_directory, train=True)
        return DataLoader(trainset, batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self):
        valset = cifar10(self.download_directory, train=False)
        return DataLoader(valset, batch_size=self.context.get_per_slot_batch_size())
