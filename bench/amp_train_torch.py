#!/usr/bin/env python3
"""NAM's WaveNet or LSTM trained with PyTorch on the same pair and recipe as `tempra amp train`: the reference
for the training benchmark (bench/run_amp_train.sh).

    bench/amp_train_torch.py DI.wav AMP.wav --latency N [--arch standard] [--epochs 3] [--threads 2]

The model is NAM's (nam/models/wavenet.py of neural-amp-modeler 0.12: layer arrays of dilated
"valid" Conv1d with bias, a 1x1 mix-in of the input without bias, tanh, a 1x1 residual with bias,
the head summed over layers, head_scale 0.02), written out here because the trainer's package
is not in Debian. The recipe is tempra's (src/tempra/audio/train/amp_trainer.h), which is NAM's
data handling and optimizer: items of ny = 8192 outputs with the receptive field's history,
shuffled, batches of 16 with the last partial one dropped, Adam at lr 0.004; the loss is the
batch's ESR plus the pre-emphasized (0.85) ESR. Prints one line per epoch: its training time
(forward, backward and Adam steps; no validation) and loss.
"""
import argparse
import time

import numpy as np
import torch
from scipy.io import wavfile

PRESETS = {  # NAM's: (channels, head size) per array; kernel 3, tanh, ungated
    "standard": [(16, 8, [2**i for i in range(10)]), (8, 1, [2**i for i in range(10)])],
    "lite": [(12, 6, [1, 2, 4, 8, 16, 32, 64]), (6, 1, [128, 256, 512, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512])],
    "feather": [(8, 4, [1, 2, 4, 8, 16, 32, 64]), (4, 1, [128, 256, 512, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512])],
    "nano": [(4, 2, [1, 2, 4, 8, 16, 32, 64]), (2, 1, [128, 256, 512, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512])],
}


LSTM_PRESETS = {"lstm": (1, 24), "lstm-lite": (2, 8), "lstm-feather": (1, 16), "lstm-nano": (1, 12)}


class Lstm(torch.nn.Module):
    """NAM's LSTM (nam/models/recurrent.py) in training mode: burn-in 4096 samples (outputs detached,
    state kept), then chunks of 512 with the state detached between them."""

    def __init__(self, arch, burn_in=4096, truncate=512):
        super().__init__()
        layers, hidden = LSTM_PRESETS[arch]
        self.core = torch.nn.LSTM(1, hidden, num_layers=layers, batch_first=True)
        self.head = torch.nn.Linear(hidden, 1)
        self.h0 = torch.nn.Parameter(torch.zeros(layers, hidden))
        self.c0 = torch.nn.Parameter(torch.zeros(layers, hidden))
        self.burn_in, self.truncate, self.receptive_field = burn_in, truncate, 1

    def forward(self, x):  # x: (B, 1, L)
        x = x[:, 0, :, None]
        state = (self.h0[:, None].expand(-1, len(x), -1).contiguous(), self.c0[:, None].expand(-1, len(x), -1).contiguous())
        out, state = self.core(x[:, : self.burn_in], state)
        outputs = [out.detach()]
        for i in range(self.burn_in, x.shape[1], self.truncate):
            if i > self.burn_in:
                state = tuple(z.detach() for z in state)
            out, state = self.core(x[:, i : i + self.truncate], state)
            outputs.append(out)
        return self.head(torch.cat(outputs, dim=1))[:, None, :, 0]


class Layer(torch.nn.Module):
    def __init__(self, channels, dilation):
        super().__init__()
        self.conv = torch.nn.Conv1d(channels, channels, 3, dilation=dilation)
        self.mixin = torch.nn.Conv1d(1, channels, 1, bias=False)
        self.residual = torch.nn.Conv1d(channels, channels, 1)

    def forward(self, x, c, out_length):
        z = self.conv(x)
        a = torch.tanh(z + self.mixin(c[:, :, -z.shape[2]:]))
        return x[:, :, -a.shape[2]:] + self.residual(a), a[:, :, -out_length:]


class LayerArray(torch.nn.Module):
    def __init__(self, input_size, channels, head_size, dilations, head_bias):
        super().__init__()
        self.rechannel = torch.nn.Conv1d(input_size, channels, 1, bias=False)
        self.layers = torch.nn.ModuleList([Layer(channels, d) for d in dilations])
        self.head = torch.nn.Conv1d(channels, head_size, 1, bias=head_bias)
        self.receptive_field = 1 + 2 * sum(dilations)

    def forward(self, x, c, head_input):
        out_length = x.shape[2] - (self.receptive_field - 1)
        x = self.rechannel(x)
        for layer in self.layers:
            x, head_term = layer(x, c, out_length)
            head_input = head_term if head_input is None else head_input[:, :, -out_length:] + head_term
        return self.head(head_input), x[:, :, -out_length:]


class WaveNet(torch.nn.Module):
    def __init__(self, arch):
        super().__init__()
        arrays, input_size = [], 1
        for i, (channels, head, dilations) in enumerate(PRESETS[arch]):
            arrays.append(LayerArray(input_size, channels, head, dilations, head_bias=i == len(PRESETS[arch]) - 1))
            input_size = channels
        self.arrays = torch.nn.ModuleList(arrays)
        self.receptive_field = 1 + sum(a.receptive_field - 1 for a in arrays)

    def forward(self, x):
        y, head = x, None
        for array in self.arrays:
            head, y = array(y, x, head)
        return 0.02 * head


def esr(p, y):
    return torch.mean((p - y) ** 2) / (torch.mean(y**2) + 1e-9)


def pre_emphasize(x, coef=0.85):
    return x[..., 1:] - coef * x[..., :-1]


def read(path):
    rate, x = wavfile.read(path)
    return rate, x.astype(np.float32)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("input")
    p.add_argument("target")
    p.add_argument("--latency", type=int, required=True)
    p.add_argument("--arch", default="standard", choices=list(PRESETS) + list(LSTM_PRESETS))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--validation-seconds", type=float, default=9.0)
    p.add_argument("--ny", type=int, default=8192)
    p.add_argument("--batch-size", type=int, default=16)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    rate, x = read(args.input)
    _, y = read(args.target)
    n = min(len(x), len(y))
    x, y = x[: n - args.latency], y[args.latency : n]
    cut = len(x) - int(round(args.validation_seconds * rate))
    x, y = torch.from_numpy(x[:cut].copy()), torch.from_numpy(y[:cut].copy())
    model = Lstm(args.arch) if args.arch in LSTM_PRESETS else WaveNet(args.arch)
    nx, ny = model.receptive_field, args.ny
    items = (len(x) - nx + 1) // ny
    batch = min(args.batch_size, items)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01 if args.arch in LSTM_PRESETS else 0.004)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.arch}: {items} items, batches of {batch}")
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(items)
        start = time.perf_counter()
        total, steps = 0.0, 0
        for first in range(0, items - batch + 1, batch):
            idx = order[first : first + batch]
            xb = torch.stack([x[i * ny : i * ny + nx + ny - 1] for i in idx.tolist()])[:, None, :]
            yb = torch.stack([y[i * ny + nx - 1 : i * ny + nx - 1 + ny] for i in idx.tolist()])[:, None, :]
            pred = model(xb)
            loss = esr(pred, yb) + esr(pre_emphasize(pred), pre_emphasize(yb))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            steps += 1
        seconds = time.perf_counter() - start
        print(f"epoch {epoch} train_seconds {seconds:.3f} steps {steps} loss {total / steps:.5f}", flush=True)


if __name__ == "__main__":
    main()
