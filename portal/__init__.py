"""The composition layer: what puts the two apps together for one site.

`evalcore` is the framework-free computing core; `evalplatform` (outside its composition-root modules:
settings, urls, celery, wsgi, asgi) is the Django toolkit both apps use; `annotations` (judging, qrels)
knows nothing of `monitoring`, and `monitoring` (evaluations, dashboards, alerts) reads annotations'
qrels. Whatever needs both apps at once lives here: the home page, the demo data command (`load_demo`)
with its accounts, and the API's token sign-in (which reads a judge's project membership in the same
query). `tests/evalplatform/test_layers.py` holds these rules.
"""
