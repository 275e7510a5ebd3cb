"""The service layer: the only code that calls the engine and the only code that commits.

Every change to a game is one transaction: lock the game row, check the decision is still
open, ``engine.apply``, store the new state with its Move and Events, close and open
Decision rows, queue the emails in the Outbox. Commit. Mail is delivered after the commit
(``pbem.mail.deliver_due``); a crash leaves either the old or the new state.

One module per area; each imports only the ones listed above it:

- ``plumbing``: shared helpers: tokens, locking the game row, seats, deadline and reminder
  times, the event log, queueing email (sending caps, hold reasons, waking the deliverer).
- ``allowance``: the bots' CPU allowance: the CPU a game's bots spent thinking in a UTC
  day, per game and per host, charged after each choice; the budget a strong bot thinks
  at (the default one beyond the day's allowance); old days forgotten by the clock.
- ``push``: a seat's browsers notified by Web Push: registering one from the seat's
  game page, removing one, the list the page shows.
- ``reading``: what pages and emails show: a seat's page, spectators, the host's admin page;
  the version of a game page for its ETag (``page_stamp``).
- ``playing``: playing a decision (one-click link or page form), bots, committing the state,
  opening and closing Decision rows, decision emails and their one-click choices.
- ``deadlines``: the clock's work: due reminders and timeouts, sending a reminder, timing out.
- ``games``: creating and joining games: checking players, the host's confirmation,
  invitations, re-inviting a declined seat, starting.
- ``my_games``: a player's own list of games: asking for it by address (a link sent to
  that address only), reading it, opening a game's page from it.
- ``addresses``: what an address chooses for all of its games (a digest, quiet hours,
  news), through the link of any email sent to it.
- ``digest``: the daily digest of an address that chose one (queued by the clock, filled
  in when sent).
- ``calendar``: a player's deadlines in their calendar: the private feed of an address's
  open decisions (made, replaced and stopped from a game page), one deadline as a file.
- ``talk``: table talk: a player's message to the table (an event of the log), from the
  game page or a reply by email.
- ``takeback``: a player takes back their last move (while nobody else acted and it
  showed nothing hidden; what the table said meanwhile is kept).
- ``bounces``: delivery reports that come back to an email's return path.
- ``replies``: replies by email: a received message authenticated for a seat, its
  command lines played (``engine.core.parse_action``), the answer in the thread.
- ``webhooks``: a table's chat webhooks, set by the host (added with their URL checked,
  removed, started again, tested).
- ``controls``: host and player controls: pause, resume, extend, hand-over, bots, coming
  back, notifications, unsubscribing, leaving, language, abandon, vacation.

Modules call one another only through public names (a name starting with ``_`` is used
in its own module only), and hand results back as values, never through the session.
Callers outside the package use the names re-exported here (``services.create_game``).
A test that patches a module attribute patches the module that reads it:
``services.games.new_seed``, ``services.playing.BOT_MOVES_IN_A_ROW``.
"""

