from typing import Any
from tests.mcp.conftest import http_client, trio_models, TRIO

async def test_smoke(bench_server: Any) -> None:
    with bench_server() as server:
        for mode in ("auto", "legacy"):
            async with http_client(server.url + "/mcp", mode=mode) as client:
                tools = await client.list_tools()
                print(mode, [t.name for t in tools.tools])
                print(tools.tools[1].input_schema)
                res = await client.call_tool("list_collections", {})
                print(res)
                got = []
                async def prog(p, t, m): got.append((p, t, m))
                res = await client.call_tool("ask", {"collection": "trio", "prompt": "hi", "with": []}, progress_callback=prog)
                print(res.content[0].text)
                print(res.structured_content)
                print(got)
