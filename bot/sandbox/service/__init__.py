"""The sandbox service's process (`python -m bot.sandbox.service`) and those it starts for
judging (`checker_process`): admits submissions, hands each to a jailed child from the
zygote and decides the verdict. It never imports the bot's client (bot.sandbox.client)."""
