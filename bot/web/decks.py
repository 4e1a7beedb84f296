"""A server's decks and their editor, for its admins: the list (enable, disable, remove,
export), and an editor that checks a deck as an upload is checked (problems beside their
lines, a preview of each card as Discord shows it), tries its exercises in the sandbox and
publishes it as a new version. The same engine calls as Discord's /deck commands."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from aiohttp import web

from bot.engine import (
    KIND_LABEL,
    MAX_ATTEMPTS,
    MAX_DECK_BYTES,
    Checked,
    DeckRejected,
    DeckSummary,
    Draft,
    TutorError,
    card_text,
    counted,
    exercises_of,
    lettered,
    preview,
    topic_name,
)
from bot.web.site import Site, Viewer, admin, site_of

ORIGIN = {"bundled": "bundled", "uploaded": "this server's", "shared": "shared"}
FILENAME = "deck.yaml"  # what the engine is told the editor's text is: a deck file
ACTIONS = ("check", "try", "publish")
LIMITED = {"check": "check", "try": "trial", "publish": "publish"}  # site.limits rules
DOING = {"check": "checked decks", "trial": "tried exercises", "publish": "published decks"}
PROBLEM = re.compile(r"line (\d+)[,:]\s*(.*)", re.DOTALL)
DECK_ID = re.compile(r"[a-z][a-z0-9_-]{0,39}")  # content.schema SLUG_RE
STARTER = """\
# A deck: change its id and title, then write your cards. Check finds what is wrong.
id: my-deck
title: My deck
description: What this deck teaches.
version: 1
mistakes:
  - id: in_place
    title: Thinking to() works in place
    explanation: to() returns a new tensor; the original stays on its device.
cards:
  - id: my-deck/move
    type: multiple_choice
    rev: 1
    difficulty: easy
    topics: [devices]
    prompt: What does x.to("cuda") return?
    options:
      - {id: copy, text: A new tensor on the GPU, correct: true}
      - {id: same, text: The very same x object, mistake: in_place, says: x is left as it was.}
    hint: Does the call change x itself?
    solution:
      - {title: Read the docs, detail: to() returns a tensor on the requested device.}
    takeaway: Keep the result of to(); it is not in place.
"""
# Trials take seconds to minutes in the sandbox: on threads of their own (as many as the
# engine's gate lets run at once), never those that serve pages or judge learners.
_trials: ThreadPoolExecutor | None = None


def _trial_threads(site: Site) -> ThreadPoolExecutor:
    global _trials
    if _trials is None:
        _trials = ThreadPoolExecutor(site.engine.decks.trials.at_once,
                                     thread_name_prefix="web-deck-trials")
    return _trials


# --- the list --------------------------------------------------------------------------

async def deck_list(request: web.Request) -> web.Response:
    site = site_of(request)
    who, guild_id = admin(request)
    summaries = await site.db(site.engine.decks.summaries, guild_id)
    uploads = await site.db(site.engine.decks.uploads, guild_id)
    published = next((s for s in summaries
                      if s.deck_id == request.query.get("published")), None)
    return site.page(request, "decks.html", title=f"{who.guilds[guild_id][0]}: decks",
                     name=who.guilds[guild_id][0], guild_id=guild_id, decks=summaries,
                     uploads=uploads, origin=ORIGIN, counted=counted, published=published)


async def _summary(site: Site, guild_id: int, deck_id: str,
                   own: bool = False) -> DeckSummary:
    """A deck this server can see (with `own`: one it uploaded), else 'not found': another
    server's private deck is as unknown here as a deck that never was."""
    if not DECK_ID.fullmatch(deck_id):
        raise web.HTTPNotFound()
    found = next((s for s in await site.db(site.engine.decks.summaries, guild_id)
                  if s.deck_id == deck_id), None)
    if found is None or (own and found.origin != "uploaded"):
        raise web.HTTPNotFound()
    return found


async def _change(request: web.Request, site: Site, guild_id: int, call,
                  *args) -> web.Response:
    """A change to the server's decks, then its list; the engine's refusal, in words."""
    try:
        await site.db(call, guild_id, *args)
    except TutorError as exc:
        return site.message(request, "Nothing was changed", str(exc), status=409)
    raise web.HTTPSeeOther(f"/servers/{guild_id}/decks")


async def switch(request: web.Request) -> web.Response:
    site = site_of(request)
    _, guild_id = admin(request)
    deck_id, on = request.match_info["deck"], request.match_info["action"] == "enable"
    await _summary(site, guild_id, deck_id)
    return await _change(request, site, guild_id, site.engine.decks.set_enabled, deck_id, on)


