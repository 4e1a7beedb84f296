"""The offline Discord's world: the users, guilds, channels, messages and synced commands a bot
sees, as Discord-shaped dicts with string snowflake ids, and the limits Discord puts on
messages. No sockets here: bot/bench/offline_discord/server.py serves this state over REST and
bot/bench/offline_discord/gateway.py tells a connected bot about new guilds and channels.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime

DISCORD_EPOCH_MS = 1420070400000
ALL_PERMISSIONS = str((1 << 50) - 1)
ADMINISTRATOR, MANAGE_GUILD = 1 << 3, 1 << 5  # permission bits ("Manage Server" is MANAGE_GUILD)
EPHEMERAL, LOADING = 64, 128  # message flags


def _now() -> str:
    return datetime.now(UTC).isoformat()


class ApiError(Exception):
    """Answered on the REST API with Discord's status, message and error code."""

    def __init__(self, status: int, message: str, code: int = 0):
        super().__init__(message)
        self.status, self.json = status, {"message": message, "code": code}


class World:
    """Discord's state for one application. `to_bot(event, payload)` sends a gateway event
    when a bot is connected (and drops it otherwise)."""

    def __init__(self, *, bot_name: str, to_bot: Callable[[str, dict], None]):
        self._to_bot = to_bot
        self._ids = itertools.count()
        self.users: dict[str, dict] = {}
        self.guilds: dict[str, dict] = {}  # id -> {"guild":, "channels": [...], "members": [...]}
        self.channels: dict[str, dict] = {}
        self.messages: dict[str, dict] = {}
        self.files: dict[str, tuple[dict, bytes]] = {}  # attachment id -> (attachment, bytes)
        self.commands: dict[str | None, list[dict]] = {}  # None = global, else guild id
        self.bot_user = self.create_user(bot_name, bot=True)
        self.application_id = self.snowflake()
        self._owner = self.create_user("app-owner")

    bot_user_id = property(lambda self: self.bot_user["id"])
    files_base = ""  # where attachments are served (the server's own address)

    def attachment(self, channel_id: str, filename: str, data: bytes,
                   content_type: str | None = None) -> dict:
        """Store a file as Discord's CDN does: an attachment with its id, size and a URL
        the server answers (a bot reads a learner's upload from it)."""
        aid = self.snowflake()
        url = f"{self.files_base}/attachments/{channel_id}/{aid}/{filename}"
        attachment = {"id": aid, "filename": filename, "size": len(data), "url": url,
                      "proxy_url": url, "content_type": content_type,
                      "ephemeral": False}
        self.files[aid] = (attachment, data)
        return attachment

    def _attachments(self, channel_id: str, data: dict, kept: list[dict]) -> list[dict]:
        """The message's attachments after a send or edit: discord.py lists each file it
        uploads as {"id": <its index among the files>, "filename": ...} and each it keeps by
        its real id."""
        uploads = data.get("_uploads") or []
        out = []
        for entry in data.get("attachments") or []:
            known = self.files.get(str(entry.get("id")))
            if known is not None:
                out.append(known[0])
            elif str(entry.get("id", "")).isdigit() and int(entry["id"]) < len(uploads):
                name, body, content_type = uploads[int(entry["id"])]
                out.append(self.attachment(channel_id, entry.get("filename") or name, body,
                                           content_type))
        return out if "attachments" in data else kept

    def snowflake(self) -> str:
        return str(((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | next(self._ids) % 4096)

    @staticmethod
    def _get(table: dict, key: str | None, code: int) -> dict:
        if key not in table:
            raise ApiError(404, "Unknown object", code)
        return table[key]

    def create_user(self, name: str, *, bot: bool = False) -> dict:
        user = {"id": self.snowflake(), "username": name, "discriminator": "0", "global_name": name,
                "avatar": None, "bot": bot, "flags": 0, "public_flags": 0}
        self.users[user["id"]] = user
        return user

    def _member(self, user: dict, guild_id: str | None = None) -> dict:
        """A member object; with `guild_id`, the user's roles there and the permissions Discord
        resolves for them (as an interaction's member carries them)."""
        member = {"user": user, "roles": [], "nick": None, "joined_at": _now(), "deaf": False,
                  "mute": False, "flags": 0, "pending": False, "permissions": ALL_PERMISSIONS}
        if guild_id:
            stored = self.member(guild_id, user["id"])
            member.update(roles=stored["roles"] if stored else [],
                          permissions=str(self.permissions(guild_id, user["id"])))
        return member

    def member(self, guild_id: str, user_id: str) -> dict | None:
        return next((m for m in self.guilds[guild_id]["members"] if m["user"]["id"] == user_id),
                    None)

    def create_role(self, guild_id: str, name: str, permissions: int | str = 0) -> dict:
        """A role in the guild (the bot gets GUILD_ROLE_CREATE); `permissions`: the bitfield."""
        roles = self.guilds[guild_id]["guild"]["roles"]
        role = {**roles[0], "id": self.snowflake(), "name": name,
                "permissions": str(int(permissions)), "position": len(roles)}
        roles.append(role)
        self._to_bot("GUILD_ROLE_CREATE", {"guild_id": guild_id, "role": role})
        return role

    def add_member(self, guild_id: str, user: dict, *, roles=(),
                   permissions: int | str | None = None) -> dict:
        """Put `user` in the guild with `roles` (role dicts); `permissions` (e.g.
        MANAGE_GUILD) gives them one more role of their own with that bitfield. Discord
        sends the bot GUILD_MEMBER_ADD only with the privileged members intent: not sent."""
        if permissions is not None:
            roles = [*roles, self.create_role(guild_id, f"{user['username']}'s role", permissions)]
        member = self.member(guild_id, user["id"])
        if member is None:
            member = self._member(user)
            self.guilds[guild_id]["members"].append(member)
            self.guilds[guild_id]["guild"]["member_count"] += 1
        member["roles"] = list(dict.fromkeys([*member["roles"], *(r["id"] for r in roles)]))
        return member

    def permissions(self, guild_id: str, user_id: str) -> int:
        """The user's guild-wide permissions as Discord computes them: the owner has all;
        else @everyone's and their roles' bits, all of them if one is ADMINISTRATOR."""
        guild = self.guilds[guild_id]["guild"]
        everything = int(ALL_PERMISSIONS)
        if guild["owner_id"] == user_id:
            return everything
        member = self.member(guild_id, user_id)
        held = set(member["roles"]) if member else set()
        bits = 0
        for role in guild["roles"]:
            if role["id"] == guild_id or role["id"] in held:  # @everyone's id is the guild's
                bits |= int(role["permissions"])
        return everything if bits & ADMINISTRATOR else bits

    def user_guilds(self, user_id: str) -> list[dict]:
        """GET /users/@me/guilds: the partial guilds the user is a member of."""
        return [{"id": gid, "name": g["guild"]["name"], "icon": g["guild"]["icon"],
                 "owner": g["guild"]["owner_id"] == user_id,
                 "permissions": str(self.permissions(gid, user_id)),
                 "features": list(g["guild"]["features"])}
                for gid, g in sorted(self.guilds.items(), key=lambda kv: int(kv[0]))
                if g["guild"]["owner_id"] == user_id or self.member(gid, user_id)]

    def create_guild(self, name="Test Guild", members=(), channel_name="general", *,
                     everyone_permissions: int | str = ALL_PERMISSIONS,
                     owner: dict | None = None) -> dict:
        """A guild with one text channel; the bot gets GUILD_CREATE now (or after READY).
        @everyone has `everyone_permissions` (all, unless told: every member may do anything);
        `owner` (a user, a member too) has all, whatever the roles."""
        gid = self.snowflake()
        members = (*members, owner) if owner and owner not in members else members
        everyone = {"id": gid, "name": "@everyone", "permissions": str(int(everyone_permissions)),
                    "position": 0, "color": 0, "hoist": False, "managed": False,
                    "mentionable": False, "flags": 0}
        guild = {"id": gid, "name": name, "icon": None, "owner_id": (owner or self._owner)["id"],
                 "roles": [everyone], "emojis": [], "stickers": [], "features": [], "threads": [],
                 "member_count": 1 + len(members), "large": False, "stage_instances": [],
                 "guild_scheduled_events": [], "soundboard_sounds": [], "voice_states": [],
                 "presences": [], "preferred_locale": "en-US", "joined_at": _now()}
        self.guilds[gid] = {"guild": guild, "channels": [],
                            "members": [self._member(u) for u in (self.bot_user, *members)]}
        if channel_name:
            self.create_channel(gid, channel_name, _announce=False)
        self._to_bot("GUILD_CREATE", self.guild_payload(gid))
        return guild

    def create_channel(self, guild_id: str, name="general", *, _announce=True) -> dict:
        ch = {"id": self.snowflake(), "type": 0, "guild_id": guild_id, "name": name,
              "position": len(self.guilds[guild_id]["channels"]), "permission_overwrites": [],
              "nsfw": False, "topic": None, "last_message_id": None, "parent_id": None}
        self.guilds[guild_id]["channels"].append(ch)
        self.channels[ch["id"]] = ch
        if _announce:
            self._to_bot("CHANNEL_CREATE", ch)
        return ch

    def guild_payload(self, gid: str) -> dict:
        g = self.guilds[gid]
        return {**g["guild"], "channels": g["channels"], "members": g["members"]}

    def dm_channel(self, user: dict) -> dict:
        """The bot's DM channel with `user`, made on first use (like POST /users/@me/channels)."""
        for ch in self.channels.values():
            if ch["type"] == 1 and ch["recipients"][0]["id"] == user["id"]:
                return ch
        ch = {"id": self.snowflake(), "type": 1, "recipients": [user], "last_message_id": None}
        self.channels[ch["id"]] = ch
        return ch

    def channel_messages(self, channel_id: str) -> list[dict]:
        return [m for m in self.messages.values() if m["channel_id"] == channel_id]

    @staticmethod
    def _check_message(data: dict) -> None:
        if len(data.get("content") or "") > 2000 or len(data.get("embeds") or []) > 10:
            raise ApiError(400, "Invalid Form Body (content > 2000 chars or > 10 embeds)", 50035)

    def _new_message(self, channel_id: str, data: dict, rec=None, mtype=0) -> dict:
        self._check_message(data)
        msg = {"id": self.snowflake(), "channel_id": channel_id, "author": self.bot_user,
               "content": data.get("content") or "", "embeds": data.get("embeds") or [],
               "components": data.get("components") or [],
               "attachments": self._attachments(channel_id, data, []), "mentions": [],
               "mention_roles": [], "pinned": False, "mention_everyone": False, "tts": False,
               "timestamp": _now(), "edited_timestamp": None, "flags": data.get("flags") or 0,
               "type": mtype}
        if guild_id := self.channels.get(channel_id, {}).get("guild_id"):
            msg["guild_id"] = guild_id
        if rec is not None:  # sent through an interaction (webhook) rather than the channel
            user = rec.payload["member"]["user"] if "member" in rec.payload else rec.payload["user"]
            msg.update(webhook_id=self.application_id, application_id=self.application_id,
                       interaction_metadata={"id": rec.id, "type": rec.type, "user": user})
        self.messages[msg["id"]] = msg
        return msg

    def _edit_message(self, msg: dict, data: dict) -> dict:
        self._check_message(data)
        for key in ("content", "embeds", "components", "poll"):
            if key in data:
                msg[key] = data[key] if data[key] is not None else ("" if key == "content" else [])
        msg["attachments"] = self._attachments(msg["channel_id"], data, msg["attachments"])
        flags = data.get("flags", msg["flags"]) or 0
        msg["flags"] = (flags | (msg["flags"] & EPHEMERAL)) & ~LOADING  # ephemeral is sticky
        msg["edited_timestamp"] = _now()
        return msg
