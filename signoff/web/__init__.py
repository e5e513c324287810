"""The web layer: the ASGI app and everything it serves besides GraphQL itself (the
console's pages and sign-in, approval-link pages, the Slack app's endpoint), with the
middleware only HTTP needs (persisted queries, rate limits, request bodies), and
``signoff serve`` under uvicorn."""
