import json, threading
from tests.support.fake_llm import reply, Text, Call
from tests.gateway.test_page import SMART
def test_dbg(serve):
    gw = serve(**SMART)
    gw.llm.script(reply(Text("I will wipe ", "the cache."), Call("c1", "wipe", '{"target": "cache"}')))
    with gw.client(auth=False, timeout=15, follow_redirects=False) as client:
        r = client.get(f"/login?token={gw.token}")
        print(r.status_code, r.headers.get("set-cookie"))
        h = {"origin": gw.base, "sec-fetch-site": "same-origin"}
        print(client.get("/api/sessions", headers=h).json())
        run = client.post("/api/runs", json={"prompt": "please wipe the cache", "session_id": None}, headers=h).json()
        print(run)
        with client.stream("GET", f"/api/runs/{run['id']}/events", headers={"sec-fetch-site": "same-origin", "accept": "text/event-stream"}) as resp:
            for line in resp.iter_lines():
                print(line[:100])
                if "pending" in line: break
