"""SPRAWL (Mei 2015): operator placement on a wide-area network by a DP on query trees."""
