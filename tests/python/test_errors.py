"""Bad input is a Python exception with the CLI's one-line message, never a crash: ValueError for
bad arguments, grassaudit.ModelError (an AuditError) for a model the audit cannot take,
grassaudit.ForwardError when forward raises."""
import pytest
import torch
import torch.nn as nn

import grassaudit


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(self.lin(x), dim=1)


@pytest.mark.parametrize("kwargs,message", [
    (dict(inputs=["features:x"]), "--input features:x: 'x' of features is not a positive integer"),
    (dict(inputs=["pixels:3"]), "--input 'pixels:3': KIND must be tokens:V, features:C, ones, zeros or const:VALUE ([NAME=]KIND)"),
    (dict(inputs=["features:4", "features:4"]),
     "nn.Module Conv: 2 --input values for 1 argument: forward is forward(self, x: Tensor)"),
    (dict(inputs=["y=features:4"]),
     "nn.Module Conv: --input y=features:4: forward has no argument 'y'; it is forward(self, x: Tensor)"),
    (dict(inputs=["features:4"], mode="sideways"), "--mode must be eval, train or both, got 'sideways'"),
    (dict(inputs=["features:4"], seq_lens=[8, 40]), "--seq-lens entries must be in [2, --seq-len], got 40"),
    (dict(inputs=["features:4"], feature_scale=0), "--feature-scale must be > 0"),
    (dict(inputs=["features:4"], time_axis=0), "nn.Module Conv: --time-axis 0: dimension 0 is the batch; time is at 1 or later"),
    (dict(inputs=["features:4"], output="logits"),
     "--output 'logits': a leaf path is a sequence of [INDEX] or [\"KEY\"], e.g. [0], [\"logits\"], [1][0] (\"\" is the output itself)"),
    (dict(inputs=["features:4"], threads=-1), "--threads must be >= 0 (0 = all cores), got -1"),
])
def test_bad_arguments_are_value_errors(kwargs, message):
    with pytest.raises(ValueError) as info:
        grassaudit.audit(Conv(), seq_len=32, **kwargs)
    assert str(info.value) == message


def test_unknown_option_is_a_type_error():
    with pytest.raises(TypeError):
        grassaudit.audit(Conv(), inputs="features:4", seq_len=8, lookahead=1)  # the flag is allow_lookahead


def test_not_a_module():
    with pytest.raises(ValueError, match="takes a torch.nn.Module"):
        grassaudit.audit(lambda x: x, inputs="features:4", seq_len=8)


class Boom(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.helper(self.lin(x))

    def helper(self, h):
        raise RuntimeError("boom\nsecond line of the message")


def test_forward_that_raises():
    with pytest.raises(grassaudit.ForwardError) as info:
        grassaudit.audit(Boom(), inputs="features:4", seq_len=8)
    message = str(info.value)
    assert message.startswith("nn.Module Boom (features:4): forward failed at L=8 (input [2, 8, 4] Float): ")
    assert message.endswith("second line of the message")  # the traceback's last line
    assert "\n" not in message
    assert isinstance(info.value, grassaudit.AuditError)
    assert isinstance(info.value.__cause__, RuntimeError)


class NoTime(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return {"pooled": self.lin(x).mean(dim=1), "ids": x.argmax(-1)}


def test_model_the_audit_cannot_take():
    with pytest.raises(grassaudit.ModelError) as info:
        grassaudit.audit(NoTime(), inputs="features:4", seq_len=8)
    assert str(info.value) == (
        "nn.Module NoTime (features:4): no output leaf has the time axis (a floating-point tensor [B, ...] with "
        "L = 8 at dimension 1); its leaves: [\"pooled\"] [2, 4] (skipped: shape [2, 4]: dimension 1 (--time-axis) "
        "is 4, not the length 8); [\"ids\"] [2, 8] (skipped: dtype Long is not floating point)")
    assert not isinstance(info.value, grassaudit.ForwardError)


def test_output_names_no_leaf():
    with pytest.raises(grassaudit.ModelError, match=r'--output \["nope"\] names no leaf of the output'):
        grassaudit.audit(NoTime(), inputs="features:4", seq_len=8, output='["nope"]')


def test_incremental_without_step():
    with pytest.raises(grassaudit.RefusedError, match="init_state") as info:
        grassaudit.audit(Conv(), inputs="features:4", seq_len=8, incremental=True)
    assert info.value.reason == "incremental"
    assert isinstance(info.value, grassaudit.ModelError)  # the refusals are model errors


def test_property_search_is_built():
    # The package builds its RapidCheck runner wherever librapidcheck-dev is installed (CI: both
    # Debian roots), so property=N runs (test_cli_equality.py compares it with the CLI).
    assert grassaudit._engine.has_property_search()


def test_property_search_missing_is_said():
    from grassaudit import _property_runner
    grassaudit._engine.set_property_runner(None, "no runner in this test")
    try:
        with pytest.raises(ValueError, match=r"^--property: no property search here \(no runner in this test\)$"):
            grassaudit.audit(Conv(), inputs="features:4", seq_len=8, property=10)
    finally:
        grassaudit._engine.set_property_runner(_property_runner.search)
    with pytest.raises(ValueError, match="--property must be >= 1"):
        grassaudit.audit(Conv(), inputs="features:4", seq_len=8, property=0)


def test_script_module_is_refused():
    with pytest.raises(ValueError, match="got a TorchScript module"):
        grassaudit.audit(torch.jit.script(Conv()), inputs="features:4", seq_len=8)


class Returns(nn.Module):
    """forward returns whatever it is given to return: the audit says what is wrong, never crashes."""

    def __init__(self, make):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.make = make

    def forward(self, x):
        return self.make(self.lin(x))


@pytest.mark.parametrize("make", [
    lambda h: None,
    lambda h: "text",
    lambda h: {1, 2},
    lambda h: (v for v in (h,)),
    lambda h: h * float("nan"),
    lambda h: h.long(),
    lambda h: h[:, :1],
    lambda h: [],
    lambda h: {"a": {"b": [None, 3, "x"]}},
    lambda h: {(1, 2): h},
], ids=["none", "str", "set", "generator", "nan", "long", "one-step", "empty-list", "nested-no-tensor",
        "tuple-key"])
def test_odd_outputs_are_exceptions(make):
    try:
        grassaudit.audit(Returns(make), inputs="features:4", seq_len=8)
    except (grassaudit.AuditError, ValueError) as e:
        assert str(e) and "\n" not in str(e)


class NoisyInEval(nn.Module):
    """Noise outside torch's RNG (numpy's), in eval mode too: the same input, other outputs."""

    def forward(self, x):
        import numpy as np
        return torch.cumsum(x, dim=1) + torch.from_numpy(np.random.standard_normal(x.shape)).to(x.dtype)


def test_nondeterministic_forward_is_refused_with_its_reason():
    with pytest.raises(grassaudit.RefusedError, match="nondeterministic in") as info:
        grassaudit.audit(NoisyInEval().eval(), inputs="features:4", seq_len=8)
    assert info.value.reason == "nondeterministic"
