"""What tests share: paths, the fake clock, records, Discord helpers and the offline
Discord. Tests import from here, never from another test module."""
