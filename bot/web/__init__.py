"""The web companion: a third front end on the engine's face (bot.engine), beside Discord
and the terminal. Log in with Discord (OAuth2) or, without OAuth settings, the terminal's
learner on loopback; my progress, a server's leaderboards, and its decks for its admins.
`bot.app.serve_web` builds it; `tutor web` runs it."""
