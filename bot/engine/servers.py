"""A server's settings, chosen by its admins: checked where they enter."""

from __future__ import annotations

from bot.engine.errors import TutorError
from bot.engine.tutor import Tutor
from scheduler.choice import Choice, SchedulerName, ServerChoice, resolve
from scheduler.storage.models import GuildSettings
from scheduler.storage.store import Store
from scheduler.studyday import resolve_zone

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class BadServerSetting(TutorError):
    pass


class Servers:
    def __init__(self, tutor: Tutor, store: Store):
        self.tutor, self.store = tutor, store

    def settings(self, guild_id: int) -> GuildSettings:
        return self.store.servers.settings(guild_id)

    def set_public_play(self, guild_id: int, enabled: bool) -> None:
        self.store.servers.update_settings(guild_id, public_play=bool(enabled))

    def set_board_public(self, guild_id: int, public: bool) -> None:
        """Whether the server's leaderboards are on a public web page."""
        if not isinstance(public, bool):
            raise BadServerSetting("The leaderboard page is public or not.")
        self.store.servers.update_settings(guild_id, board_public=public)

    def known(self, guild_ids) -> set[int]:
        """Of these servers, the ones the bot was used in or set up for."""
        return self.store.servers.known(guild_ids)

    def set_scheduler(self, guild_id: int, scheduler: str | None) -> None:
        """The scheduler for this server's learners who chose none (None: the default)."""
        name = SchedulerName.parse(scheduler)
        if scheduler is not None and name is None:
            raise BadServerSetting("The scheduler is one of: " + ", ".join(SchedulerName) + ".")
        self.store.servers.update_settings(guild_id, scheduler=name)

    def set_remediation(self, guild_id: int, enabled: bool) -> None:
        if not isinstance(enabled, bool):
            raise BadServerSetting("Remediation is on or off.")
        self.store.servers.update_settings(guild_id, remediation=enabled)

    def set_reminder_channel(self, guild_id: int, channel_id: int | None) -> None:
        self.store.servers.update_settings(guild_id, reminder_channel_id=channel_id)

    def new_season(self, guild_id: int) -> int:
        """Start the next leaderboard season (history is kept); its number."""
        season = self.settings(guild_id).season + 1
        self.store.servers.update_settings(guild_id, season=season,
                                           season_started_at=self.tutor.clock())
        return season

    def set_board(self, guild_id: int, timezone: str | None = None,
                  week_start: int | None = None) -> GuildSettings:
        changes: dict = {}
        if timezone is not None:
            try:
                changes["timezone"] = resolve_zone(timezone).key
            except ValueError:
                raise BadServerSetting(f"'{timezone}' is not a timezone I know.") from None
        if week_start is not None:
            if isinstance(week_start, bool) or week_start not in range(len(WEEKDAYS)):
                raise BadServerSetting("The week starts on one of: " + ", ".join(WEEKDAYS)
                                       + ".")
            changes["week_start"] = week_start
        return self.store.servers.update_settings(guild_id, **changes)

    def default_choice(self, guild_id: int) -> Choice:
        """What schedules this server's learners who chose no scheduler themselves."""
        settings = self.store.servers.settings(guild_id)
        return resolve(None, ServerChoice(settings.scheduler, settings.remediation,
                                           settings.fsrs_version))
