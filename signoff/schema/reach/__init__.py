"""GraphQL types of deadlines, delegation, notifications and approval links."""
