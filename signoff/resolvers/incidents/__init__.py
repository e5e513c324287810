"""Dead letters and incidents, and what operators watch."""
