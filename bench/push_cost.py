"""Push cost: what browser notifications add to a move and to a notice.

On a temporary SQLite database (migrated with ``pbem.migrate.upgrade``) a 3-player
Cavemen game is started through the services, then it times (``time.perf_counter``,
median of ``--reps`` runs of ``--n`` calls):

* ``Push.targets`` for one queued email, the question every queued email asks the push
  channel in the move's transaction: with push off (``PUSH=False``: no query), on with
  no subscription (one indexed query), and on with a subscription for the seat;
* the encryption and VAPID signature of one notification (``WebPusher.encode`` and
  ``Vapid02.sign``), what the notices' thread does before each send.

The machine is shared and noisy: compare figures within one run only.

    .venv/bin/python bench/push_cost.py [--n 2000] [--reps 5]
"""

from __future__ import annotations

import argparse
import base64
import functools
import os
import statistics
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from pywebpush import WebPusher
from sqlmodel import select

from pbem import create_app, services
from pbem.channels import push
from pbem.db import session_scope
from pbem.kinds import EmailTemplate
from pbem.migrate import upgrade
from pbem.models import Game, PushSubscription, Seat


def per_call(fn, n: int, reps: int) -> float:
    runs = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - start) / n)
    return statistics.median(runs) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    url = f"sqlite:///{tmp / 'bench.sqlite3'}"
    upgrade(url)
    players = [services.PlayerIn(n, f"{n.lower()}@bench.test", "en", "UTC")
               for n in ("Ann", "Bob", "Cy")]
    point = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    keys = {"p256dh": base64.urlsafe_b64encode(point).rstrip(b"=").decode(),
            "auth": base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()}
    cases = (("push off", False, False), ("push on, no device", True, False),
             ("push on, one device", True, True))
    for label, on, subscribed in cases:
        app = create_app({"DATABASE_URL": url, "SECRET_KEY": "bench",
                          "MAIL_BACKEND": "memory", "MAIL_FROM": "bench@bench.test",
                          "PUSH": on})
        app.instance_path = str(tmp)
        with app.app_context():
            created = services.create_game("cavemen", players, seed=1, confirm_by_email=False,
                                           start=True)
            with session_scope() as s:
                game = s.get(Game, created.game_id)
                seats = list(s.exec(select(Seat).where(Seat.game_id == game.id)))
                if subscribed:
                    s.add(PushSubscription(seat_id=seats[0].id, endpoint_hash="x",
                                           endpoint="https://push.example.com/x", **keys))
                    s.flush()
                ask = functools.partial(push.CHANNEL.targets, s, game, seats[:1],
                                        EmailTemplate.DECISION, {})
                micro = per_call(ask, args.n, args.reps)
                print(f"Push.targets per queued email, {label}: {micro:.0f} µs")
        if subscribed:
            with app.app_context():
                signer = push.vapid(app)
                pusher = WebPusher({"endpoint": "https://push.example.com/x", "keys": keys})
                data = b'{"title":"Friday evening","body":"Your turn: bid for the conch, by ' \
                       b'Sat 18:00","game":"0123456789","tag":"pbem-0123456789-0"}'
                n = max(args.n // 20, 10)
                encrypt = per_call(functools.partial(pusher.encode, data), n, args.reps)
                print(f"encrypting one notification: {encrypt:.0f} µs")
                claims = {"sub": "mailto:bench@bench.test", "aud": "https://push.example.com",
                          "exp": int(time.time()) + 3600}
                sign = per_call(functools.partial(signer.sign, claims), n, args.reps)
                print(f"signing its VAPID header: {sign:.0f} µs")


if __name__ == "__main__":
    main()
