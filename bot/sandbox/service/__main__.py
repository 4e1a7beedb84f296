"""`python -m bot.sandbox.service`: the sandbox service (bot.sandbox.service)."""

from bot.sandbox.service.service import main

if __name__ == "__main__":
    main()
