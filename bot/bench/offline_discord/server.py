"""The offline Discord's server: REST routes and the gateway on one loopback port, and the
calls that drive the bot (slash, click, select, submit_modal) with a record of each interaction.
The state lives in bot/bench/offline_discord/world.py, the websocket in gateway.py, the records
of requests and interactions in records.py, OAuth2 (a web front end's login) in oauth2.py.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import re
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from bot.bench.offline_discord.gateway import Gateway
from bot.bench.offline_discord.oauth2 import OAuth2
from bot.bench.offline_discord.records import InteractionRecord, Request
from bot.bench.offline_discord.world import ALL_PERMISSIONS, LOADING, ApiError, World

NOT_FOUND = {"message": "404: Not Found", "code": 0}
__all__ = ["NOT_FOUND", "InteractionRecord", "OfflineDiscord", "Request"]


class OfflineDiscord(World):
    def __init__(self, *, bot_name="offline-bot", ack_deadline=3.0, heartbeat_ms=41250):
        self.ack_deadline = ack_deadline
        self.requests: list[Request] = []
        self.interactions: dict[str, InteractionRecord] = {}  # by token
        self._modals: dict[str, InteractionRecord] = {}  # modal custom_id -> interaction
        self._faults: list[tuple] = []
        self._changed = asyncio.Event()
        self.gateway = Gateway(self, url=lambda: self.gateway_url, changed=self._changed.set,
                               heartbeat_ms=heartbeat_ms)
        super().__init__(bot_name=bot_name, to_bot=self.gateway.announce)
        self.oauth2 = OAuth2(self, base=lambda: self.files_base)  # a web front end's login
        self.oauth_app = self.oauth2.register_app
        table = [  # paths relative to /api/v10; {name} matches one segment
            ("GET", "/users/@me", lambda req: self.bot_user),
            ("GET", "/users/@me/guilds", lambda req: self.user_guilds(self.bot_user_id)),
            ("GET", "/users/{uid}", lambda req, uid: self._get(self.users, uid, 10013)),
            ("GET", "(?:/oauth2)?/applications/@me", self._app_info),
            ("GET", "/gateway(?P<bot>/bot)?", self._gateway_info),
            ("GET|PUT", "/applications/{app}(?:/guilds/{gid})?/commands", self._commands),
            ("POST", "/users/@me/channels", self._create_dm),
            ("GET", "/channels/{cid}", lambda req, cid: self._get(self.channels, cid, 10003)),
            ("POST", "/channels/{cid}/messages", self._post_message),
            ("GET|PATCH|DELETE", "/channels/{cid}/messages/{mid}", self._channel_message),
            ("POST", "/interactions/{iid}/{token}/callback", self._callback),
            ("POST", "/webhooks/{app}/{token}", self._followup),
            ("GET|PATCH|DELETE", "/webhooks/{app}/{token}/messages/{mid}", self._webhook_message),
        ]
        self._routes = [(m.split("|"), re.compile(re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", p)), f)
                        for m, p, f in table]

    # ---- lifecycle ---------------------------------------------------------------------------

    async def start(self, backlog: int = 1024) -> OfflineDiscord:
        """Listen on a free loopback port. `backlog`: connections waiting to be accepted,
        above the learners of a burst (each opens one; the default 128 overflowed)."""
        app = web.Application(client_max_size=32 * 1024 * 1024)
        self.oauth2.mount(app, rest=self._rest)  # OAuth2's routes; the rest of /api/v10 here
        app.router.add_get("/", self.gateway.handle)
        app.router.add_get("/attachments/{cid}/{aid}/{filename}", self._file)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=backlog)  # port 0: free
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        await self.gateway.close()
        await self._runner.cleanup()

    async def __aenter__(self) -> OfflineDiscord:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    api_base = property(lambda self: f"http://127.0.0.1:{self.port}/api/v10")
    files_base = property(lambda self: f"http://127.0.0.1:{self.port}")
    gateway_url = property(lambda self: f"ws://127.0.0.1:{self.port}/")
    connected = property(lambda self: len(self.gateway.conns))  # open gateway websockets
    identify = property(lambda self: self.gateway.identify)  # the bot's IDENTIFY payload

    async def wait_ready(self, timeout=5.0) -> dict:
        """Wait until a client IDENTIFYed and got READY; returns its IDENTIFY payload."""
        await self._wait(lambda: self.gateway.session is not None, timeout, "READY")
        return self.identify

    async def wait_commands(self, timeout=5.0, guild_id: str | None = None) -> list[dict]:
        """The commands the bot bulk-overwrote globally (or for `guild_id`), with their ids."""
        await self._wait(lambda: guild_id in self.commands, timeout, "command sync")
        return self.commands[guild_id]

    def fail_next(self, method: str, path_glob: str, status: int, json: dict | None = None,
                  headers: dict | None = None) -> None:
        """Answer the next `method` request whose path matches `path_glob` with this error."""
        if status == 429:  # discord.py treats a 429 without `Via` as a Cloudflare ban
            json = json or {"message": "You are being rate limited.", "retry_after": 0.05,
                            "global": False}
            headers = {"Via": "1.1 google", **(headers or {})}
        self._faults.append((method, path_glob, status, json or {"message": "error", "code": 0},
                             headers or {}))

    async def _wait(self, predicate: Callable[[], Any], timeout: float, what: str):
        try:
            async with asyncio.timeout(timeout):
                while not (result := predicate()):
                    self._changed.clear()
                    await self._changed.wait()
                return result
        except TimeoutError:
            failed = [f"{r.method} {r.path} {r.status}" for r in self.requests if r.status >= 400]
            raise TimeoutError(f"timed out waiting for {what}; failed requests: {failed}") from None

    # ---- REST --------------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        if request.content_type.startswith("multipart/"):  # files: payload_json + file parts
            form = await request.post()
            body = json.loads(form.get("payload_json", "{}"))
            files = [(k, f) for k, f in form.items() if k != "payload_json"]
            body["_files"] = [getattr(f, "filename", k) for k, f in files]
            body["_uploads"] = [(getattr(f, "filename", k), f.file.read(),
                                 getattr(f, "content_type", None))
                                for k, f in files if hasattr(f, "file")]
        else:
            body = json.loads(await request.read() or "null")
        req = Request(request.method, path, dict(request.query), body)
        self.requests.append(req)
        status, payload, headers = 404, NOT_FOUND, {}
        fault = next((f for f in self._faults
                      if f[0] == req.method and fnmatch.fnmatchcase(path, f[1])), None)
        if fault:
            self._faults.remove(fault)
            status, payload, headers = fault[2:]
        else:
            for methods, pattern, handler in self._routes:
                if req.method in methods and (m := pattern.fullmatch(path)):
                    try:
                        status, payload = 200, handler(req, **m.groupdict())
                    except ApiError as e:
                        status, payload = e.status, e.json
                    break
        req.status = status = 204 if payload is None else status
        self._changed.set()
        # discord.py parses JSON only if Content-Type is exactly "application/json" (no charset)
        return web.Response(status=status, headers=headers, content_type="application/json",
                            body=None if status == 204 else json.dumps(payload).encode())

    async def _file(self, request: web.Request) -> web.Response:
        """An attachment's bytes, as Discord's CDN serves them."""
        stored = self.files.get(request.match_info["aid"])
        if stored is None or stored[0]["filename"] != request.match_info["filename"]:
            return web.Response(status=404)
        attachment, data = stored
        return web.Response(body=data, content_type=attachment["content_type"]
                            or "application/octet-stream")

    def _app_info(self, req: Request) -> dict:
        return {"id": self.application_id, "name": self.bot_user["username"], "description": "",
                "icon": None, "bot_public": True, "bot_require_code_grant": False, "flags": 0,
                "owner": self._owner, "verify_key": "0" * 64, "team": None, "bot": self.bot_user}

    def _gateway_info(self, req: Request, bot: str | None) -> dict:
        # AutoShardedClient connects to this url (it ignores DEFAULT_GATEWAY)
        if not bot:
            return {"url": self.gateway_url.rstrip("/")}
        return {"url": self.gateway_url.rstrip("/"), "shards": 1, "session_start_limit": {
            "total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}}

    def _commands(self, req: Request, app: str, gid: str | None) -> list[dict]:
        if req.method == "PUT":  # bulk overwrite: echo back with ids (stable per name)
            old = {c["name"]: c["id"] for c in self.commands.get(gid, [])}
            self.commands[gid] = [
                {"type": 1, "options": [], "nsfw": False, "default_member_permissions": None,
                 **cmd, "id": old.get(cmd["name"]) or self.snowflake(), "version": self.snowflake(),
                 "application_id": self.application_id, **({"guild_id": gid} if gid else {})}
                for cmd in req.json]
        return self.commands.get(gid, [])

    def _create_dm(self, req: Request) -> dict:
        return self.dm_channel(self._get(self.users, str(req.json["recipient_id"]), 10013))

    def _post_message(self, req: Request, cid: str) -> dict:
        self._get(self.channels, cid, 10003)
        return self._new_message(cid, req.json)

    def _message_op(self, req: Request, msg: dict) -> dict | None:
        if req.method == "DELETE":
            del self.messages[msg["id"]]
            return None
        return self._edit_message(msg, req.json) if req.method == "PATCH" else msg

    def _channel_message(self, req: Request, cid: str, mid: str) -> dict | None:
        return self._message_op(req, self._get(self.messages, mid, 10008))

    def _webhook_message(self, req: Request, app: str, token: str, mid: str) -> dict | None:
        rec = self._get(self.interactions, token, 10015)
        msg = self._get(self.messages, rec.message_id if mid == "@original" else mid, 10008)
        if mid == "@original" and req.method == "PATCH":
            rec.edits.append(req.json)
        return self._message_op(req, msg)

    def _callback(self, req: Request, iid: str, token: str) -> dict:
        rec = self.interactions.get(token)
        if rec is None or rec.id != iid or time.monotonic() - rec.created > self.ack_deadline:
            raise ApiError(404, "Unknown interaction", 10062)
        if rec.callback_type is not None:
            raise ApiError(400, "Interaction has already been acknowledged.", 40060)
        ctype, data = req.json["type"], req.json.get("data") or {}
        if req.json.get("_uploads"):  # multipart: the files ride beside the payload
            data = {**data, "_uploads": req.json["_uploads"]}
        channel_id, msg, mtype = rec.payload["channel"]["id"], None, 20 if rec.type == 2 else 0
        if ctype == 4:  # a new message
            msg = self._new_message(channel_id, data, rec, mtype)
        elif ctype == 5:  # "thinking...": a loading placeholder that @original edits fill
            msg = self._new_message(channel_id, {"flags": (data.get("flags") or 0) | LOADING},
                                    rec, mtype)
        elif ctype in (6, 7) and "message" in rec.payload:  # about the component's own message
            rec.message_id = rec.payload["message"]["id"]
            if ctype == 7:
                msg = self._edit_message(self._get(self.messages, rec.message_id, 10008), data)
        elif ctype == 9:
            self._modals[data["custom_id"]] = rec
        # 8: autocomplete choices, recorded in rec.data; no message
        if ctype in (4, 5):
            rec.message_id = msg["id"]
        rec.callback_type, rec.data = ctype, data
        # discord.py 2.7 sends ?with_response=1 and builds InteractionCallbackResponse from this;
        # it stores the message's view under `response_message_id`.
        out = {"interaction": {"id": iid, "type": rec.type, "response_message_id": rec.message_id,
                               "response_message_loading": ctype == 5,
                               "response_message_ephemeral": bool(msg and msg["flags"] & 64)}}
        return out | ({"resource": {"type": ctype, "message": msg}} if msg else {})

    def _followup(self, req: Request, app: str, token: str) -> dict:
        rec = self._get(self.interactions, token, 10015)
        if rec.callback_type is None:
            raise ApiError(404, "Unknown Webhook", 10015)
        original = rec.message
        if rec.callback_type == 5 and original and original["flags"] & LOADING:
            msg = self._edit_message(original, req.json)  # Discord: 1st followup fills the defer
        else:
            msg = self._new_message(rec.payload["channel"]["id"], req.json, rec)
        rec.followups.append(msg)
        return msg

    # ---- driving the bot: interactions -------------------------------------------------------

    async def _interact(self, user: dict, itype: int, data: dict, guild_id=None, channel_id=None,
                        message: dict | None = None, timeout=5.0, wait=True,
                        fields: dict | None = None) -> InteractionRecord:
        """Dispatch INTERACTION_CREATE and (unless `wait` is false) wait until the bot
        called back. `fields` replace the payload's own (None: the key left out), as a
        broken or forged client's would."""
        guild_id = guild_id or (channel_id and self.channels[channel_id].get("guild_id"))
        if guild_id:
            channel = self.channels[channel_id or self.guilds[guild_id]["channels"][0]["id"]]
            ctx = {"guild_id": guild_id, "guild_locale": "en-US", "context": 0,
                   "member": self._member(user, guild_id),
                   "authorizing_integration_owners": {"0": guild_id},
                   "guild": {"id": guild_id, "locale": "en-US", "features": []}}
        else:
            channel = self.channels[channel_id] if channel_id else self.dm_channel(user)
            ctx = {"user": user, "context": 1, "authorizing_integration_owners": {"1": user["id"]}}
        token = f"itoken-{self.snowflake()}"
        payload = {"id": self.snowflake(), "application_id": self.application_id, "type": itype,
                   "data": data, "channel_id": channel["id"], "channel": channel, "token": token,
                   "version": 1, "app_permissions": ALL_PERMISSIONS, "locale": "en-US",
                   "entitlements": [], "attachment_size_limit": 10 * 1024 * 1024, **ctx}
        if message is not None:
            payload["message"] = message
        for key, value in (fields or {}).items():
            if value is None:
                payload.pop(key, None)
            else:
                payload[key] = value
        rec = InteractionRecord(self, payload["id"], token, itype, payload)
        self.interactions[token] = rec
        self.gateway.dispatch("INTERACTION_CREATE", payload)
        if wait:
            await rec.wait_for(lambda r: r.callback_type is not None, timeout)
        return rec

    async def slash(self, user: dict, name: str, options: dict | None = None, guild_id=None,
                    channel_id=None, subcommand: str | None = None,
                    timeout=5.0) -> InteractionRecord:
        """Run `/name [group] [subcommand]` with `options` {name: value}; a user, channel or
        attachment option takes the object dict (`attachment()` makes one). Without
        guild_id/channel_id it runs in the user's DM."""
        guild_id = guild_id or (channel_id and self.channels[channel_id].get("guild_id"))
        data = self._command_data(name, options, guild_id, subcommand)
        return await self._interact(user, 2, data, guild_id, channel_id, timeout=timeout)

    async def autocomplete(self, user: dict, name: str, option: str, typed: str,
                           options: dict | None = None, guild_id=None, channel_id=None,
                           subcommand: str | None = None, timeout=5.0) -> InteractionRecord:
        """Type ``typed`` into ``option`` of `/name` (``options``: those filled already); the
        choices the bot offered are `rec.data["choices"]`."""
        guild_id = guild_id or (channel_id and self.channels[channel_id].get("guild_id"))
        data = self._command_data(name, {**(options or {}), option: typed}, guild_id,
                                  subcommand, focused=option)
        return await self._interact(user, 4, data, guild_id, channel_id, timeout=timeout)

    def _command_data(self, name: str, options: dict | None, guild_id, subcommand: str | None,
                      focused: str | None = None) -> dict:
        scopes = [guild_id, None] if guild_id else [None]
        cmd = next((c for s in scopes for c in self.commands.get(s, []) if c["name"] == name), None)
        if cmd is None:
            raise LookupError(f"/{name} was never synced (have: {self.commands})")
        data = {"id": cmd["id"], "name": name, "type": cmd["type"]}
        if "guild_id" in cmd:  # discord.py looks guild commands up by data.guild_id
            data["guild_id"] = cmd["guild_id"]
        spec, leaf = cmd, data
        for part in (subcommand or "").split():  # "group sub" -> nested type-2/type-1 options
            spec = next(o for o in spec["options"] if o["name"] == part)
            leaf["options"] = [node := {"name": part, "type": spec["type"]}]
            leaf = node
        resolved: dict = {}
        leaf["options"] = []
        for key, value in (options or {}).items():
            ospec = next((o for o in spec.get("options", []) if o["name"] == key), None)
            if ospec is None:
                raise KeyError(f"/{name} has no option {key!r}")
            if isinstance(value, dict):  # a user (6, 9), channel (7) or attachment (11)
                value = self._resolve(resolved, ospec["type"], value, guild_id)
            entry = {"name": key, "type": ospec["type"], "value": value}
            leaf["options"].append(entry | ({"focused": True} if key == focused else {}))
        if resolved:
            data["resolved"] = resolved
        return data

    def _resolve(self, resolved: dict, option_type: int, value: dict, guild_id) -> str:
        """Put an object option where Discord puts it (data.resolved); its id."""
        kind = {7: "channels", 11: "attachments"}.get(option_type, "users")
        if kind == "channels":  # Discord resolves the member's permissions in it
            value = {"permissions": ALL_PERMISSIONS, **value}
        resolved.setdefault(kind, {})[value["id"]] = value
        if kind == "users" and guild_id:
            member = {k: v for k, v in self._member(value, guild_id).items() if k != "user"}
            resolved.setdefault("members", {})[value["id"]] = member
        return value["id"]

    async def _component(self, user, message, data, timeout, wait=True) -> InteractionRecord:
        message = message.message if isinstance(message, InteractionRecord) else message
        return await self._interact(user, 3, data, message.get("guild_id"), message["channel_id"],
                                    message=message, timeout=timeout, wait=wait)

    async def click(self, user: dict, message: dict | InteractionRecord, custom_id: str,
                    timeout=5.0, wait=True) -> InteractionRecord:
        data = {"custom_id": custom_id, "component_type": 2}
        return await self._component(user, message, data, timeout, wait)

    async def malformed(self, user: dict, message: dict | InteractionRecord, itype: int = 3,
                        wait=True, **fields) -> InteractionRecord:
        """An interaction about `message` whose payload Discord's clients never send: the
        given top-level `fields` replace its own (None: left out), e.g. `data={"custom_id":
        12345}` or `data=None`."""
        message = message.message if isinstance(message, InteractionRecord) else message
        return await self._interact(user, itype, {}, message.get("guild_id"),
                                    message["channel_id"], message=message, wait=wait,
                                    fields=fields)

    async def select(self, user: dict, message: dict | InteractionRecord, custom_id: str,
                     values: list[str], timeout=5.0) -> InteractionRecord:
        data = {"custom_id": custom_id, "component_type": 3, "values": values}
        return await self._component(user, message, data, timeout)

    async def submit_modal(self, user: dict, custom_id: str, fields: dict[str, str | list],
                           timeout=5.0) -> InteractionRecord:
        """Submit a modal where the bot showed it; list values answer selects, str text inputs."""
        opener = self._modals.get(custom_id)
        where = opener.payload if opener else {}
        rows = [{"type": 1, "components": [
            {"type": 3, "custom_id": k, "values": v} if isinstance(v, list)
            else {"type": 4, "custom_id": k, "value": v}]} for k, v in fields.items()]
        return await self._interact(user, 5, {"custom_id": custom_id, "components": rows},
                                    where.get("guild_id"), where.get("channel_id"),
                                    message=where.get("message"), timeout=timeout)
