"""GraphQL types of actors and the audit log."""
