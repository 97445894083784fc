"""One router per resource, included in one place (app.web.app)."""
