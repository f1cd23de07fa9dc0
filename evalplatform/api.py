"""Project-wide REST endpoints."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalplatform.roles import user_roles


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    email = serializers.EmailField(allow_blank=True)
    is_staff = serializers.BooleanField()
    roles = serializers.ListField(child=serializers.CharField())


@extend_schema(responses=MeSerializer, summary="The signed-in user and their platform roles")
@api_view(["GET"])
def me(request: Request) -> Response:
    user = request.user
    data = {
        "username": user.get_username(),
        "email": getattr(user, "email", ""),
        "is_staff": user.is_staff,
        "roles": sorted(role.value for role in user_roles(user)),
    }
    return Response(MeSerializer(data).data)
