"""What tests share: paths, the fake clock, records, Discord helpers, the offline Discord
and the torch training loop behind the deck claims. Tests import from here, never from
another test module."""
