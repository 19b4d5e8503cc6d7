"""Remote channels: where a person who is not at the terminal answers approvals (Telegram, webhooks)."""
