"""Light stand-ins for framework tensors: the metadata protocol that ggemm._rules reads
(shape, stride(), dtype, is_cuda, get_device(), data_ptr()) and nothing else."""
from ggemm._rules import Dtypes

DTYPES = Dtypes("bfloat16", "float16", "float32", "int32", "int64", "uint64")


class FakeTensor:
    def __init__(self, shape, dtype, strides=None, device=0, address=0x7F0000000000):
        self.shape = tuple(shape)
        self.dtype = dtype
        if strides is None:
            strides, step = [], 1
            for size in reversed(self.shape):
                strides.insert(0, step)
                step *= size
        self._strides = tuple(strides)
        self._device = device          # None: a CPU tensor
        self._address = address

    def stride(self):
        return self._strides

    @property
    def is_cuda(self):
        return self._device is not None

    def get_device(self):
        return -1 if self._device is None else self._device

    def data_ptr(self):
        return self._address


def problem(m=512, n=256, k=128, experts=4, bias=False, spec=False):
    """The tensors of one valid dense call, in natural or specification layout."""
    if spec:
        t = dict(a=FakeTensor((m, k, 1), "bfloat16", (k, 1, m * k)),
                 b=FakeTensor((n, k, experts), "bfloat16", (k, 1, n * k)),
                 prob=FakeTensor((m, 1, 1), "float32", (1, 1, 1)))
        if bias:
            t["bias"] = FakeTensor((n, experts), "float32", (1, n))
    else:
        t = dict(a=FakeTensor((m, k), "bfloat16"), b=FakeTensor((experts, n, k), "bfloat16"),
                 prob=FakeTensor((m,), "float32"))
        if bias:
            t["bias"] = FakeTensor((experts, n), "float32")
    t["padded_offsets"] = FakeTensor((experts,), "int32")
    t["alpha"] = FakeTensor((experts,), "float32")
    return t
