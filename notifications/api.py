"""REST: my notifications in the current organization, and marking them read."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agenticos.api import ERRORS, WRITE_ERRORS
from agenticos.api_base import OrgAPIView
from notifications import services
from notifications.models import Notification


class NotificationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Notification
        fields = ["id", "kind", "text", "link", "created_at", "read_at"]


class UnreadSerializer(serializers.Serializer):
    unread = serializers.IntegerField()


class NotificationListView(OrgAPIView):
    serializer_class = NotificationSerializer

    @extend_schema(parameters=[OpenApiParameter("unread", bool, description="Only the unread ones")],
                   responses={200: NotificationSerializer(many=True), **ERRORS},
                   summary="My notifications in this organization, newest first")
    def get(self, request: Request) -> Response:
        qs = services.mine(self.actor)
        if request.query_params.get("unread") in ("1", "true", "yes"):
            qs = qs.filter(read_at__isnull=True)
        page = self.paginate_queryset(qs.order_by("-created_at"))
        return self.get_paginated_response(NotificationSerializer(page, many=True).data)


class NotificationReadView(OrgAPIView):
    serializer_class = NotificationSerializer

    @extend_schema(request=None, responses={200: NotificationSerializer, **WRITE_ERRORS},
                   summary="Mark one of my notifications read")
    def post(self, request: Request, notification_id) -> Response:
        found = services.mark_read(actor=self.actor, notification_id=notification_id)
        return Response(NotificationSerializer(found).data)


class NotificationReadAllView(OrgAPIView):
    serializer_class = UnreadSerializer

    @extend_schema(request=None, responses={200: UnreadSerializer, **WRITE_ERRORS},
                   operation_id="v1_notifications_read_all_create",
                   summary="Mark all my notifications in this organization read")
    def post(self, request: Request) -> Response:
        services.mark_all_read(actor=self.actor)
        return Response({"unread": 0})
