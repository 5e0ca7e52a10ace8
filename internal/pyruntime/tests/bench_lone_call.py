"""The runtime's own cost of a lone awaited tool call (BenchmarkLoneCall).

``await proxy.tool(...)`` on the direct pipes with every answer already
written, so the time is the runtime's work alone: the proxy, the check that
the task is alone, encoding the request, writing it, reading and decoding
the answer, the result object. Prints the median and the fastest of the
rounds' per-call times, in microseconds, as JSON. Arguments: calls per
round and rounds (default 2000 and 9).
"""

import asyncio
import fcntl
import json
import os
import statistics
import sys
import time

import helpers
from _codemode import rpc, wire
from mcp import runtime, servers

F_SETPIPE_SZ = 1031


class _Session:
    config = {"servers": []}


def main(calls=2000, rounds=9):
    """calls per round: the answers of a round must fit a 1 MiB pipe."""
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    for fd in (requests_w, replies_w):
        fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
    os.set_blocking(requests_r, False)
    session = _Session()
    session.rpc = rpc.Client(None, {"requests": requests_w, "replies": replies_r})
    runtime._attach(session)
    proxy = servers.ServerProxy("everything", "everything")
    result = {"content": [{"type": "text", "text": "Echo: x"}]}

    def answer(first):
        os.write(replies_w, b"".join(
            helpers.frame("M", wire.encode_message({"type": "rpc_result", "id": i, "ok": True, "result": result}))
            for i in range(first, first + calls)))

    def drain():
        try:
            while os.read(requests_r, 1 << 20):
                pass
        except BlockingIOError:
            pass

    async def run():
        per_call, next_id = [], 1
        for _ in range(rounds):
            answer(next_id)
            next_id += calls
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                result = await proxy.echo(message="x")
            per_call.append((time.perf_counter_ns() - t0) / calls / 1e3)
            assert result.text == "Echo: x", result
            drain()
        return per_call

    per_call = asyncio.run(run())
    print(json.dumps({"median_us": statistics.median(per_call), "min_us": min(per_call)}))


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:])))