async def remove(request: web.Request) -> web.Response:
    """Removing asks first: without the form's confirmation, a page that asks."""
    site = site_of(request)
    _, guild_id = admin(request)
    deck = await _summary(site, guild_id, request.match_info["deck"], own=True)
    if (await request.post()).get("confirm") != "yes":
        return site.page(request, "remove.html", title=f"Remove {deck.title}?", deck=deck,
                         guild_id=guild_id)
    return await _change(request, site, guild_id, site.engine.decks.remove, deck.deck_id)


async def export(request: web.Request) -> web.Response:
    site = site_of(request)
    _, guild_id = admin(request)
    deck = await _summary(site, guild_id, request.match_info["deck"])
    try:
        name, data = await site.db(site.engine.decks.export, guild_id, deck.deck_id, "yaml")
    except TutorError:
        raise web.HTTPNotFound() from None
    return web.Response(body=data, content_type="text/yaml", charset="utf-8", headers={
        "Content-Disposition": f'attachment; filename="{name}"'})


# --- the editor -------------------------------------------------------------------------

@dataclass
class Outcome:
    """What the editor shows under the text after a POST."""

    summary: str = ""
    ok: str = ""  # a success sentence
    top: list[str] = field(default_factory=list)  # problems without a line, notes
    problems: list[tuple[int, str]] = field(default_factory=list)  # (line, problem)
    cards: list[dict] = field(default_factory=list)  # previews
    trials: list[tuple[str, list[str]]] = field(default_factory=list)  # card, problems
    status: int = 200


def _rejected(exc: DeckRejected, status: int = 200) -> Outcome:
    out = Outcome(summary=str(exc), status=status)
    for problem in exc.problems:
        found = PROBLEM.fullmatch(problem)
        if found:
            out.problems.append((int(found[1]), found[2]))
        else:
            out.top.append(problem)
    out.top += exc.notes
    return out


def _segments(text: str) -> list[tuple[str, str]]:
    """Discord's markdown of a card as (kind, text) pieces the template escapes: "code"
    blocks, "bold" and "text" (the backslashes that keep Discord from reading a mention or
    a link are Discord's, not shown)."""
    pieces: list[tuple[str, str]] = []
    for i, part in enumerate(re.split(r"```[a-z]*\n?(.*?)```", text, flags=re.DOTALL)):
        if i % 2:
            pieces.append(("code", part.rstrip("\n")))
            continue
        for j, run in enumerate(part.split("**")):
            if run.strip():
                pieces.append(("bold" if j % 2 else "text",
                               re.sub(r"\\([\\\[\]<>@*_~|`#.-])", r"\1", run.strip("\n"))))
    return pieces


def previews(site: Site, checked: Checked) -> list[dict]:
    """Each card as Discord shows it when served: the engine's words (card_text)."""
    at = site.engine.tutor.clock()
    shown = []
    for card in checked.deck.cards:
        served = preview(card.id, card.rev, at)
        options = lettered(card, served)
        shown.append({
            "id": card.id,
            "title": f"{KIND_LABEL[served.kind]} · {card.difficulty} · "
                     f"{', '.join(topic_name(t) for t in card.topics)}",
            "body": _segments(card_text(card, options)),
            "chips": [chip.text for _, chip in options] if card.type == "fill_in" else [],
            "blanks": len(card.blanks) if card.type == "fill_in" else 0,
            "footer": "" if card.type == "code" else f"{MAX_ATTEMPTS} attempts left",
        })
    return shown


def _text_of(form) -> str:
    text = form.get("text", "")
    return text.replace("\r\n", "\n") if isinstance(text, str) else ""


async def _checked(site: Site, guild_id: int, text: str) -> Checked | Outcome:
    if len(text.encode()) > MAX_DECK_BYTES:
        return Outcome(summary=f"The deck is {len(text.encode()) / 1024:.0f} KiB; a deck "
                               f"file can be at most {MAX_DECK_BYTES // 1024} KiB. Nothing "
                               "was checked or stored.", status=413)
    try:
        checked = await site.db(site.engine.decks.check, guild_id, FILENAME, text.encode())
    except DeckRejected as exc:
        return _rejected(exc)
    except TutorError as exc:
        return Outcome(summary=str(exc))
    if isinstance(checked, Draft):  # not for a .yaml file; never stored
        return Outcome(summary="That is not a deck file.")
    return checked


async def _tried(site: Site, guild_id: int, checked: Checked) -> Outcome | None:
    """The deck's exercises tried as an upload tries them: None when they pass."""
    decks = site.engine.decks
    if not decks.can_try_exercises:
        return Outcome(summary="Exercises cannot be tried here: this bot runs no code "
                               "sandbox, so decks with behaviour cards cannot be tried or "
                               "published from it. Nothing was stored.")
    try:
        with decks.trial(guild_id):
            await asyncio.get_running_loop().run_in_executor(
                _trial_threads(site), decks.try_exercises, guild_id, checked)
    except DeckRejected as exc:
        return _rejected(exc)
    except TutorError as exc:  # another trial of this server's, or too many this hour
        return Outcome(summary=str(exc), status=429)
    return None


