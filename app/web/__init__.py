"""The web app: the FastAPI factory (app.web.app), one router per resource (app.web.views), the
page/JSON twin responder, the page cache, security headers, CSRF and auth.

Sits on top: may import every other room. Only `app.cli` imports it.
"""
