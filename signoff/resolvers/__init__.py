"""The operations: plain async functions over a session and a viewer.

Every business rule lives here, so the GraphQL schema, the CLI, jobs and tests all
call the same functions. Mutating functions commit their own unit of work.
"""
