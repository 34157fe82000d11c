"""Determined's examples/gan/gan_mnist_pytorch (model_def.py) as Determined users run it: a
generator and a discriminator, an Adam each, LambdaLR on the generator's every epoch, and
train_batch's two passes, under det.pytorch.Trainer. Transcribed here (the project copies no
code); the changes: the data are MNIST IDX files in `data` (data.py downloads a tarball, then
torchvision's MNIST with ToTensor and Normalize((0.5,), (0.5,))), and the sampled images are not
logged to TensorBoard (torchvision's make_grid; dtl writes scalars only). run_examples.py runs it
beside the dtl port (examples/determined/gan_mnist_pytorch/model_def.cpp)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import LambdaLR

from determined.pytorch import DataLoader, LRScheduler, PyTorchTrial

from mnist_pytorch_det import read_idx


class Generator(nn.Module):
    def __init__(self, latent_dim, img_shape):
        super().__init__()
        self.img_shape = img_shape

        def block(in_feat, out_feat, normalize=True):
            layers = [nn.Linear(in_feat, out_feat)]
            if normalize:
                layers.append(nn.BatchNorm1d(out_feat, 0.8))
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            return layers

        self.model = nn.Sequential(
            *block(latent_dim, 128, normalize=False),
            *block(128, 256),
            *block(256, 512),
            *block(512, 1024),
            nn.Linear(1024, int(np.prod(img_shape))),
            nn.Tanh(),
        )

    def forward(self, z):
        img = self.model(z)
        img = img.contiguous().view(img.size(0), *self.img_shape)
        return img


class Discriminator(nn.Module):
    def __init__(self, img_shape):
        super().__init__()

        self.model = nn.Sequential(
            nn.Linear(int(np.prod(img_shape)), 512),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(512, 256),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(256, 1),
            nn.Sigmoid(),
        )

    def forward(self, img):
        img_flat = img.contiguous().view(img.size(0), -1)
        validity = self.model(img_flat)

        return validity


def get_dataset(data_dir, train):
    """data.py's MNIST with ToTensor and Normalize((0.5,), (0.5,)), from the IDX files."""
    prefix = "train" if train else "t10k"
    images = read_idx(f"{data_dir}/{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(f"{data_dir}/{prefix}-labels-idx1-ubyte.gz")
    x = images.unsqueeze(1).to(dtype=torch.float32).div(255)
    mean = torch.as_tensor((0.5,), dtype=x.dtype).view(-1, 1, 1)
    std = torch.as_tensor((0.5,), dtype=x.dtype).view(-1, 1, 1)
    return torch.utils.data.TensorDataset(x.sub_(mean).div_(std), labels.to(torch.int64))


class GANTrial(PyTorchTrial):
    def __init__(self, context):
        self.context = context

        self.download_directory = "data"

        # Initialize the models.
        mnist_shape = (1, 28, 28)
        self.generator = self.context.wrap_model(
            Generator(latent_dim=self.context.get_hparam("latent_dim"), img_shape=mnist_shape)
        )
        self.discriminator = self.context.wrap_model(Discriminator(img_shape=mnist_shape))

        # Initialize the optimizers and learning rate scheduler.
        lr = self.context.get_hparam("lr")
        b1 = self.context.get_hparam("b1")
        b2 = self.context.get_hparam("b2")
        self.opt_g = self.context.wrap_optimizer(
            torch.optim.Adam(self.generator.parameters(), lr=lr, betas=(b1, b2))
        )
        self.opt_d = self.context.wrap_optimizer(
            torch.optim.Adam(self.discriminator.parameters(), lr=lr, betas=(b1, b2))
        )
        self.lr_g = self.context.wrap_lr_scheduler(
            lr_scheduler=LambdaLR(self.opt_g, lr_lambda=lambda epoch: 0.95 ** epoch),
            step_mode=LRScheduler.StepMode.STEP_EVERY_EPOCH,
        )

    def build_training_data_loader(self):
        train_data = get_dataset(self.download_directory, train=True)
        return DataLoader(train_data, batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self):
        validation_data = get_dataset(self.download_directory, train=False)
        return DataLoader(validation_data, batch_size=self.context.get_per_slot_batch_size())

    def train_batch(self, batch, epoch_idx, batch_idx):
        imgs, _ = batch

        # Train generator.
        # Set `requires_grad_` to only update parameters on the generator.
        self.generator.requires_grad_(True)
        self.discriminator.requires_grad_(False)

        # Sample noise and generator images.
        z = torch.randn(imgs.shape[0], self.context.get_hparam("latent_dim"))
        z = self.context.to_device(z)
        generated_imgs = self.generator(z)

        # Calculate generator loss.
        valid = torch.ones(imgs.size(0), 1)
        valid = self.context.to_device(valid)
        g_loss = F.binary_cross_entropy(self.discriminator(generated_imgs), valid)

        # Run backward pass and step the optimizer for the generator.
        self.context.backward(g_loss)
        self.context.step_optimizer(self.opt_g)

        # Train discriminator.
        # Set `requires_grad_` to only update parameters on the discriminator.
        self.generator.requires_grad_(False)
        self.discriminator.requires_grad_(True)

        # Calculate discriminator loss with a batch of real images and a batch of fake images.
        valid = torch.ones(imgs.size(0), 1)
        valid = self.context.to_device(valid)
        real_loss = F.binary_cross_entropy(self.discriminator(imgs), valid)
        fake = torch.zeros(generated_imgs.size(0), 1)
        fake = self.context.to_device(fake)
        fake_loss = F.binary_cross_entropy(self.discriminator(generated_imgs.detach()), fake)
        d_loss = (real_loss + fake_loss) / 2

        # Run backward pass and step the optimizer for the generator.
        self.context.backward(d_loss)
        self.context.step_optimizer(self.opt_d)

        return {
            "loss": d_loss,
            "g_loss": g_loss,
            "d_loss": d_loss,
        }

    def evaluate_batch(self, batch):
        imgs, _ = batch
        valid = torch.ones(imgs.size(0), 1)
        valid = self.context.to_device(valid)
        loss = F.binary_cross_entropy(self.discriminator(imgs), valid)
        return {"loss": loss}
