"""App pages under /-/, which never collide with user data."""

from __future__ import annotations

from fastapi import APIRouter, Request
from sqlalchemy import text

from app.settings import Settings

router = APIRouter()


@router.get("/-/health")
@router.get("/-/health.json")
def health(request: Request) -> dict:
    with request.app.state.db.session() as session:
        session.execute(text("SELECT 1"))
    return {"status": "ok"}


@router.get("/-/settings.json")
def settings_json(request: Request) -> dict:
    settings: Settings = request.app.state.settings
    hidden = {"secret_key", "db_url"}
    return {
        name: {
            "value": None if name in hidden else getattr(settings, name).__str__()
            if not isinstance(getattr(settings, name), (bool, int, type(None)))
            else getattr(settings, name),
            "description": field.description,
        }
        for name, field in Settings.model_fields.items()
    }
