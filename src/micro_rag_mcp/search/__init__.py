"""Backend-neutral search: fusion of the channels, scopes, reading passages back."""
