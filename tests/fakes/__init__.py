"""Local fake servers that speak the outside world's real protocols (HTTP on 127.0.0.1, ephemeral ports)."""
