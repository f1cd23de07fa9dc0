"""`sqlrows.instance` builds the same instances as the ORM's `from_db`, with or without `__init__`."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Model, signals
from rest_framework.authtoken.models import Token

from annotations.models import Assignment, Document, Project, ProjectMembership, Task, Topic
from evalplatform import sqlrows

pytestmark = pytest.mark.django_db

HOT = (Token, User, ProjectMembership, Project, Assignment, Task, Topic, Document)


def _fields(obj: Model) -> dict[str, object]:
    return {field.attname: getattr(obj, field.attname) for field in type(obj)._meta.concrete_fields}


@pytest.mark.parametrize("model", HOT, ids=lambda model: model.__name__)
def test_the_hot_path_models_are_built_without_init(model: type[Model]) -> None:
    assert sqlrows._plain_init(model)


def test_same_instances_as_from_db_and_usable(django_user_model: type[User]) -> None:
    user = django_user_model.objects.create_user("u", password="x", email="u@example.org")
    token = Token.objects.create(user=user)
    shape = sqlrows.columns(User, "u")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {shape.select} FROM auth_user u WHERE u.id = %s", [user.pk])
        row = cursor.fetchone()
    built = sqlrows.instance(shape, row)
    orm = User.objects.get(pk=user.pk)
    assert type(built) is User and _fields(built) == _fields(orm)
    assert built._state.adding is False and built._state.db == orm._state.db == "default"
    assert built.pk == user.pk and built.check_password("x") and built.get_session_auth_hash()
    built.first_name = "Ann"
    built.save(update_fields=["first_name"])  # an update, not an insert
    assert User.objects.get(pk=user.pk).first_name == "Ann" and User.objects.count() == 1
    tshape = sqlrows.columns(Token, "t")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {tshape.select} FROM authtoken_token t WHERE t.key = %s", [token.key])
        built_token = sqlrows.instance(tshape, cursor.fetchone())
    assert built_token.user_id == user.pk and built_token.user == orm  # the foreign key reads its row


def test_a_model_with_an_init_receiver_goes_through_init(django_user_model: type[User]) -> None:
    user = django_user_model.objects.create_user("v", password="x")
    seen: list[int] = []

    def receiver(sender: type[Model], instance: Model, **kwargs: object) -> None:
        seen.append(instance.pk)

    signals.post_init.connect(receiver, sender=User)
    sqlrows._plain_init.cache_clear()
    try:
        assert not sqlrows._plain_init(User)
        shape = sqlrows.columns(User, "u")
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {shape.select} FROM auth_user u WHERE u.id = %s", [user.pk])
            sqlrows.instance(shape, cursor.fetchone())
        assert seen == [user.pk]
    finally:
        signals.post_init.disconnect(receiver, sender=User)
        sqlrows._plain_init.cache_clear()
