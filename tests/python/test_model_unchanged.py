"""In-process means the model comes back as it was given: every parameter and buffer bit for bit
(the same tensor objects), dtype, device, train/eval mode of every submodule, requires_grad,
plain attributes, torch's RNG state, grad mode and thread count; also when the audit raises,
when forward raises, and on KeyboardInterrupt."""
import pytest
import torch
import torch.nn as nn

import grassaudit


class Mixed(nn.Module):
    """Dropout, a BatchNorm whose running statistics train-mode forward updates, a frozen layer,
    a submodule left in eval mode inside a model in train mode, and plain attributes."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.frozen = nn.Linear(8, 8)
        self.frozen.requires_grad_(False)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(8, 3)
        self.scale = 0.5
        self.name = "mixed"

    def forward(self, x):
        h = self.drop(torch.relu(self.inp(x)))
        h = self.bn(h.transpose(1, 2)).transpose(1, 2)  # rows mix in train mode: batch-coupled
        h = torch.cumsum(self.frozen(h), dim=1) * self.scale
        return self.out(h)


def snapshot(model):
    return dict(
        params=[(n, p, p.data, p.detach().clone(), p.requires_grad, p.dtype, p.device) for n, p in model.named_parameters()],
        buffers=[(n, b, b.detach().clone()) for n, b in model.named_buffers()],
        modes=[(n, m.training) for n, m in model.named_modules()],
        attrs=[(n, {k: v for k, v in vars(m).items() if isinstance(v, (int, float, str, bool))})
               for n, m in model.named_modules()],
        rng=torch.get_rng_state(),
        grad=torch.is_grad_enabled(),
        threads=torch.get_num_threads(),
    )


def assert_same(model, before):
    after_params = dict(model.named_parameters())
    for n, p, data, bits, rg, dtype, device in before["params"]:
        q = after_params[n]
        assert q is p and q.data.data_ptr() == data.data_ptr(), n
        assert q.dtype == dtype and q.device == device, n
        assert q.requires_grad == rg, n
        assert torch.equal(q.detach().view(torch.uint8) if q.dtype == torch.uint8 else q.detach(), bits), n
        assert q.detach().numpy().tobytes() == bits.numpy().tobytes(), n  # bit for bit
    after_buffers = dict(model.named_buffers())
    assert list(after_buffers) == [n for n, _, _ in before["buffers"]]
    for n, b, bits in before["buffers"]:
        assert after_buffers[n] is b and b.numpy().tobytes() == bits.numpy().tobytes(), n
    assert [(n, m.training) for n, m in model.named_modules()] == before["modes"]
    assert [(n, {k: v for k, v in vars(m).items() if isinstance(v, (int, float, str, bool))})
            for n, m in model.named_modules()] == before["attrs"]
    assert torch.equal(torch.get_rng_state(), before["rng"])
    assert torch.is_grad_enabled() == before["grad"]
    assert torch.get_num_threads() == before["threads"]


@pytest.fixture
def mixed():
    torch.manual_seed(3)
    m = Mixed().train()
    m.out.eval()  # a submodule in the other mode
    with torch.no_grad():
        m.bn.running_mean.uniform_()
    return m


def test_unchanged_after_a_full_audit(mixed):
    before = snapshot(mixed)
    report = grassaudit.audit(mixed, inputs=["features:4"], seq_len=12, threads=2)
    assert not report.causal and report["batch_coupled"]  # train-mode BatchNorm: rows mix
    assert_same(mixed, before)


def test_unchanged_after_float64_model():
    torch.manual_seed(4)
    m = Mixed().double().eval()
    before = snapshot(m)
    grassaudit.audit(m, inputs=["features:4"], seq_len=8)
    assert_same(m, before)
    assert all(p.dtype == torch.float64 for p in m.parameters())


CALLS = {}


class RaisesAt(nn.Module):
    """Raises at `length` once it has run there `after` times (mid-audit, after the conversions and
    mode switches of the passes before). The count lives outside the module: the audit puts the
    module's own attributes back after every pass."""

    def __init__(self, length, exc, after=0):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.length, self.exc, self.after = length, exc, after
        self.__dict__["_calls"] = CALLS.setdefault(id(self), [0])

    def forward(self, x):
        h = self.lin(x)
        if x.size(1) == self.length:
            self._calls[0] += 1
            if self._calls[0] > self.after:
                raise self.exc
        return torch.cumsum(h, dim=1)


