"""Shapes of the kernel API. Output serializers never carry a secret value or a key hash."""

from __future__ import annotations

from rest_framework import serializers

from agenticos.models import ApiKey, Invitation, Membership, Organization, Secret, SecretKind, User
from agenticos.permissions import KeyScope, Role, permissions_of

# A user id taken as input is bounded to its column (BigAutoField, DEFAULT_AUTO_FIELD), so an overflow is a 400
# naming the field (and the schema says so), never a DataError. Every app's grant and share serializers use it.
ID_MAX = 2**63 - 1

class UserSerializer(serializers.ModelSerializer):
    class Meta:
        model = User
        fields = ["id", "email", "display_name"]


class OrganizationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Organization
        fields = ["id", "name", "slug", "monthly_budget_usd", "created_at"]


class MyOrganizationSerializer(serializers.Serializer):
    organization = OrganizationSerializer()
    role = serializers.CharField()
    permissions = serializers.SerializerMethodField()

    def get_permissions(self, obj: Membership) -> list[str]:
        return sorted(permissions_of(obj.role))


class MeSerializer(serializers.Serializer):
    user = UserSerializer()
    organizations = MyOrganizationSerializer(many=True)


class OrganizationCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    slug = serializers.SlugField(max_length=80, required=False)


class MemberSerializer(serializers.ModelSerializer):
    user = UserSerializer(read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "user", "role", "is_suspended", "created_at"]


ROLE_HELP = f"A built-in role ({', '.join(Role.values)}) or a custom role's key (custom:<id>, GET /roles)."


class MemberUpdateSerializer(serializers.Serializer):
    role = serializers.CharField(max_length=40, required=False, help_text=ROLE_HELP)
    is_suspended = serializers.BooleanField(required=False)


class InvitationSerializer(serializers.ModelSerializer):
    invited_by = serializers.EmailField(source="invited_by.email", read_only=True, default=None)

    class Meta:
        model = Invitation
        fields = ["id", "email", "role", "invited_by", "created_at", "accepted_at"]


class InviteSerializer(serializers.Serializer):
    email = serializers.EmailField()
    role = serializers.CharField(max_length=40, default=Role.MEMBER, help_text=ROLE_HELP)


class AcceptInvitationSerializer(serializers.Serializer):
    token = serializers.CharField()


class ApiKeySerializer(serializers.ModelSerializer):
    user = serializers.EmailField(source="user.email", read_only=True)
    is_active = serializers.BooleanField(read_only=True)

    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "user", "scope", "is_active", "created_at", "expires_at", "last_used_at",
                  "revoked_at"]


class ApiKeyCreatedSerializer(ApiKeySerializer):
    key = serializers.SerializerMethodField(help_text="The raw key. Shown once; store it now.")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]

    def get_key(self, obj) -> str:
        return self.context["raw_key"]


class ApiKeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    scope = serializers.ChoiceField(choices=KeyScope.choices, default=KeyScope.ADMIN,
                                    help_text="read: reads only; run: reads and runs agents; admin: all the role allows.")
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None,
                                           help_text="After this moment the key is refused (401). Empty: never.")


class SecretSerializer(serializers.ModelSerializer):
    hint = serializers.CharField(read_only=True, help_text="At most the last 4 characters; empty for short values.")

    class Meta:
        model = Secret
        fields = ["id", "name", "kind", "description", "hint", "created_at", "rotated_at"]


class SecretCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=120)
    value = serializers.CharField(write_only=True, trim_whitespace=False, style={"input_type": "password"})
    kind = serializers.ChoiceField(choices=SecretKind.choices, default=SecretKind.API_KEY)
    description = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")


class SecretRotateSerializer(serializers.Serializer):
    value = serializers.CharField(write_only=True, trim_whitespace=False, style={"input_type": "password"})


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.JSONField()


class ErrorSerializer(serializers.Serializer):
    """The error envelope every endpoint uses."""

    error = ErrorDetailSerializer()
