"""device=: where the module runs and is probed. None audits it where it is; "cpu" on a CPU module
is the audit of no argument, field for field (what it spent aside); a device that is not there is
a ValueError with the CLI's one line; the module comes back on its own device."""
import pytest
import torch
import torch.nn as nn

import grassaudit

COSTS = {"seconds", "seconds_by_check", "forwards"}


class CumulativeLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(self.lin(x), dim=1)


def facts(report):
    return {k: v for k, v in report.to_dict().items() if k not in COSTS}


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_cpu_is_the_audit_of_no_device(device):
    torch.manual_seed(0)
    m = CumulativeLinear()
    plain = grassaudit.audit(m, "features:4", seq_len=8, trials=1)
    placed = grassaudit.audit(m, "features:4", seq_len=8, trials=1, device=device)
    assert placed["device"] == "cpu"
    assert facts(placed) == facts(plain)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_without_cuda_is_a_value_error(device):
    m = CumulativeLinear()
    with pytest.raises(ValueError) as info:
        grassaudit.audit(m, "features:4", seq_len=8, device=device)
    assert str(info.value) == (f"--device {device}: CUDA is not available (this LibTorch build has no CUDA support or "
                               "no GPU is visible); audit on the CPU (--device cpu)")
    assert next(m.parameters()).device.type == "cpu"


def test_an_unknown_device_is_a_value_error():
    with pytest.raises(ValueError) as info:
        grassaudit.audit(CumulativeLinear(), "features:4", seq_len=8, device="tpu")
    assert str(info.value) == "--device must be cpu, cuda or cuda:N, got 'tpu'"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_module_on_cuda_is_audited_there_and_stays_there():
    torch.manual_seed(0)
    m = CumulativeLinear()
    on_cpu = grassaudit.audit(m, "features:4", seq_len=8, trials=1)
    m = m.cuda()
    on_gpu = grassaudit.audit(m, "features:4", seq_len=8, trials=1)
    assert on_gpu["device"].startswith("cuda")
    assert next(m.parameters()).device.type == "cuda"
    assert (on_gpu.verdict, on_gpu.leak_horizon) == (on_cpu.verdict, on_cpu.leak_horizon)
    assert on_gpu.past_horizon == on_cpu.past_horizon
