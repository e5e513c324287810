"""GraphQL types of proposals and their review."""
