"""mcp.runtime and the proxies, against a fake host that answers RPCs."""

import json
import unittest

import helpers

SERVERS = [{"name": "git-hub", "alias": "git_hub", "description": "code hosting"},
           {"name": "files", "alias": "files", "description": ""}]

TOOLS = {"git-hub": [{"name": "create-issue", "alias": "create_issue", "description": "Open an issue",
                      "input_schema": {"type": "object", "properties": {"title": {}}, "required": ["title"]}}]}


def host(rt, msg):
    """Answer one RPC the way internal/proxy does (shapes only)."""
    m, p = msg["method"], msg.get("params") or {}
    reply = {"type": "rpc_result", "id": msg["id"], "ok": True}
    if m == "call_tool":
        if p["tool"] == "boom":
            reply["result"] = {"content": [{"type": "text", "text": "bad input"}], "isError": True}
        elif p.get("positional") and len(p["positional"]) > 1:
            reply.update(ok=False, error={"kind": "type_error", "message": "echo() takes 1 positional argument but 2 were given"})
        elif p["server"] == "nowhere":
            reply.update(ok=False, error={"kind": "unknown_server", "message": "Unknown MCP server: nowhere", "server": "nowhere"})
        elif p["tool"] == "structured":
            reply["result"] = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"sum": 42}}
        else:
            reply["result"] = {"content": [{"type": "text", "text": json.dumps({"echo": p})}]}
    elif m == "discovered_servers":
        reply["result"] = [dict(b, description=b["description"] or "files server 1.0") for b in SERVERS]
    elif m == "list_loaded_server_metadata":
        reply["result"] = []
    elif m == "progress":
        reply["result"] = None
    elif m == "list_servers":
        reply["result"] = ["files"]
    elif m == "describe_server":
        name = "git-hub" if p["server"] in ("git_hub", "git-hub") else p["server"]
        reply["result"] = {"name": name, "alias": "git_hub", "tools": TOOLS.get(name, []), "cwd": None}
    elif m == "query_tool_docs":
        reply["result"] = [{"server": "git-hub", "serverAlias": "git_hub", "tool": "create-issue", "toolAlias": "create_issue"}]
    elif m == "search_tool_docs":
        reply["result"] = [{"server": "git-hub", "tool": "create-issue", "query": p["query"], "limit": p["limit"]}]
    else:
        reply.update(ok=False, error={"kind": "invalid", "message": "Unknown RPC type: " + m})
    rt.answer(msg, reply)


