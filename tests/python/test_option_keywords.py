"""grassaudit.audit offers every audit option of the engine's table (audit/audit_option_fields.h)
as a keyword: the flag with '_' for '-', with the CLI's default (a switch: False, it is off until
given), apart from the two whose None says more than the table's default can."""
import inspect
import json

import grassaudit
from grassaudit import _engine

# None: the default schedule (seq_lens), the device the module is on (device).
NONE_MEANS_MORE = {"seq_lens", "device"}


def test_every_table_keyword_is_a_keyword_of_audit_with_the_cli_default():
    params = inspect.signature(grassaudit.audit).parameters
    table = _engine.audit_option_keywords()
    assert len(table) >= 15
    for keyword, default_json, is_switch in table:
        assert keyword in params, f"grassaudit.audit has no keyword {keyword}"
        got = params[keyword].default
        if keyword in NONE_MEANS_MORE:
            assert got is None, keyword
        elif is_switch:
            assert got is False, f"{keyword}: a switch is off until given, got {got!r}"
        else:
            assert got == json.loads(default_json), f"{keyword}: {got!r} vs the table's {default_json}"


def test_a_keyword_reaches_the_audit_through_the_table():
    import torch.nn as nn

    class Shift(nn.Module):
        def forward(self, x):
            return x.roll(-1, dims=1)  # reads x_{t+1}

    r = grassaudit.audit(Shift(), inputs=["features:2"], seq_len=8, allow_lookahead=1, mode="eval",
                         no_gradient_check=True)
    d = r.to_dict()
    assert d["contract"]["lookahead"] == 1
    assert d["modes"] == ["eval"]
    assert d["gradient_check"] is None
