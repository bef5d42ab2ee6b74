"""Facets (DESIGN.md, "Facets"): what a family adds to the shared model, through every stage.

One module per facet: sources and subscriptions (Herding), input streams and the load model (ROD),
the network and its measured links (SPRAWL).
"""