class MCPAPITest(unittest.TestCase):
    def setUp(self):
        self.rt = helpers.Booted({"manual": "M", "servers": SERVERS})
        self.addCleanup(self.rt.close)

    def run_ok(self, code):
        done, out, err = self.rt.run(code, on_message=host)
        self.assertEqual(done["status"], "ok", err.decode())
        return out.decode()

    def test_proxies_are_predefined(self):
        out = self.run_ok("print(mcp_git_hub, mcp_servers['files'], sorted(mcp_servers))")
        self.assertEqual(out, "<MCP server git-hub (mcp_git_hub)> <MCP server files (mcp_files)> ['files', 'git-hub']\n")

    def test_discovered_servers(self):
        out = self.run_ok("print(runtime.discovered_servers())\nprint(*runtime.discovered_servers(detailed=True))")
        self.assertEqual(out, "('git-hub', 'files')\n{'name': 'git-hub', 'description': 'code hosting'} "
                              "{'name': 'files', 'description': 'files server 1.0'}\n")

    def test_every_helper_can_be_awaited(self):
        out = self.run_ok("print((await runtime.describe_server('git_hub'))['name'], runtime.describe_server('git_hub')['name'])\n"
                          "print(await runtime.discovered_servers(), await runtime.list_loaded_server_metadata() == ())\n"
                          "print(await runtime.capability_summary(), type(runtime.describe_server_sync('files')).__name__)\n"
                          "print(await runtime.list_servers(), runtime.list_servers_sync())\n"
                          "await runtime.progress(1, 2)\nruntime.progress(2, 2)")
        self.assertEqual(out, "git-hub git-hub\n('git-hub', 'files') True\nM dict\n('files',) ('files',)\n")

    def test_missing_await_names_the_fix(self):
        for code, want in [
            ("r = mcp_files.read(path='/x')\nr.text", "mcp_files.read(...) was not awaited: it returned a coroutine, not its result. "
             "Write `result = await mcp_files.read(...)` (top-level await works here), or call `mcp_files.read.sync(...)` from synchronous code (reading .text)"),
            ("r = runtime.call_tool('files', 'read', {})\nr['content']", "runtime.call_tool_sync('files', 'read', ...)"),
            ("from mcp.servers.git_hub import create_issue\ncreate_issue(title='t').data", "create_issue.sync(...)"),
            ("runtime.search_tool_docs('x')[0]", "runtime.search_tool_docs_sync(...)"),
        ]:
            done, _, err = self.rt.run(code, on_message=host)
            self.assertEqual(done["status"], "error")
            self.assertIn(want, err.decode())
            self.assertNotIn("'coroutine' object", err.decode())
            self.assertNotIn("never awaited", err.decode())
        # It is still a coroutine to asyncio.
        out = self.run_ok("import asyncio\nt = asyncio.create_task(mcp_files.read(i=1))\nr = await t\nprint(r.data['echo']['arguments'])")
        self.assertEqual(out, "{'i': 1}\n")

    def test_unknown_server_lists_configured(self):
        want = "mcp.runtime.MCPError: Unknown MCP server: %s; configured servers: git-hub (mcp_git_hub), files (mcp_files)"
        for code, name in [("await mcp_nosuch.read()", "nosuch"), ("mcp_servers['x']", "x")]:
            done, _, err = self.rt.run(code, on_message=host)
            self.assertEqual(done["status"], "error")
            self.assertIn(want % name, err.decode())
            self.assertNotIn("NameError", err.decode())
        # Code that catches NameError itself still sees it.
        self.assertEqual(self.run_ok("try:\n    mcp_nosuch\nexcept NameError:\n    print('caught')"), "caught\n")

    def test_call_and_result_helpers(self):
        out = self.run_ok("r = await mcp_files.read(path='/x')\nprint(r.data['echo']['tool'], r.data['echo']['arguments'], r['content'][0]['type'])\n"
                          "s = await mcp_files.structured()\nprint(s.data, s.sum, s.text)")
        self.assertEqual(out, "read {'path': '/x'} text\n{'sum': 42} 42 {}\n")

    def test_sync_calls(self):
        out = self.run_ok("print(runtime.call_tool_sync('files', 'read', {'a': 1}).data['echo']['arguments'])\nprint(mcp_files.read.sync(b=2).data['echo']['arguments'])")
        self.assertEqual(out, "{'a': 1}\n{'b': 2}\n")

    def test_positional_argument_is_sent(self):
        out = self.run_ok("print((await mcp_files.read('/x')).data['echo']['positional'])")
        self.assertEqual(out, "['/x']\n")

    def test_errors(self):
        out = self.run_ok(
            "try:\n    await mcp_files.boom()\nexcept runtime.MCPError as e:\n    print(e.kind, e.server, e.tool, e, e.result.text)\n"
            "try:\n    await mcp_files.read(1, 2)\nexcept TypeError as e:\n    print('TypeError', e)\n"
            "try:\n    await runtime.call_tool('nowhere', 'x')\nexcept RuntimeError as e:\n    print(type(e).__name__, e.kind, e)\n"
            "try:\n    runtime.list_tools_sync()\nexcept runtime.MCPError as e:\n    print(e)\n")
        self.assertEqual(out.splitlines(), [
            "tool_error files boom files.boom failed: bad input bad input",
            "TypeError echo() takes 1 positional argument but 2 were given",
            "MCPError unknown_server Unknown MCP server: nowhere",
            "list_tools_sync(server) requires a server name",
        ])

    def test_uncaught_error_is_named_for_users(self):
        done, _, err = self.rt.run("await mcp_files.boom()", on_message=host)
        self.assertEqual(done["status"], "error")
        self.assertIn("mcp.runtime.MCPError: files.boom failed: bad input", err.decode())
        self.assertNotIn("/codemode/", err.decode())

    def test_query_and_search_shapes(self):
        out = self.run_ok("print(type(await runtime.query_tool_docs('git_hub', 'create_issue')).__name__)\n"
                          "print(type(runtime.query_tool_docs_sync('git_hub', 'create_issue')).__name__)\n"
                          "print((await runtime.search_tool_docs('open issue', limit=3))[0]['limit'])\n"
                          "print(await runtime.search_tool_docs('  '))")
        self.assertEqual(out, "dict\nlist\n3\n[]\n")

    def test_server_module(self):
        out = self.run_ok("from mcp.servers.git_hub import create_issue\nimport mcp.servers.git_hub as g\n"
                          "print(g.TOOL_MAP, g.__all__, create_issue.__doc__)\nprint((await create_issue(title='t')).data['echo']['tool'])")
        self.assertEqual(out, "{'create_issue': 'create-issue'} ['create_issue'] Open an issue\ncreate-issue\n")

    def test_gather_sends_calls_concurrently(self):
        # The fake host only answers once all 8 requests are in: if the
        # runtime sent them one at a time, this would deadlock.
        pending = []

        def batch(rt, msg):
            pending.append(msg)
            if len(pending) == 8:
                for m in reversed(pending):
                    host(rt, m)

        done, out, err = self.rt.run("import asyncio\nrs = await asyncio.gather(*[mcp_files.read(i=i) for i in range(8)])\n"
                                     "print([r.data['echo']['arguments']['i'] for r in rs])", on_message=batch)
        self.assertEqual((done["status"], out), ("ok", b"[0, 1, 2, 3, 4, 5, 6, 7]\n"), err)


    def test_awaited_call_waits_directly_only_when_alone(self):
        # A lone awaited call skips the event loop's wake-up; anything else
        # the loop could run (another task, a timer, a watched file) keeps
        # the loop in charge.
        # The count of tasks without building a set (_only_task) agrees
        # with all_tasks on this Python.
        out = self.run_ok("import asyncio\nfrom _codemode import rpc\nloop = asyncio.get_running_loop()\n"
                          "alone = lambda: rpc._alone(asyncio.get_running_loop(), asyncio)\n"
                          "only = lambda: rpc._only_task(asyncio, asyncio.get_running_loop())\n"
                          "print(alone(), only())\n"
                          "async def other(): return alone(), only()\n"
                          "print(await asyncio.gather(other(), other()))\n"
                          "h = loop.call_later(60, print)\nprint(alone())\nh.cancel()\n"
                          "import os\nr, w = os.pipe()\nloop.add_reader(r, print)\nprint(alone())\nloop.remove_reader(r)\n"
                          "async def timed(): return await asyncio.wait_for(mcp_files.read(i=1), 5)\n"
                          "print((await timed()).data['echo']['arguments'])")
        self.assertEqual(out, "True True\n[(False, False), (False, False)]\nFalse\nFalse\n{'i': 1}\n")

    def test_interrupt_of_a_lone_awaited_call(self):
        import threading
        import time

        rt = self.rt

        def never_answer(rt, msg):
            threading.Timer(0.3, lambda: rt.send({"type": "interrupt", "id": rt.next_id})).start()

        started = time.monotonic()
        done, _, err = rt.run("await mcp_files.read(i=1)", on_message=never_answer)
        self.assertEqual(done["status"], "interrupted", err)
        self.assertLess(time.monotonic() - started, 10)
        self.assertEqual(self.run_ok("print((await mcp_files.read(i=2)).data['echo']['arguments'])"), "{'i': 2}\n")


