"""The admin API (`/v1/admin/`): API keys made, changed, topped up and revoked while the service runs, and the
audit trail of those changes. Only the admin keys (`STT_ADMIN_KEYS`) may call it."""
