"""GraphQL types of targets, delivery and incidents."""
