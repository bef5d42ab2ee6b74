"""Geohash (Niemeyer's base-32 interleaved latitude/longitude code), for Job 1's GeoHash operator.

A dozen lines, so no dependency: bits alternate longitude, latitude, starting with longitude;
every 5 bits become one character of the base-32 alphabet without a, i, l, o.
"""

from __future__ import annotations

import math

__all__ = ["encode"]

_BASE32 = "0123456789bcdefghjkmnpqrstuvwxyz"


def encode(lat: float, lon: float, precision: int = 5) -> str:
    """The geohash of (lat, lon) with `precision` characters (5 = cells of about 5 km)."""
    if not (math.isfinite(lat) and math.isfinite(lon)) or abs(lat) > 90 or abs(lon) > 180:
        raise ValueError(f"not a coordinate: lat={lat!r}, lon={lon!r}")
    if precision < 1:
        raise ValueError(f"precision must be >= 1, got {precision}")
    lat_lo, lat_hi, lon_lo, lon_hi = -90.0, 90.0, -180.0, 180.0
    chars: list[str] = []
    bits, value, even = 0, 0, True
    while len(chars) < precision:
        if even:
            mid = (lon_lo + lon_hi) / 2
            bit = lon >= mid
            lon_lo, lon_hi = (mid, lon_hi) if bit else (lon_lo, mid)
        else:
            mid = (lat_lo + lat_hi) / 2
            bit = lat >= mid
            lat_lo, lat_hi = (mid, lat_hi) if bit else (lat_lo, mid)
        value = (value << 1) | int(bit)
        even = not even
        bits += 1
        if bits == 5:
            chars.append(_BASE32[value])
            bits, value = 0, 0
    return "".join(chars)
