"""What tests share: paths, the fake clock, records, the `tutor` command runner, a community
deck, Discord helpers, the offline Discord, the sandbox probes, the reference training loop
and the torch training loop behind the deck claims. Tests import from here, never from
another test module or a conftest."""
