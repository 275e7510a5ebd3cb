"""An example client of pbem's JSON API (docs/api.md): plays one seat to the end.

    python docs/api_client.py http://127.0.0.1:5000 <token> [seed]

<token> is the seat's game page link's last part (from any email of the game). The
client reads its view, waits for a change when no decision is its own, and plays a
legal action in the game's notation when one is. Python's standard library only.
"""

import json
import random
import sys
import urllib.error
import urllib.request


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


def choose(mine, rng):
    """The seat's choice: one of the email's choices (the game's own short list), else
    any legal action. (The engine's bots need the game's whole state, which no seat may
    read: a client of the API plays from the view.)"""
    return rng.choice(mine["email"] or mine["legal"])["notation"]


def play(base, token, seed=0):
    """Play the seat until the game ends; the number of moves it played."""
    rng, played, since = random.Random(seed), 0, 0
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
        if view["mine"] is not None and not game["paused"]:
            body = {"decision": view["mine"]["decision"]["id"], "version": game["version"],
                    "action": choose(view["mine"], rng)}
            status, done = call(base, token, "POST", "/seat/act", body)
            if status not in (200, 409):  # 409: the game moved on; read it again
                raise SystemExit(f"refused: {done}")
            played += status == 200
            continue
        call(base, token, "GET", f"/seat/wait?version={game['page_version']}")


if __name__ == "__main__":
    play(sys.argv[1].rstrip("/"), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
