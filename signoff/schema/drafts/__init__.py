"""GraphQL types of drafts."""
