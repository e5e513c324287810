"""How a GraphQL request is served: HTTP refusals, limits, validation, execution,
metrics and logs."""
