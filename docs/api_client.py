"""An example client of pbem's JSON API (docs/api.md): plays one seat to the end.

    python docs/api_client.py http://127.0.0.1:5000 <token> [budget_ms]

<token>: the last part of the seat's game page link (in any email of the game). When a
decision is the seat's, the client asks for a world it cannot tell from the game (all
it cannot see drawn anew), lets the game's strong bot (pbem's engine package) search it
with budget_ms of CPU, and plays the bot's choice in the game's notation.
"""
import importlib
import json
import random
import sys
import time
import urllib.error
import urllib.request

from engine.core import format_action


def call(base, token, method, path, body=None):
    """One request: (status, decoded JSON or None)."""
    request = urllib.request.Request(
        f"{base}/api/v1{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=90) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"null")


def play(base, token, budget=20.0):
    """Play the seat until the game ends; the number of moves it played."""
    played, since = 0, 0
    while True:
        status, view = call(base, token, "GET", f"/seat?since={since}")
        if status != 200:
            raise SystemExit(f"refused: {view}")
        since, game = view["game"]["event_seq"], view["game"]
        for line in view["talk"]:
            print(f"{line['name']}: {line['text']}")
        if game["status"] in ("finished", "abandoned"):
            print(f"game {game['status']}; winners {view['board']['winners']}; "
                  f"moves played {played}")
            return played
        if view["mine"] is None or game["paused"]:
            status, _ = call(base, token, "GET", f"/seat/wait?version={game['page_version']}")
            time.sleep(2 if status == 429 else 0)  # 429: the server holds enough waits
            continue
        status, world = call(base, token, "GET", "/seat/world")
        if status != 200:
            raise SystemExit(f"refused: {world}")
        engine = importlib.import_module(f"engine.{world['engine']}")
        bot = engine.make_strong(budget_ms=budget)
        action = bot(engine.from_json(world["state"]), world["position"], random.Random())
        status, done = call(base, token, "POST", "/seat/act", {
            "decision": view["mine"]["decision"]["id"], "version": world["version"],
            "action": format_action(action)})
        if status not in (200, 409):  # 409: the game moved on; read it again
            raise SystemExit(f"refused: {done}")
        played += status == 200


if __name__ == "__main__":
    play(sys.argv[1].rstrip("/"), sys.argv[2], float(sys.argv[3]) if sys.argv[3:] else 20.0)