class MCPAPIDirectTest(MCPAPITest):
    """The same API with direct pipes (the native sandbox): a waiting thread
    sends its request and reads its answer there."""

    def setUp(self):
        self.rt = helpers.Booted({"manual": "M", "servers": SERVERS}, direct=True)
        self.addCleanup(self.rt.close)

    def test_waiting_calls_use_the_direct_pipes(self):
        out = self.run_ok("r = await mcp_files.read(i=1)\nprint(r.data['echo']['arguments'], runtime.list_servers_sync())\n"
                          "import asyncio\nprint(len(await asyncio.gather(*[mcp_files.read(i=i) for i in range(4)])))")
        self.assertEqual(out, "{'i': 1} ('files',)\n4\n")
        # The lone awaited call and the synchronous one; gathered calls
        # go over the channel, which the event loop watches.
        self.assertEqual(self.rt.direct, 2)

    def test_an_abandoned_call_answered_late_is_dropped(self):
        import threading

        rt, abandoned = self.rt, []

        def interrupt_it(rt, msg):
            abandoned.append(msg)
            threading.Timer(0.3, lambda: rt.send({"type": "interrupt", "id": rt.next_id})).start()

        done, _, err = rt.run("await mcp_files.read(i=1)", on_message=interrupt_it)
        self.assertEqual(done["status"], "interrupted", err)
        # Its answer comes after all: read and dropped, the next call gets its own.
        host(rt, abandoned[0])
        wait_for_drain = ("import time, mcp.runtime as rt\nb = rt._session.rpc._direct.busy\n"
                          "while not b.acquire(False): time.sleep(0.01)\nb.release()\n")
        self.assertEqual(self.run_ok(wait_for_drain + "print((await mcp_files.read(i=2)).data['echo']['arguments'])"), "{'i': 2}\n")
        self.assertEqual(rt.direct, 2)


if __name__ == "__main__":
    unittest.main()
