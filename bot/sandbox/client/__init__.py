"""The bot's side of the sandbox: runs in the bot's process, starts or reaches a sandbox
service (`client`, on this machine) or a fleet of them behind Redis (`fleet`), and never
imports torch or runs learner code."""
