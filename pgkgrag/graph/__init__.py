"""The graph a tenant has: its totals and staleness, an entity's card, the neighbourhood picture, the build."""
