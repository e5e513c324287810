"""Who is asking and what they may do: viewers, actors and tokens."""
