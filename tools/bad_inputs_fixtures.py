#!/usr/bin/env python3
"""The files tools/bad_inputs.sh feeds ptrain: small data sets made by hand
(IDX and .npy), each damaged in one way, gzip bombs, and plan files.
    bad_inputs_fixtures.py DIR
Everything is written under DIR; nothing is downloaded."""
import gzip
import os
import struct
import sys
import zlib

import numpy as np

root = sys.argv[1]
rng = np.random.default_rng(7)


def path(*parts):
    p = os.path.join(root, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


def idx(array, type_code=0x08):
    header = bytes([0, 0, type_code, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


def images(n, side=28):
    return rng.integers(0, 256, size=(n, side, side), dtype=np.uint8)


def labels(n, classes=10):
    return rng.integers(0, classes, size=(n,), dtype=np.uint8)


def fashion_dir(name, train=256, test=64, test_side=28, gz=False):
    files = {
        "train-images-idx3-ubyte": idx(images(train)),
        "train-labels-idx1-ubyte": idx(labels(train)),
        "t10k-images-idx3-ubyte": idx(images(test, test_side)),
        "t10k-labels-idx1-ubyte": idx(labels(test)),
    }
    for base, data in files.items():
        if gz:
            write(f"{name}/{base}.gz", gzip.compress(data, mtime=0))
        else:
            write(f"{name}/{base}", data)


# A good data set (plain and gzipped), and one whose test images are 27x27.
fashion_dir("fm")
fashion_dir("fm-gz", gz=True)
fashion_dir("fm27", test_side=27)

# One damaged training-images file each (the rest of the set is fm's).
good = idx(images(256))
bad = {
    "empty": b"",
    "trunc-header": good[:6],
    "trunc-data": good[: len(good) // 2],
    "wrong-magic": b"\x50\x4b\x03\x04" + good[4:],  # a zip file's magic
    "wrong-type": good[:2] + b"\x0d" + good[3:],  # float, not unsigned byte
    "wrong-rank": good[:3] + b"\x02" + good[4:],
    "zero-dim": good[:4] + struct.pack(">I", 0) + good[8:],
    "huge-dims": bytes([0, 0, 8, 3]) + struct.pack(">III", 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
    "extra-bytes": good + b"\0" * 100,
    "gz-truncated": gzip.compress(good, mtime=0)[:-20],
    "gz-bad-crc": (lambda z: z[:-8] + bytes([z[-8] ^ 0xFF]) + z[-7:])(gzip.compress(good, mtime=0)),
    "gz-trailing-junk": gzip.compress(good, mtime=0) + b"junk",
    "gz-corrupt-deflate": (lambda z: z[:20] + bytes(b ^ 0x55 for b in z[20:40]) + z[40:])(gzip.compress(good, mtime=0)),
}
for name, data in bad.items():
    write(f"idx/{name}", data)

# Gzip bombs: a few MB that inflate to gigabytes. Gzip members may be
# concatenated, so one member of 64 MiB of zeros, repeated, makes them cheaply.
zeros = zlib.compressobj(9, zlib.DEFLATED, 31)
member = zeros.compress(b"\0" * (64 << 20)) + zeros.flush()
# (1) a good header and data, then 2 GiB of zeros after them.
write("idx/bomb-trailing", gzip.compress(good, mtime=0) + member * 32)
# (2) a header declaring 2,000 images of 1000x1000 (2e9 bytes, 8 GB as floats), all of it zeros.
head = bytes([0, 0, 8, 3]) + struct.pack(">III", 2000, 1000, 1000)
write("idx/bomb-declared", gzip.compress(head, mtime=0) + member * 30)

# Labels: one outside the 10 classes; fewer labels than images.
lab = labels(256)
lab[17] = 200
write("idx/labels-out-of-range", idx(lab))
write("idx/labels-short", idx(labels(255)))

# .npy data sets: (N, 4) float32 features, int64 labels.
def npy(name, array):
    np.save(path(f"npy/{name}"), array, allow_pickle=False)


npy("train-x.npy", rng.normal(size=(256, 4)).astype(np.float32))
npy("train-y.npy", rng.integers(0, 3, size=(256,)).astype(np.int64))
npy("test-x.npy", rng.normal(size=(64, 4)).astype(np.float32))
npy("test-y.npy", rng.integers(0, 3, size=(64,)).astype(np.int64))
npy("test-x5.npy", rng.normal(size=(64, 5)).astype(np.float32))  # another sample shape
npy("test-y-classes.npy", rng.integers(0, 7, size=(64,)).astype(np.int64))  # labels up to 6
npy("test-y-short.npy", rng.integers(0, 3, size=(63,)).astype(np.int64))
npy("train-y-negative.npy", np.where(np.arange(256) == 5, -1, 1).astype(np.int64))
npy("train-y-float.npy", rng.normal(size=(256,)).astype(np.float32))
nan_x = rng.normal(size=(256, 4)).astype(np.float32)
nan_x[3, 2] = np.nan
npy("train-x-nan.npy", nan_x)
npy("train-x-fortran.npy", np.asfortranarray(rng.normal(size=(256, 4)).astype(np.float32)))
npy("train-x-complex.npy", rng.normal(size=(256, 4)).astype(np.complex64))
good_npy = open(path("npy/train-x.npy"), "rb").read()
write("npy/bad-magic.npy", b"\x93NUMPX" + good_npy[6:])
write("npy/truncated.npy", good_npy[: len(good_npy) - 100])
write("npy/header-only.npy", good_npy[:40])


def npy_with_header(text):
    header = text.encode("latin1")
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


# A header declaring 10^12 x 10^6 floats, and one with an overflowing shape product.
write("npy/huge-shape.npy", npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000, 1000000), }"))
write("npy/overflow-shape.npy",
      npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }"))
write("npy/pickle.npy", npy_with_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }") + b"\x80\x04N.")

# Plan files and reports.
plans = {
    "plan-corrupt.json": b'{"run": {"epochs": 1,',
    "plan-empty.json": b"",
    "plan-not-object.json": b"[1, 2, 3]",
    "plan-unknown-field.json": b'{"run": {"epoch": 1}}',
    "plan-unknown-section.json": b'{"runs": {"epochs": 1}}',
    "plan-negative-epochs.json": b'{"run": {"epochs": -1}}',
    "plan-huge-number.json": b'{"run": {"epochs": 1e999}}',
    "plan-negative-batch.json": b'{"run": {"batch": -1}}',
    "plan-wrong-type.json": b'{"run": {"batch": "many"}}',
    "plan-huge-workers.json": b'{"run": {"workers": 100000}}',
    "plan-nan-timeout.json": b'{"run": {"comm_timeout": NaN}}',
    "plan-deep.json": b"[" * 200000 + b"]" * 200000,
    "plan-binary.json": bytes(range(256)) * 4,
    "report-truncated.json": b'{"schema_version": 1, "plan": {"model": {"name": "mlp", "hidden": [128]}, "run": {"ep',
    "calibrate-no-run.json": b'{"schema_version": 1, "summary": {}}',
    "codec-costs-bad.csv": b"codec,elements,encode_seconds,decode_seconds\nfp16,1000,nan,1e-3\n",
    "codec-costs-ragged.csv": b"codec,elements,encode_seconds,decode_seconds\nfp16,1000\n",
}
for name, data in plans.items():
    write(f"plans/{name}", data)

# A plan file with a million unknown keys (its error named every one: a line of 37 MB).
junk = b"{" + b",".join(b'"k%d": 1' % i for i in range(1000000)) + b"}"
write("plans/plan-million-keys.json", junk)

# TorchScript models that do not fit Fashion-MNIST (10 classes of 1x28x28),
# with Debian's python3-torch when it is there.
try:
    import torch

    torch.manual_seed(0)
    seven = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 7))  # 7 outputs for 10 classes
    torch.jit.save(torch.jit.script(seven), path("models/seven-outputs.pt"))
    wrong_input = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(100, 10))  # 100 inputs, not 784
    torch.jit.save(torch.jit.script(wrong_input), path("models/wrong-input.pt"))
except ImportError:
    pass