from pbem.policy import GamePolicy, default_reminders
from pbem.services.addresses import save_address_settings
from pbem.services.allowance import BotCpu, forget_old_usage
from pbem.services.calendar import (
    CALENDAR_CHOICES,
    calendar_feed,
    calendar_game,
    calendar_settings,
    deadline_file,
    mail_game_link,
    set_calendar,
)
from pbem.services.controls import (
    NOTIFY_CHOICES,
    abandon_game,
    answer_handover,
    came_back,
    come_back,
    describe_handover,
    describe_unsubscribe,
    extend_deadline,
    hand_over,
    handover_answered,
    host_reminded,
    is_on_bot,
    note_presence,
    pause_game,
    remind_now,
    resume_game,
    set_bot,
    set_language,
    set_notifications,
    take_vacation,
    unsubscribe,
    vacation_refusal,
    withdraw_handover,
)
from pbem.services.deadlines import (
    Due,
    due_bot_moves,
    due_reminders,
    due_timeouts,
    play_bot,
    play_bots_due,
    remind_due,
    send_reminder,
    time_out,
    time_out_due,
)
from pbem.services.digest import queue_digests
from pbem.services.games import (
    Created,
    PlayerIn,
    answer_invitation,
    bot_levels,
    check_name,
    check_title,
    confirm_host,
    create_game,
    created_game,
    describe_host_confirm,
    describe_invitation,
    expire_unconfirmed,
    expired_unconfirmed,
    offered_games,
    parse_player,
    play_again,
    replace_player,
    validate_players,
)
from pbem.services.my_games import (
    my_games,
    my_links_stopped,
    open_my_game,
    open_my_host_page,
    request_my_games,
    stop_my_links,
)
from pbem.services.playing import (
    BOT_MOVES_IN_A_ROW,
    Outcome,
    act_by_token,
    act_from_page,
    describe_token,
    set_plan,
    set_standing,
)
from pbem.services.plumbing import LANGUAGES, MAIL_QUEUED, OUTBOX_CHANNEL
from pbem.services.push import add_push_device, remove_push_device
from pbem.services.reading import (
    PageStamp,
    Receipt,
    admin_data,
    game_for_page,
    game_for_spectator,
    host_language,
    log_round_for_page,
    log_round_for_spectator,
    page_stamp,
    receipt_for_page,
    seat_last_event,
    spectator_stamp,
)
from pbem.services.replies import Received, receive_reply
from pbem.services.takeback import take_back, take_back_offer_for
from pbem.services.talk import say
from pbem.services.viewing import read_seat_view, seat_view
from pbem.services.webhooks import (
    CHOICES as WEBHOOK_CHOICES,
)
from pbem.services.webhooks import (
    add_webhook,
    game_webhooks,
    remove_webhook,
    restart_webhook,
    send_test_message,
)

__all__ = [
    # plumbing and the policy
    "LANGUAGES", "MAIL_QUEUED", "OUTBOX_CHANNEL", "GamePolicy", "default_reminders",
    # allowance
    "BotCpu", "forget_old_usage",
    # push
    "add_push_device", "remove_push_device",
    # reading
    "admin_data", "game_for_page", "game_for_spectator", "host_language",
    "log_round_for_page", "log_round_for_spectator", "PageStamp", "page_stamp",
    "Receipt", "receipt_for_page", "seat_last_event", "spectator_stamp",
    # one view of a seat
    "read_seat_view", "seat_view",
    # take-backs
    "take_back", "take_back_offer_for",
    # playing
    "BOT_MOVES_IN_A_ROW", "Outcome", "act_by_token", "act_from_page",
    "describe_token", "set_plan", "set_standing",
    # deadlines
    "Due", "due_bot_moves", "due_reminders", "due_timeouts", "play_bot", "play_bots_due",
    "remind_due", "send_reminder", "time_out", "time_out_due",
    # games
    "Created", "PlayerIn", "bot_levels", "answer_invitation", "check_name", "check_title",
    "confirm_host", "create_game", "created_game", "offered_games", "describe_host_confirm",
    "describe_invitation",
    "expire_unconfirmed", "expired_unconfirmed",
    "parse_player", "play_again", "replace_player", "validate_players",
    # my_games
    "my_games", "my_links_stopped", "open_my_game", "open_my_host_page", "request_my_games",
    "stop_my_links",
    # addresses
    "save_address_settings",
    # digest
    "queue_digests",
    # calendar
    "CALENDAR_CHOICES", "calendar_feed", "calendar_game", "calendar_settings",
    "deadline_file", "mail_game_link", "set_calendar",
    # talk and replies
    "say", "Received", "receive_reply",
    # controls
    "NOTIFY_CHOICES", "abandon_game", "answer_handover", "came_back", "come_back",
    "describe_handover",
    "describe_unsubscribe", "extend_deadline", "hand_over", "handover_answered",
    "host_reminded", "is_on_bot", "note_presence",
    "pause_game",
    "remind_now", "resume_game", "set_bot", "set_language", "set_notifications", "take_vacation",
    "unsubscribe", "vacation_refusal", "withdraw_handover",
    # a table's chat webhooks
    "WEBHOOK_CHOICES", "add_webhook", "game_webhooks", "remove_webhook", "restart_webhook",
    "send_test_message",
]
