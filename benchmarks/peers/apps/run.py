"""``python -m apps.run PEER setup`` or ``python -m apps.run PEER enqueue N``, inside the
peer's virtualenv; ``enqueue`` prints ``ENQUEUE_SECONDS s`` for the orchestrator."""

from __future__ import annotations

import importlib
import sys

if __name__ == "__main__":
    peer = importlib.import_module(f"apps.{sys.argv[1]}")
    if sys.argv[2] == "setup":
        peer.setup()
    else:
        print(f"ENQUEUE_SECONDS {peer.enqueue(int(sys.argv[3])):.6f}")