def _trial_results(checked: Checked, failed: Outcome | None) -> list[tuple[str, list[str]]]:
    problems = failed.problems if failed else []
    return [(card.id, [text for _, text in problems if card.id in text])
            for _, card in exercises_of(checked.deck)]


async def editor(request: web.Request) -> web.Response:
    site = site_of(request)
    _, guild_id = admin(request)
    deck_id = request.match_info.get("deck")
    if deck_id is None:
        return _editor_page(request, site, guild_id, None, STARTER, Outcome())
    deck = await _summary(site, guild_id, deck_id, own=True)
    _, data = await site.db(site.engine.decks.export, guild_id, deck.deck_id, "yaml")
    return _editor_page(request, site, guild_id, deck, data.decode(), Outcome())


async def editor_post(request: web.Request) -> web.Response:
    site = site_of(request)
    who, guild_id = admin(request)
    deck_id, action = request.match_info.get("deck"), request.match_info["action"]
    deck = None if deck_id is None else await _summary(site, guild_id, deck_id, own=True)
    text = _text_of(await request.post())
    out = await _act(site, who, guild_id, action, text)
    if isinstance(out, web.HTTPException):
        raise out
    return _editor_page(request, site, guild_id, deck, text, out)


async def _act(site: Site, who: Viewer, guild_id: int, action: str,
               text: str) -> Outcome | web.HTTPException:
    rule = LIMITED[action]
    if not site.limits.allow(rule, who.external_id):
        wait = site.limits.wait(rule, who.external_id)
        return Outcome(summary=f"You {DOING[rule]} too often: try again in "
                               f"{counted(wait, 'second')}. Your text is kept below.",
                       status=429)
    checked = await _checked(site, guild_id, text)
    if isinstance(checked, Outcome):
        return checked
    if action == "check":
        tail = (" Its behaviour cards are tried in the sandbox when you press Try exercises "
                "or Publish." if checked.exercises else "")
        return Outcome(ok=f"No problems: {counted(len(checked.deck.cards), 'card')}, as "
                          f"learners will see them below.{tail}",
                       cards=previews(site, checked))
    if action == "try":
        if not checked.exercises:
            return Outcome(ok="This deck has no behaviour cards: there is nothing to try "
                              "in the sandbox.", cards=previews(site, checked))
        failed = await _tried(site, guild_id, checked)
        if failed is not None and not failed.problems:
            return failed  # not tried at all
        out = failed or Outcome(ok="Every exercise passed in the sandbox.")
        out.trials = _trial_results(checked, failed)
        return out
    if checked.exercises and (failed := await _tried(site, guild_id, checked)) is not None:
        return failed
    try:
        stored = await site.db(site.engine.decks.store, guild_id, checked, who.external_id)
    except DeckRejected as exc:
        return _rejected(exc)
    return web.HTTPSeeOther(f"/servers/{guild_id}/decks?published={stored.deck_id}")


def _editor_page(request: web.Request, site: Site, guild_id: int, deck: DeckSummary | None,
                 text: str, out: Outcome) -> web.Response:
    base = (f"/servers/{guild_id}/decks/{deck.deck_id}/edit" if deck
            else f"/servers/{guild_id}/decks/new")
    beside: dict[int, list[str]] = {}
    for line, problem in out.problems:
        beside.setdefault(line, []).append(problem)
    lines = text.split("\n") if out.problems else []
    return site.page(request, "editor.html", status=out.status,
                     title=f"Edit {deck.title}" if deck else "New deck", deck=deck,
                     guild_id=guild_id, base=base, text=text, out=out, lines=lines,
                     beside=beside, max_kib=MAX_DECK_BYTES // 1024)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/servers/{guild}/decks", deck_list)
    router.add_get("/servers/{guild}/decks/new", editor)
    router.add_post("/servers/{guild}/decks/new/{action:check|try|publish}", editor_post)
    router.add_get("/servers/{guild}/decks/{deck}/edit", editor)
    router.add_post("/servers/{guild}/decks/{deck}/edit/{action:check|try|publish}",
                    editor_post)
    router.add_post("/servers/{guild}/decks/{deck}/{action:enable|disable}", switch)
    router.add_post("/servers/{guild}/decks/{deck}/remove", remove)
    router.add_get("/servers/{guild}/decks/{deck}/export", export)
