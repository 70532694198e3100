"""Report.plot draws the leak map as `grassaudit audit --leak-map FILE` does (the engine's gnuplot
script): a valid PNG of the report's size, the same bytes for the same report, a notebook shows
the summary with the SVG inline; a name of another format is one AuditError line."""
import shutil
import struct

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import grassaudit

pytestmark = pytest.mark.skipif(shutil.which("gnuplot") is None, reason="no gnuplot")


class SamePadded(nn.Module):
    """features [B, L, 4] -> [B, L, 4] through a conv padded on both sides: reads x_{t+1}."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(F.pad(x.transpose(1, 2), (1, 1))).transpose(1, 2)


def png_size(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plot_writes_and_returns_the_leak_map(tmp_path):
    torch.manual_seed(0)
    report = grassaudit.audit(SamePadded(), inputs=["features:4"], seq_len=16, trials=1)
    assert report.leak_horizon == 1
    assert report.plot(str(tmp_path / "map.png")) is None
    assert png_size((tmp_path / "map.png").read_bytes()) == (800, 560)
    svg = report.plot()
    assert svg.startswith(b"<?xml") and b"</svg>" in svg and b"LEAKY" in svg
    assert report.plot() == svg, "the same report draws the same bytes"
    page = report._repr_html_()
    assert page.startswith("<pre>") and "<svg" in page and "leak horizon 1" in page
    with pytest.raises(grassaudit.AuditError, match="the name must end in .svg or .png"):
        report.plot(str(tmp_path / "map.jpg"))
