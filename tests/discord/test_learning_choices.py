"""FSRS and remediation through the real discord.py client: /server-settings learning,
/settings' scheduler, a remedy served by /review, and /stats' misconceptions."""

from __future__ import annotations

from datetime import timedelta

import discord
import pytest

from bot.engine.fits import ServerFits
from scheduler.server_fit import fit_server
from tests.helpers.discord import card_id_of, forged_slash, learner_of, pick_and_submit
from tests.helpers.server_logs import FAST_FORGETTERS, fsrs_world, seed_server_log

pytestmark = pytest.mark.postgres

BACKWARD = "gradient-accumulation/backward"
SCALE = "gradient-accumulation/scale-loss"  # tests step_instead_of_backward as well
RIGHT = {BACKWARD: {"method": "backward"},
         SCALE: {"divisor": "accumulation_steps", "method": "backward"}}


def admin_of(guild, simcord_env):
    admins = guild.create_role("Admins", permissions=discord.Permissions(manage_guild=True))
    return guild.add_member(simcord_env.create_user("root"), roles=[admins])


async def test_admins_choose_fsrs_and_a_learner_overrides_it(world, simcord_env, store,
                                                             bot_tutor):
    guild, channel, ann, _ = world
    admin = admin_of(guild, simcord_env)
    result = await admin.slash(channel, "server-settings learning", scheduler="fsrs",
                               remediation=True)
    assert result.ephemeral and result.response.content.startswith(
        "Learners here are scheduled by **FSRS** unless they chose otherwise in /settings; "
        "remediation of mistakes is **on**.\n\n**FSRS parameters** (for learners on FSRS)\n"
        "In force: FSRS's default parameters.\nNo fit yet: needs 2,000 reviews")
    card = (await ann.slash(channel, "learn")).response
    done = await pick_and_submit(ann, card, {"method": "zero_grad"})
    learner = learner_of(store, ann)
    (log,) = store.reviews.on_day(learner.id, bot_tutor.today(learner))
    state = store.reviews.state(learner.id, log.card_id)
    assert (log.scheduler, log.due_day_after) == ("fsrs", state.fsrs_due_day)
    days = (state.fsrs_due_day - bot_tutor.today(learner)).days
    assert f"Next review of this card: **in {days} days (" in (
        done.response.embeds[1].description)

    shown = await ann.slash(channel, "settings")
    assert ("Scheduler: **FSRS** (this server's choice); remediation of mistakes **on**"
            in shown.response.content)
    mine = await ann.slash(channel, "settings", scheduler="sm2")
    assert "Scheduler: **SM-2** (your choice)" in mine.response.content
    stats = await ann.slash(channel, "stats")
    fields = {f.name: f.value for f in stats.response.embeds[0].fields}
    assert fields["Next review"] == "tomorrow"  # SM-2's day for the same history
    back = await ann.slash(channel, "settings", scheduler="server")
    assert "Scheduler: **FSRS** (this server's choice)" in back.response.content
    assert learner_of(store, ann).scheduler is None
    # Nothing of the history moved with the switches.
    assert store.reviews.state(learner.id, log.card_id) == state
    default = await admin.slash(channel, "server-settings learning", scheduler="default")
    assert "scheduled by **SM-2**" in default.response.content


