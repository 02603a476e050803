"""Flows against a real server (test/clients/clients.test.ts starts it; without WAYMARK_ADDRESS
these skip): register from YAML and from a dict, re-register (a no-op), an edit (version 2), get
and list; an invalid flow is refused with its field path and nothing stored. Running a flow
through an approval and a crash is test/clients/flow-clients.test.ts's must-show."""

from __future__ import annotations

import copy
import os
import secrets

import pytest

import waymark
from test_flows import REFUND_FLOW, REFUND_FLOW_YAML

ADDRESS = os.environ.get("WAYMARK_ADDRESS", "")
pytestmark = pytest.mark.skipif(
    not ADDRESS, reason="WAYMARK_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs these against a real server"
)


def test_live_flow_register_get_list() -> None:
    name = f"py-flow-{secrets.token_hex(4)}"
    with waymark.Client(ADDRESS, connect_timeout=30) as c:
        first = c.flows.register(REFUND_FLOW_YAML.replace("name: refund-flow", f"name: {name}", 1))
        assert first.created and first.flow.version == "1" and first.flow.digest
        same = dict(REFUND_FLOW, name=name)
        again = c.flows.register(same)
        assert not again.created and again.flow.version == "1" and again.flow.digest == first.flow.digest
        edited = dict(same, description="Refunds an order after a person approves it (edited).")
        second = c.flows.register(edited)
        assert second.created and second.flow.version == "2" and second.flow.digest != first.flow.digest

        assert c.flows.get(name) == c.flows.get(name, 2)
        assert c.flows.get(name).flow == waymark.parse_flow(edited)
        assert c.flows.get(name, "1").digest == first.flow.digest
        listed = [f for f in c.flows.list() if f.flow.name == name]
        assert [f.version for f in listed] == ["2"]

        broken = copy.deepcopy(edited)
        broken["name"] = f"py-flow-broken-{secrets.token_hex(4)}"
        broken["edges"][1]["condition"] = "state.nope == 1"
        with pytest.raises(waymark.InvalidFlow) as invalid:
            c.flows.register(broken)
        assert invalid.value.field_violations[0].field == "flow.edges[1].condition"
        with pytest.raises(waymark.FlowNotFound):
            c.flows.get(broken["name"])
        with pytest.raises(waymark.FlowNotFound) as missing:
            c.flows.get(name, 9)
        assert missing.value.version == "9"
        with pytest.raises(waymark.FlowNameTaken):
            c.flows.register(dict(edited, name="refund"))


@pytest.mark.asyncio
async def test_live_async_flows() -> None:
    name = f"py-async-flow-{secrets.token_hex(4)}"
    async with waymark.AsyncClient(ADDRESS, connect_timeout=30) as c:
        registered = await c.flows.register(dict(REFUND_FLOW, name=name))
        assert registered.created and registered.flow.version == "1"
        assert (await c.flows.get(name)).digest == registered.flow.digest
        assert name in [f.flow.name for f in await c.flows.list()]
