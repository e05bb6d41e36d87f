"""Identity tasks (default queue): thin wrappers around identity.audit_stream."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="identity.tasks.flush_audit_streams", ignore_result=True)
def flush_audit_streams() -> None:
    """Beat, every few seconds: one delivery task per enabled stream (a stream a worker holds is skipped)."""
    from identity import audit_stream

    for stream_id in audit_stream.stream_ids():
        deliver_audit_stream.delay(stream_id)


@shared_task(name="identity.tasks.deliver_audit_stream", ignore_result=True)
def deliver_audit_stream(stream_id: int) -> int:
    from identity import audit_stream

    return audit_stream.drain(stream_id)