def test_unchanged_when_forward_raises():
    torch.manual_seed(5)
    m = RaisesAt(16, ValueError("no more length 16 here"), after=6).train()
    before = snapshot(m)
    with pytest.raises(grassaudit.ForwardError) as info:
        grassaudit.audit(m, inputs=["features:4"], seq_len=16)  # the length asked for: refused
    assert str(info.value).endswith("ValueError: no more length 16 here")
    assert isinstance(info.value.__cause__, ValueError)
    assert_same(m, before)


def test_unchanged_when_a_shorter_length_raises():
    torch.manual_seed(5)
    m = RaisesAt(8, ValueError("no length 8 here")).train()
    before = snapshot(m)
    report = grassaudit.audit(m, inputs=["features:4"], seq_len=16)  # schedule 16, 15, 8, 4, 2: 8 skipped
    assert [s["length"] for s in report.lengths_skipped] == [8]
    assert report.lengths_skipped[0]["reason"].endswith("ValueError: no length 8 here")
    assert report.verdict == "causal"
    assert_same(m, before)


def test_unchanged_on_keyboard_interrupt():
    torch.manual_seed(6)
    calls = [0]

    class Interrupted(RaisesAt):
        def forward(self, x):
            calls[0] += 1
            if calls[0] == 25:  # somewhere in the middle of the probes
                raise KeyboardInterrupt
            return super().forward(x)

    m = Interrupted(-1, None)
    before = snapshot(m)
    with pytest.raises(KeyboardInterrupt):
        grassaudit.audit(m, inputs=["features:4"], seq_len=16)
    assert calls[0] == 25
    assert_same(m, before)


class Counter(nn.Module):
    """forward changes a Python attribute that its output reads: refused, as the CLI refuses it."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return torch.cumsum(self.lin(x), dim=1) * self.calls


class RunningSum(nn.Module):
    """The same with a buffer."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("total", torch.zeros(4))

    def forward(self, x):
        h = self.lin(x)
        self.total += h.detach().sum(dim=(0, 1))
        return torch.cumsum(h, dim=1) + self.total


@pytest.mark.parametrize("make,what", [(Counter, "attribute 'calls' (0 -> 1)"),
                                       (RunningSum, "buffer 'total' (Float [4] -> other values)")])
def test_state_changing_forward_is_refused(make, what):
    torch.manual_seed(7)
    m = make().eval()
    before = snapshot(m)
    with pytest.raises(grassaudit.ModelError) as info:
        grassaudit.audit(m, inputs=["features:4"], seq_len=8)
    message = str(info.value)
    assert message.startswith(f"nn.Module {make.__name__} (features:4): forward changes its state: {what} changed "
                              "during one call"), message
    assert not isinstance(info.value, grassaudit.ForwardError)
    assert isinstance(info.value, grassaudit.RefusedError) and info.value.reason == "state"
    assert_same(m, before)


class Float32Only(nn.Module):
    """A float32 tensor made inside forward: the float64 copy cannot run."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        w = torch.eye(4)  # float32 whatever the module's dtype
        h = self.lin(x) @ w
        return h + 1e-6 * torch.roll(h, -1, dims=1)  # a leak at float32 rounding level


def test_float64_fallback_keeps_the_model():
    torch.manual_seed(8)
    m = Float32Only().eval()
    before = snapshot(m)
    report = grassaudit.audit(m, inputs=["features:4"], seq_len=8)
    # the CLI's note for a file that cannot run in float64, naming the module and Python's error
    assert any(n.startswith("float64 unavailable (forward failed in float64: nn.Module Float32Only (features:4): "
                            "forward failed at L=8 (input [1, 8, 4] Double): RuntimeError: ")
               for n in report["notes"]), report["notes"]
    assert_same(m, before)
