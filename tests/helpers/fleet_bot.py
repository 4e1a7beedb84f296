"""A bot process of a fleet, for tests: `python -m tests.helpers.fleet_bot SPEC_JSON`.

SPEC: {"url": the bot's Redis address, "runs": [{"code", "learner"}], "hold": true to wait
(never exiting) after sending, so the test can kill it with runs in flight}. Prints one JSON
line per run as it is answered ({"learner", "status", "stdout"} or {"learner", "busy"}),
then {"replies": entries in this process's reply stream, "distinct": distinct run ids}.
"""

from __future__ import annotations

import asyncio
import json
import sys

from bot.sandbox.client.client import SandboxBusy
from bot.sandbox.client.fleet import FleetClient
from tests.helpers.fleet import client_timing
from tests.helpers.sandbox import TEST_LIMITS


async def main(spec: dict) -> None:
    client = FleetClient(spec["url"], limits=TEST_LIMITS, runs_per_minute=10_000,
                         timing=client_timing())
    await client.start()

    async def one(run: dict) -> None:
        try:
            result = await client.run(run["code"], learner=run["learner"])
            line = {"learner": run["learner"], "status": result.status,
                    "stdout": result.stdout}
        except SandboxBusy as exc:
            line = {"learner": run["learner"], "busy": str(exc)}
        print(json.dumps(line), flush=True)

    runs = [asyncio.ensure_future(one(run)) for run in spec["runs"]]
    print(json.dumps({"sent": len(runs)}), flush=True)
    if spec.get("hold"):
        await asyncio.Event().wait()
    await asyncio.gather(*runs)
    # Every reply any host wrote for this process, whether kept or not.
    streams = await client.redis.xread({client.replies: "0-0"}, count=100_000)
    rids = [fields["rid"] for _, entries in streams for _, fields in entries]
    print(json.dumps({"replies": len(rids), "distinct": len(set(rids))}), flush=True)
    await client.stop()


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
