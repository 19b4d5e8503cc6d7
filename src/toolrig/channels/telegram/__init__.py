"""The Telegram channel: people talk to the gateway's agents from a Telegram chat (docs/gateway.md)."""
