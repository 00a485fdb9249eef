"""What a request of `pgkgrag serve` must get before its work runs, all in this process: a place
within its key's and its tenant's rates (the `limits` library's moving window), among its tenant's
requests and answers in progress, and its turn to embed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pgkgrag.extras import missing
from pgkgrag.serve.callers import Limits
from pgkgrag.serve.errors import too_many

try:
    from limits import RateLimitItem, parse
    from limits.storage import MemoryStorage
    from limits.strategies import MovingWindowRateLimiter
except ImportError as exc:
    raise missing("server") from exc


class Admission:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._rates = MovingWindowRateLimiter(MemoryStorage())
        self._key_rate: RateLimitItem = parse(limits.key_rate)
        self._tenant_rate: RateLimitItem = parse(limits.tenant_rate)
        self._in_progress: dict[str, int] = {}  # by "tenant T" or "key ID": requests whose work runs
        self._answering: dict[str, threading.BoundedSemaphore] = {}
        self._turns: dict[str, threading.Lock] = {}  # by "tenant T" or "key ID": its turn to embed
        self._lock = threading.Lock()  # for the dicts above

    def key_request(self, ident: str) -> None:
        """One more request of the key of id ident (429 past --key-rate)."""
        self._hit(self._key_rate, "key", ident, f"this key made more than {self.limits.key_rate} requests")

    def tenant_request(self, tenant: str) -> None:
        """One more request for the tenant (429 past --tenant-rate)."""
        self._hit(
            self._tenant_rate, "tenant", tenant, f"tenant {tenant} made more than {self.limits.tenant_rate} requests"
        )

    def _hit(self, rate: RateLimitItem, kind: str, ident: str, message: str) -> None:
        if not self._rates.hit(rate, kind, ident):
            # Retry-After: the seconds until the window lets one more request in
            wait = self._rates.get_window_stats(rate, kind, ident).reset_time - time.time()
            raise too_many(message, "rate_limit_exceeded", wait)

    def begin(self, who: str) -> None:
        """One more request of who in progress (429 when they are as many as allowed)."""
        with self._lock:
            if self._in_progress.get(who, 0) >= self.limits.in_progress_per_tenant:
                raise too_many(
                    f"{who} has {self.limits.in_progress_per_tenant} requests in progress already",
                    "too_many_in_progress",
                    1,
                )
            self._in_progress[who] = self._in_progress.get(who, 0) + 1

    def end(self, who: str) -> None:
        with self._lock:
            self._in_progress[who] -= 1
            if not self._in_progress[who]:
                del self._in_progress[who]

    def turn(self, who: str) -> threading.Lock:
        """The requester's turn to embed: a tenant (or a key) has one embedding waiting for a model
        at a time, and a model serves its callers in the order they came (pgkgrag.serve.pool), so a
        tenant's flood keeps another tenant's question waiting for one of its embeddings at most."""
        with self._lock:
            return self._turns.setdefault(who, threading.Lock())

    @contextmanager
    def answering(self, tenant: str) -> Iterator[None]:
        """A slot among the tenant's answers in progress (429 when none is free)."""
        with self._lock:
            slots = self._answering.setdefault(tenant, threading.BoundedSemaphore(self.limits.answers_per_tenant))
        if not slots.acquire(blocking=False):
            raise too_many(
                f"tenant {tenant} has {self.limits.answers_per_tenant} answers in progress already",
                "too_many_in_progress",
                1,
            )
        try:
            yield
        finally:
            slots.release()