async def test_admins_see_a_fit_and_apply_or_revert_it(world, simcord_env, store, clock):
    guild, channel, _, _ = world
    admin = admin_of(guild, simcord_env)
    seed_server_log(store, guild.id, fsrs_world(10, 32, 1, FAST_FORGETTERS),
                    clock().date() - timedelta(days=32))
    fit = ServerFits(store, clock, fitter=fit_server).fit(guild.id, "test", apply=False).fit
    shown = (await admin.slash(channel, "server-settings learning")).response.content
    assert f"Newest: fit #{fit.version}, " in shown and "passed, not applied." in shown
    assert "Better than defaults by +0.0" in shown and "Reviews a day over the next 30" in shown
    assert len(shown) < 1_000  # a phone screen, not a report
    applied = (await admin.slash(channel, "server-settings learning",
                                 parameters="apply")).response.content
    assert f"In force: fit #{fit.version} (" in applied
    assert store.fits.in_force(guild.id) == fit.version
    again = await admin.slash(channel, "server-settings learning", parameters="apply")
    assert "cannot be applied" in again.response.content
    reverted = (await admin.slash(channel, "server-settings learning",
                                  parameters="revert")).response.content
    assert "In force: FSRS's default parameters." in reverted and "reverted." in reverted
    assert store.fits.in_force(guild.id) == 0
    bad = await forged_slash(admin, channel, "server-settings learning", parameters="refit")
    assert bad.response.content == "Parameters are applied or reverted."


async def test_an_unknown_scheduler_is_refused(world, simcord_env, store):
    # discord.py checks a choice only in Discord's client: a forged interaction reaches us.
    _, channel, ann, _ = world
    bad = await forged_slash(ann, channel, "settings", scheduler="leitner")
    assert "The scheduler is one of: sm2, fsrs" in bad.response.content
    assert learner_of(store, ann).scheduler is None
    admin = admin_of(world[0], simcord_env)
    bad = await forged_slash(admin, channel, "server-settings learning", scheduler="anki")
    assert bad.response.content == "The scheduler is one of: sm2, fsrs."
    assert store.servers.settings(world[0].id).scheduler is None


async def test_a_wrong_answer_brings_a_remedy_and_stats_show_the_misconception(
        world, simcord_env, store, bot_tutor, clock):
    guild, channel, ann, _ = world
    admin = admin_of(guild, simcord_env)
    await admin.slash(channel, "server-settings learning", remediation=True)
    learner = learner_of(store, ann)
    # Day 0 both cards met; day 1 scale-loss passes (due in 6 days), backward needs the hint.
    for card_id in (BACKWARD, SCALE):
        served = bot_tutor.next_card(learner, only=card_id, guild_id=guild.id)
        bot_tutor.answer(served, RIGHT[card_id])
    clock.advance(days=1)
    bot_tutor.answer(bot_tutor.next_card(learner, only=SCALE, guild_id=guild.id), RIGHT[SCALE])
    served, _ = bot_tutor.hint(bot_tutor.next_card(learner, only=BACKWARD, guild_id=guild.id))
    bot_tutor.answer(served, RIGHT[BACKWARD])
    clock.advance(days=1)

    card = (await ann.slash(channel, "review")).response  # backward is due
    wrong = await pick_and_submit(ann, card, {"method": "step"})
    await pick_and_submit(ann, wrong.response, {"method": "backward"})
    stats = await ann.slash(channel, "stats")
    fields = {f.name: f.value for f in stats.response.embeds[0].fields}
    assert fields["Your mistakes"].startswith("🔴 **step() where backward() belongs**: "
                                               "chosen 1×, last <t:")

    clock.advance(days=1)  # backward's own review first, then the remedy
    card = (await ann.slash(channel, "review")).response
    assert card.embeds[0].title.startswith("Review")
    done = await pick_and_submit(ann, card, RIGHT[BACKWARD])
    remedy = await ann.click(done.response, label="Next card")
    assert remedy.response.embeds[0].title.startswith("On a recent mistake")
    assert card_id_of(store, remedy.response) == SCALE
    await pick_and_submit(ann, remedy.response, RIGHT[SCALE])
    stats = await ann.slash(channel, "stats")
    fields = {f.name: f.value for f in stats.response.embeds[0].fields}
    assert fields["Your mistakes"].startswith("✅ step() where backward() belongs: "
                                               "corrected <t:")
    assert store.reviews.state(learner.id, SCALE).remedy_day is None
    assert learner_of(store, ann).scheduler is None  # the server chose; she did not
