"""`annotations_answer_claim` (migration 0017) with the check of a kept sign-in (`annotations.kept_sign_ins`):
four more parameters, the key of the session or API token a request of this process verified, the
session's data and the user's password then (both NULL for a token), and the project row's version
(`xmin`) its settings were read from. Where the key is given, the function first checks that the user is
still active and an annotator of the project, that the project row is that version, and that the session
row is still that one (same data, unexpired at the answer's time, naming the user, whose password is
unchanged) or the token still the user's; otherwise it writes nothing and returns `unverified` (and the
request signs in afresh). With no key (NULL) it is 0017's function. The rest of the function is 0017's
text, unchanged: it is read from that migration and the check put in front of the answer."""

from importlib import import_module

from django.db import migrations

_0017 = import_module("annotations.migrations.0017_answer_claim")

OLD_SIGNATURE = (
    "bigint, bigint, bigint, timestamptz, text, integer, integer, boolean, integer, integer, boolean, boolean, "
    "text, timestamptz, integer, integer, boolean, boolean, integer, integer, float8, float8, float8, integer, "
    "integer"
)
NEW_SIGNATURE = f"{OLD_SIGNATURE}, text, text, text, text"

PARAMETERS_END = "p_session_cap integer, p_session_break integer\n) RETURNS TABLE ("
GUARDED_PARAMETERS_END = (
    "p_session_cap integer, p_session_break integer,\n"
    "    p_sign_in_key text, p_session_data text, p_password text, p_project_version text\n"
    ") RETURNS TABLE ("
)

BLOCK_START = "    <<answer_and_claim>>\n    BEGIN\n"
GUARD = """    <<answer_and_claim>>
    BEGIN
        -- A kept sign-in (`annotations.kept_sign_ins`): the user (active), still an annotator of the project,
        -- the project's row the version its settings were read from, and the session (its data, unexpired,
        -- the user's password unchanged) or the API token (its key still the user's) as verified.
        IF p_sign_in_key IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM auth_user u
            JOIN annotations_project pp ON pp.id = p_project_id
            JOIN annotations_projectmembership mm ON mm.project_id = p_project_id AND mm.user_id = p_user_id
            WHERE u.id = p_user_id AND u.is_active AND pp.xmin = p_project_version::xid AND mm.role = 'annotator'
                AND CASE WHEN p_session_data IS NULL
                    THEN EXISTS (SELECT 1 FROM authtoken_token t WHERE t.key = p_sign_in_key AND t.user_id = p_user_id)
                    ELSE u.password = p_password AND EXISTS (
                        SELECT 1 FROM evalplatform_session s WHERE s.session_key = p_sign_in_key
                        AND s.session_data = p_session_data AND s.expire_date > p_now AND s.user_id = p_user_id)
                END
        ) THEN
            v_outcome := 'unverified';
            EXIT answer_and_claim;
        END IF;

"""


def _guarded() -> str:
    sql = _0017.ANSWER_CLAIM
    assert sql.count(PARAMETERS_END) == 1 and sql.count(BLOCK_START) == 1
    return sql.replace(PARAMETERS_END, GUARDED_PARAMETERS_END).replace(BLOCK_START, GUARD)


def create(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"DROP FUNCTION IF EXISTS annotations_answer_claim({OLD_SIGNATURE})", params=None
        )
        schema_editor.execute(_guarded(), params=None)


def drop(apps, schema_editor):  # noqa: ARG001
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"DROP FUNCTION IF EXISTS annotations_answer_claim({NEW_SIGNATURE})", params=None
        )
        schema_editor.execute(_0017.ANSWER_CLAIM, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("annotations", "0019_counts_trigger_when"),
        ("authtoken", "0004_alter_tokenproxy_options"),
        ("evalplatform", "0003_session"),
    ]

    operations = [migrations.RunPython(create, drop)]
